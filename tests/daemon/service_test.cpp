// JobService without sockets: submission, the lease protocol with fencing, cancellation,
// matching rules, long-poll waiters and their deadlines, preemption and restart.
#include "daemon/jobs/job_service.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include <nlohmann/json.hpp>

#include "daemon/jobs/job_transition.h"
#include "tests/daemon/service_support.h"
#include "train/spec/job_spec.h"
#include "tests/support/poll.h"

namespace jobctl::daemon::service {
namespace {

using jobctl::daemon::testing::mlp_spec;
using jobctl::daemon::testing::ServiceFixture;
using jobs::job_fits_worker;

std::vector<std::string> event_types(jobs::JobService& svc, int64_t id) {
  auto d = svc.get_job(id);
  EXPECT_TRUE(d);
  std::vector<std::string> out;
  if (d)
    for (const auto& e : d->events) out.push_back(e.type);
  return out;
}

TEST(Submit, StoresTheCanonicalSpecAndAQueuedEvent) {
  ServiceFixture f;
  auto r = f.svc->submit_job(mlp_spec(R"(,"name":"first","priority":70)"));
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->name, "first");
  EXPECT_EQ(r->state, jobs::JobState::queued);
  EXPECT_EQ(r->priority, 70);
  auto d = f.svc->get_job(r->id);
  ASSERT_TRUE(d);
  auto spec = train::parse_job_spec(d->job.spec_json);
  ASSERT_TRUE(spec);
  EXPECT_EQ(d->job.spec_json, train::to_json(*spec));  // canonical
  ASSERT_EQ(d->events.size(), 1u);
  EXPECT_EQ(d->events[0].type, "submitted");
  EXPECT_EQ(d->events[0].to_state, jobs::JobState::queued);
  EXPECT_EQ(f.svc->queued_count(), 1u);
}

TEST(Submit, InvalidSpecsAreRefusedWithTheFieldAndChangeNothing) {
  ServiceFixture f;
  f.submit();
  const std::string before = f.dump();
  struct Case {
    std::string body, code, field;
  };
  for (const Case& c : std::vector<Case>{
           {"{not json", "malformed_json", ""},
           {mlp_spec(R"(,"train":{"epochs":-1})"), "invalid_argument", "train.epochs"},
           {mlp_spec(R"(,"train":{"epochs":"ten"})"), "invalid_argument", "train.epochs"},
           {mlp_spec(R"(,"colour":"red")"), "invalid_argument", "colour"},
           {"[1,2]", "invalid_argument", ""},
       }) {
    auto r = f.svc->submit_job(c.body);
    ASSERT_FALSE(r) << c.body;
    EXPECT_EQ(to_string(r.error().code), c.code) << c.body;
    if (!c.field.empty()) {
      EXPECT_EQ(r.error().field, c.field) << c.body;
    }
  }
  EXPECT_EQ(f.dump(), before);
}

TEST(Lease, TheFullLifecycleWritesOneEventPerStateChange) {
  ServiceFixture f;
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  auto lease = f.lease_now(w);
  ASSERT_TRUE(lease);
  ASSERT_TRUE(*lease);
  EXPECT_EQ((*lease)->job_id, job);
  EXPECT_EQ((*lease)->epoch, 1);
  EXPECT_FALSE((*lease)->spec_json.empty());

  jobs::HeartbeatReport hb{{w, 1}, R"({"step":10})"};
  auto reply = f.svc->heartbeat(job, hb);
  ASSERT_TRUE(reply) << reply.error().message;
  EXPECT_FALSE(reply->cancel);
  auto d = f.svc->get_job(job);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->job.state, jobs::JobState::running);
  EXPECT_EQ(d->job.progress_json, R"({"step":10})");

  ASSERT_TRUE(f.svc->heartbeat(job, hb));  // a second heartbeat changes no state
  auto done = f.svc->complete(job, jobs::CompletionReport{{w, 1}, R"({"test_accuracy":0.85,"final_loss":0.4})"});
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(done->state, jobs::JobState::succeeded);
  EXPECT_EQ(event_types(*f.svc, job),
            (std::vector<std::string>{"submitted", "leased", "started", "succeeded"}));
  // A retried completion under the same lease is accepted and changes nothing.
  const std::string before = f.dump();
  ASSERT_TRUE(f.svc->complete(job, jobs::CompletionReport{{w, 1}, "{}"}));
  EXPECT_EQ(f.dump(), before);
}

TEST(Lease, CompletingAPlacedJobPassesThroughRunning) {
  ServiceFixture f;
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  ASSERT_TRUE(f.lease_now(w));
  ASSERT_TRUE(f.svc->fail(job, jobs::FailureReport{{w, 1}, "exit code 3: no data"}));
  EXPECT_EQ(event_types(*f.svc, job),
            (std::vector<std::string>{"submitted", "leased", "started", "failed"}));
  auto d = f.svc->get_job(job);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->job.error, "exit code 3: no data");
}

// The lease is a checked edge of the lifecycle (scheduler/job_state.h): a job a worker holds,
// placed or running, is not leased again, and the refusal writes nothing.
TEST(Lease, LeasingAJobAWorkerHoldsIsRefusedByTheLifecycleAndWritesNothing) {
  ServiceFixture f;
  const int64_t job = f.submit();
  const int64_t w1 = f.register_worker({}, "w1");
  const int64_t w2 = f.register_worker({}, "w2");
  auto lease = f.lease_now(w1);
  ASSERT_TRUE(lease && *lease);
  auto lease_again = [&] {
    return f.db->write([&](store::WriteTxn& txn) -> Status {
      auto found = txn.job(job);
      if (!found) return found.error();
      if (!*found) return make_error(ErrorCode::not_found, "no job");
      return jobs::transition_job(txn, **found, jobs::LeaseTaken{w2, f.clock.now_ms() + 60'000}, "leased",
                                  nlohmann::json::object(), f.clock.now_ms());
    });
  };
  for (const bool running : {false, true}) {
    if (running) ASSERT_TRUE(f.svc->heartbeat(job, jobs::HeartbeatReport{{w1, 1}, std::nullopt}));
    const std::string before = f.dump();
    auto st = lease_again();
    ASSERT_FALSE(st) << (running ? "running" : "placed");
    EXPECT_EQ(st.error().code, ErrorCode::conflict);
    EXPECT_NE(st.error().message.find("cannot be leased"), std::string::npos) << st.error().message;
    EXPECT_EQ(f.dump(), before);
  }
  // The one lease the job had is its `leased` event, placed under worker 1 and epoch 1.
  auto d = f.svc->get_job(job);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->job.worker_id, w1);
  EXPECT_EQ(d->job.lease_epoch, 1);
  EXPECT_EQ(event_types(*f.svc, job), (std::vector<std::string>{"submitted", "leased", "started"}));
}

// Refuses the first lease it is told of, as billing that cannot record it would.
class RefusesTheFirstLease final : public jobs::LeaseRecorder {
 public:
  Status lease_granted(store::WriteTxn&, const store::JobRow&, const store::WorkerRow&, const std::vector<int>&,
                       int64_t) override {
    if (refused_.exchange(true)) return {};
    return make_error(ErrorCode::io, "the lease cannot be billed now");
  }
  Status lease_ended(store::WriteTxn&, const store::JobRow&, int64_t) override { return {}; }
  Status node_ended(store::WriteTxn&, const store::JobRow&, int64_t, int64_t) override { return {}; }

 private:
  std::atomic<bool> refused_{false};
};

// A lease whose change fails leaves the job as it was and back in the queue for the next lease:
// the broker puts back the entry it reserved (its completion runs on the store's writer thread,
// which must not read the store).
TEST(Lease, AFailedLeaseChangeLeavesTheJobQueuedForTheNextLease) {
  ServiceFixture f;
  RefusesTheFirstLease recorder;
  f.svc->shutdown();
  f.svc = std::make_unique<jobs::JobService>(*f.db, f.clock, std::make_unique<jobs::FifoMatcher>(),
                                             jobs::ServiceOptions{},
                                             jobs::ServiceDependencies{.log = nullptr, .lease_recorder = &recorder});
  ASSERT_TRUE(f.svc->start());
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  auto refused = f.lease_now(w);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::io);
  EXPECT_EQ(f.svc->queued_count(), 1u);
  auto d = f.svc->get_job(job);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->job.state, jobs::JobState::queued);
  EXPECT_EQ(d->job.lease_epoch, 0);
  EXPECT_EQ(event_types(*f.svc, job), (std::vector<std::string>{"submitted"}));
  auto granted = f.lease_now(w);
  ASSERT_TRUE(granted) << granted.error().message;
  ASSERT_TRUE(*granted);
  EXPECT_EQ((*granted)->job_id, job);
  EXPECT_EQ((*granted)->epoch, 1);
  EXPECT_EQ(f.svc->queued_count(), 0u);
}

TEST(Fencing, StaleOrForeignReportsAreRefusedAndChangeNothing) {
  ServiceFixture f;
  const int64_t job = f.submit();
  const int64_t w1 = f.register_worker();
  const int64_t w2 = f.register_worker();
  ASSERT_TRUE(f.lease_now(w1));
  ASSERT_TRUE(f.svc->heartbeat(job, jobs::HeartbeatReport{{w1, 1}, std::nullopt}));
  const std::string before = f.dump();
  for (jobs::LeaseRef bad : {jobs::LeaseRef{w1, 2}, jobs::LeaseRef{w1, 0}, jobs::LeaseRef{w2, 1}, jobs::LeaseRef{w1 + 99, 1}}) {
    auto hb = f.svc->heartbeat(job, jobs::HeartbeatReport{bad, R"({"step":99})"});
    ASSERT_FALSE(hb);
    EXPECT_EQ(hb.error().code, ErrorCode::stale_epoch);
    EXPECT_EQ(hb.error().field, "epoch");
    auto c = f.svc->complete(job, jobs::CompletionReport{bad, "{}"});
    ASSERT_FALSE(c);
    EXPECT_EQ(c.error().code, ErrorCode::stale_epoch);
    auto fl = f.svc->fail(job, jobs::FailureReport{bad, "x"});
    ASSERT_FALSE(fl);
    auto p = f.svc->preempt(job, jobs::PreemptionReport{bad, "x"});
    ASSERT_FALSE(p);
  }
  EXPECT_EQ(f.dump(), before);
  auto missing = f.svc->heartbeat(job + 1000, jobs::HeartbeatReport{{w1, 1}, std::nullopt});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::not_found);
}

TEST(Fencing, AnOldLeaseHolderIsRefusedAfterTheJobIsLeasedAgain) {
  ServiceFixture f;
  const int64_t job = f.submit();
  const int64_t w1 = f.register_worker();
  const int64_t w2 = f.register_worker();
  ASSERT_TRUE(f.lease_now(w1));
  ASSERT_TRUE(f.svc->preempt(job, jobs::PreemptionReport{{w1, 1}, "spot reclaim"}));
  auto second = f.lease_now(w2);
  ASSERT_TRUE(second && *second);
  EXPECT_EQ((*second)->epoch, 2);
  auto old = f.svc->complete(job, jobs::CompletionReport{{w1, 1}, "{}"});
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().code, ErrorCode::stale_epoch);
  ASSERT_TRUE(f.svc->complete(job, jobs::CompletionReport{{w2, 2}, R"({"final_loss":1})"}));
  auto d = f.svc->get_job(job);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->job.recoveries, 1);
  EXPECT_EQ(event_types(*f.svc, job),
            (std::vector<std::string>{"submitted", "leased", "preempted", "requeued", "leased",
                                      "started", "succeeded"}));
}

TEST(Fencing, APreemptedJobOfTheSameWorkerIsNotReportableUnderTheOldLease) {
  ServiceFixture f;
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  ASSERT_TRUE(f.lease_now(w));
  ASSERT_TRUE(f.svc->preempt(job, jobs::PreemptionReport{{w, 1}, "shutting down"}));
  auto hb = f.svc->heartbeat(job, jobs::HeartbeatReport{{w, 1}, std::nullopt});
  ASSERT_FALSE(hb);
  EXPECT_EQ(hb.error().code, ErrorCode::stale_epoch);
}

TEST(Preempt, TooManyRecoveriesFailTheJob) {
  jobs::ServiceOptions o;
  o.max_recoveries = 1;
  ServiceFixture f(o);
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  ASSERT_TRUE(f.lease_now(w));
  ASSERT_TRUE(f.svc->preempt(job, jobs::PreemptionReport{{w, 1}, "r1"}));
  ASSERT_TRUE(f.lease_now(w));
  auto r = f.svc->preempt(job, jobs::PreemptionReport{{w, 2}, "r2"});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->state, jobs::JobState::failed);
  EXPECT_EQ(r->recoveries, 2);
  ASSERT_TRUE(r->error);
  EXPECT_NE(r->error->find("r2"), std::string::npos);
  EXPECT_EQ(f.svc->queued_count(), 0u);
}

TEST(Move, TheHeartbeatAsksTheGiveBackIsNoRecoveryAndTheTargetHoldsUntilTheNextLease) {
  ServiceFixture f;
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  // Only a job a worker holds can move.
  auto queued = f.svc->request_move(job, jobs::MoveRequest{jobs::MoveTarget::local, "x"});
  ASSERT_FALSE(queued);
  EXPECT_EQ(queued.error().code, ErrorCode::conflict);
  ASSERT_TRUE(f.lease_now(w));
  auto hb = f.svc->heartbeat(job, jobs::HeartbeatReport{{w, 1}, std::nullopt});
  ASSERT_TRUE(hb);
  EXPECT_FALSE(hb->move);
  ASSERT_TRUE(f.svc->request_move(job, jobs::MoveRequest{jobs::MoveTarget::local, "owned GPU free"}));
  EXPECT_EQ(f.svc->move_target(job), jobs::MoveTarget::anywhere) << "the target applies once the job is back";
  hb = f.svc->heartbeat(job, jobs::HeartbeatReport{{w, 1}, std::nullopt});
  ASSERT_TRUE(hb);
  EXPECT_TRUE(hb->move);
  auto back = f.svc->preempt(job, jobs::PreemptionReport{{w, 1}, "moved by jobctld"});
  ASSERT_TRUE(back);
  EXPECT_EQ(back->state, jobs::JobState::queued);
  EXPECT_EQ(back->recoveries, 0);
  EXPECT_EQ(f.svc->move_target(job), jobs::MoveTarget::local);
  auto again = f.lease_now(w);
  ASSERT_TRUE(again && *again);
  EXPECT_EQ(f.svc->move_target(job), jobs::MoveTarget::anywhere);
  hb = f.svc->heartbeat(job, jobs::HeartbeatReport{{w, 2}, std::nullopt});
  ASSERT_TRUE(hb);
  EXPECT_FALSE(hb->move) << "the move was done";
  EXPECT_EQ(event_types(*f.svc, job),
            (std::vector<std::string>{"submitted", "leased", "started", "move_requested", "moved", "requeued",
                                      "leased", "started"}));
  // A preemption without a move request is a recovery as before.
  ASSERT_TRUE(f.svc->preempt(job, jobs::PreemptionReport{{w, 2}, "spot reclaim"}));
  auto d = f.svc->get_job(job);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->job.recoveries, 1);
}

TEST(Move, AnExpiredLeaseForgetsThePendingMove) {
  jobs::ServiceOptions o;
  o.lease_timeout_s = 5;
  ServiceFixture f(o);
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  ASSERT_TRUE(f.lease_now(w));
  ASSERT_TRUE(f.svc->request_move(job, jobs::MoveRequest{jobs::MoveTarget::spot, ""}));
  f.clock.advance_ms(6000);
  auto expired = f.svc->expire_leases();
  ASSERT_TRUE(expired);
  EXPECT_EQ(*expired, 1);
  const int64_t w2 = f.register_worker();
  ASSERT_TRUE(f.lease_now(w2));
  auto hb = f.svc->heartbeat(job, jobs::HeartbeatReport{{w2, 2}, std::nullopt});
  ASSERT_TRUE(hb);
  EXPECT_FALSE(hb->move) << "the new lease was never asked to move";
  EXPECT_EQ(f.svc->move_target(job), jobs::MoveTarget::anywhere);
}

TEST(Cancel, QueuedRunningAndFinishedJobs) {
  ServiceFixture f;
  const int64_t queued = f.submit();
  const int64_t running = f.submit();
  const int64_t w = f.register_worker();
  // Cancel the queued one first; the lease then gets the other.
  auto c1 = f.svc->cancel_job(queued);
  ASSERT_TRUE(c1);
  EXPECT_EQ(c1->state, jobs::JobState::cancelled);
  EXPECT_EQ(f.svc->queued_count(), 1u);
  auto lease = f.lease_now(w);
  ASSERT_TRUE(lease && *lease);
  EXPECT_EQ((*lease)->job_id, running);
  ASSERT_TRUE(f.svc->heartbeat(running, jobs::HeartbeatReport{{w, 1}, std::nullopt}));
  ASSERT_TRUE(f.svc->cancel_job(running));
  auto hb = f.svc->heartbeat(running, jobs::HeartbeatReport{{w, 1}, std::nullopt});
  ASSERT_TRUE(hb);
  EXPECT_TRUE(hb->cancel);  // the worker learns to stop
  // Completing after the cancel is refused: the job stays cancelled.
  auto late = f.svc->complete(running, jobs::CompletionReport{{w, 1}, "{}"});
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, ErrorCode::stale_epoch);
  // Cancelling again is a no-op; cancelling a finished job is a conflict; unknown is not found.
  const std::string before = f.dump();
  ASSERT_TRUE(f.svc->cancel_job(running));
  EXPECT_EQ(f.dump(), before);
  const int64_t done = f.submit();
  auto l2 = f.lease_now(w);
  ASSERT_TRUE(l2 && *l2);
  ASSERT_TRUE(f.svc->complete(done, jobs::CompletionReport{{w, (*l2)->epoch}, "{}"}));
  auto c3 = f.svc->cancel_job(done);
  ASSERT_FALSE(c3);
  EXPECT_EQ(c3.error().code, ErrorCode::conflict);
  auto c4 = f.svc->cancel_job(424242);
  ASSERT_FALSE(c4);
  EXPECT_EQ(c4.error().code, ErrorCode::not_found);
}

TEST(Matching, ResourcesDecideWhichWorkerGetsAJob) {
  ServiceFixture f;
  const int64_t cpu_job = f.submit(mlp_spec(R"(,"resources":{"gpu":"cpu"})"));
  const int64_t a100_job = f.submit(mlp_spec(R"(,"resources":{"gpu":"A100","gpus":2})"));
  const int64_t h100_job = f.submit(mlp_spec(R"(,"resources":{"gpu":"H100"})"));
  const int64_t gpu_worker = f.register_worker({{"NVIDIA H100 80GB HBM3", 81559}});
  const int64_t one_a100 = f.register_worker({{"NVIDIA A100-SXM4-80GB", 81920}});
  const int64_t cpu_worker = f.register_worker();
  // The H100 worker cannot take the CPU-only job nor the A100 one: it gets the H100 job.
  auto l1 = f.lease_now(gpu_worker);
  ASSERT_TRUE(l1 && *l1);
  EXPECT_EQ((*l1)->job_id, h100_job);
  // One A100 is not enough for gpus=2.
  auto l2 = f.lease_now(one_a100);
  ASSERT_TRUE(l2);
  EXPECT_FALSE(*l2);
  auto l3 = f.lease_now(cpu_worker);
  ASSERT_TRUE(l3 && *l3);
  EXPECT_EQ((*l3)->job_id, cpu_job);
  const int64_t two_a100 = f.register_worker({{"NVIDIA A100-SXM4-80GB", 81920}, {"NVIDIA A100-SXM4-80GB", 81920}});
  auto l4 = f.lease_now(two_a100);
  ASSERT_TRUE(l4 && *l4);
  EXPECT_EQ((*l4)->job_id, a100_job);
}

TEST(Matching, AnyGpuJobsGoToCpuWorkersToo) {
  jobs::WorkerCapabilities cpu;
  jobs::WorkerCapabilities gpu;
  gpu.gpus.push_back({"Tesla T4", 15360});
  EXPECT_TRUE(job_fits_worker("any", 1, cpu));
  EXPECT_TRUE(job_fits_worker("any", 4, gpu));
  EXPECT_TRUE(job_fits_worker("cpu", 1, cpu));
  EXPECT_FALSE(job_fits_worker("cpu", 1, gpu));
  EXPECT_TRUE(job_fits_worker("t4", 1, gpu));
  EXPECT_FALSE(job_fits_worker("T4", 2, gpu));
  EXPECT_FALSE(job_fits_worker("T4", 1, cpu));
}

// What nvidia-smi prints against what people ask for: "H100" took no "NVIDIA H100 80GB HBM3", "A100"
// no "NVIDIA A100-SXM4-80GB", "4090" no "NVIDIA GeForce RTX 4090" (a substring test on the
// driver's name); now both sides are read as GPU names.
TEST(Matching, DriverNamesAgainstRequestedNames) {
  auto worker = [](std::vector<std::pair<const char*, int64_t>> gpus) {
    jobs::WorkerCapabilities w;
    for (auto [model, mb] : gpus) w.gpus.push_back({model, mb});
    return w;
  };
  const auto h100 = worker({{"NVIDIA H100 80GB HBM3", 81559}});
  const auto a100_80 = worker({{"NVIDIA A100-SXM4-80GB", 81920}});
  const auto a100_40 = worker({{"NVIDIA A100-PCIE-40GB", 40960}});
  const auto rtx = worker({{"NVIDIA GeForce RTX 4090", 24564}, {"NVIDIA GeForce RTX 4090", 24564}});
  const auto v100 = worker({{"Tesla V100-SXM2-16GB", 16160}, {"Tesla V100-SXM2-16GB", 16160}});
  for (const char* name : {"H100", "h100", "H100-SXM", "NVIDIA H100 80GB HBM3"}) EXPECT_TRUE(job_fits_worker(name, 1, h100)) << name;
  EXPECT_FALSE(job_fits_worker("H100-PCIe", 1, h100));
  for (const char* name : {"A100", "A100-80GB", "a100 80gb", "A100-80GB-SXM"}) EXPECT_TRUE(job_fits_worker(name, 1, a100_80)) << name;
  EXPECT_FALSE(job_fits_worker("A100-80GB", 1, a100_40));  // only the 80 GB ones
  EXPECT_TRUE(job_fits_worker("A100", 1, a100_40));
  for (const char* name : {"4090", "RTX4090", "RTX 4090", "GeForce RTX 4090"}) EXPECT_TRUE(job_fits_worker(name, 2, rtx)) << name;
  EXPECT_FALSE(job_fits_worker("RTX4090", 3, rtx));
  EXPECT_TRUE(job_fits_worker("V100", 2, v100));
  EXPECT_FALSE(job_fits_worker("V100-32GB", 1, v100));
  EXPECT_FALSE(job_fits_worker("A10", 1, worker({{"NVIDIA A10G", 23028}})));  // an A10G is not an A10
  EXPECT_FALSE(job_fits_worker("L4", 1, worker({{"NVIDIA L40S", 46068}})));
  EXPECT_FALSE(job_fits_worker("no such gpu", 1, h100));
}

// A 4-GPU worker says which GPUs are free when it asks; a job takes the ones it needs and the
// lease (and its event, what the ledger bills) names them: up to four 1-GPU jobs at once.
TEST(Matching, AFourGpuWorkerRunsOneJobPerFreeGpu) {
  ServiceFixture f;
  const std::vector<jobs::GpuDevice> v100s(4, {"Tesla V100-SXM2-16GB", 16160});
  const int64_t w = f.register_worker(v100s);
  const int64_t two = f.submit(mlp_spec(R"(,"resources":{"gpu":"V100","gpus":2},"priority":90)"));
  std::vector<int64_t> ones;
  for (int i = 0; i < 3; ++i) ones.push_back(f.submit(mlp_spec(R"(,"resources":{"gpu":"V100"})")));
  auto lease = [&](std::vector<int> free) {
    std::promise<Expected<std::optional<jobs::LeaseGrant>>> p;
    f.svc->lease(w, 0, [&p](auto r) { p.set_value(std::move(r)); }, std::move(free));
    return p.get_future().get();
  };
  auto a = lease({0, 1, 2, 3});  // the 2-GPU job first (priority)
  ASSERT_TRUE(a && *a);
  EXPECT_EQ((*a)->job_id, two);
  EXPECT_EQ((*a)->gpus, (std::vector<int>{0, 1}));
  auto b = lease({2, 3});
  ASSERT_TRUE(b && *b);
  EXPECT_EQ((*b)->gpus, (std::vector<int>{2}));
  auto c = lease({3});
  ASSERT_TRUE(c && *c);
  EXPECT_EQ((*c)->gpus, (std::vector<int>{3}));
  auto none = lease({});  // nothing free: nothing offered, though a job waits
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  auto bad = lease({7});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "free_gpus");
  auto d = lease({1});  // a GPU freed: the last 1-GPU job
  ASSERT_TRUE(d && *d);
  EXPECT_EQ((*d)->job_id, ones[2]);
  // The lease event says which GPUs.
  auto detail = f.svc->get_job(two);
  ASSERT_TRUE(detail);
  bool named = false;
  for (const auto& e : detail->events)
    if (e.type == "leased") named = e.detail_json.find("\"gpus\":[0,1]") != std::string::npos;
  EXPECT_TRUE(named);
  // A 2-GPU job does not fit one free GPU.
  const int64_t another_two = f.submit(mlp_spec(R"(,"resources":{"gpu":"V100","gpus":2})"));
  auto e = lease({0});
  ASSERT_TRUE(e);
  EXPECT_FALSE(*e) << another_two;
}

TEST(Matching, HigherPriorityFirstThenOldest) {
  ServiceFixture f;
  const int64_t low = f.submit(mlp_spec(R"(,"priority":10)"));
  f.clock.advance_ms(10);
  const int64_t high_old = f.submit(mlp_spec(R"(,"priority":90)"));
  f.clock.advance_ms(10);
  const int64_t high_new = f.submit(mlp_spec(R"(,"priority":90)"));
  const int64_t w = f.register_worker();
  std::vector<int64_t> order;
  for (int i = 0; i < 3; ++i) {
    auto l = f.lease_now(w);
    ASSERT_TRUE(l && *l);
    order.push_back((*l)->job_id);
  }
  EXPECT_EQ(order, (std::vector<int64_t>{high_old, high_new, low}));
}

TEST(LongPoll, AWaitingWorkerIsWokenBySubmission) {
  ServiceFixture f;
  const int64_t w = f.register_worker();
  std::promise<Expected<std::optional<jobs::LeaseGrant>>> p;
  auto fut = p.get_future();
  f.svc->lease(w, 30000, [&p](Expected<std::optional<jobs::LeaseGrant>> r) { p.set_value(std::move(r)); });
  EXPECT_EQ(fut.wait_for(std::chrono::milliseconds(50)), std::future_status::timeout);
  EXPECT_EQ(f.svc->waiting_workers(), 1u);
  const int64_t job = f.submit();
  ASSERT_EQ(fut.wait_for(std::chrono::seconds(10)), std::future_status::ready);
  auto r = fut.get();
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->job_id, job);
  EXPECT_EQ(f.svc->waiting_workers(), 0u);
}

TEST(LongPoll, ANonFittingSubmissionLeavesTheWorkerWaiting) {
  ServiceFixture f;
  const int64_t w = f.register_worker();  // CPU only
  std::atomic<int> calls{0};
  f.svc->lease(w, 30000, [&](Expected<std::optional<jobs::LeaseGrant>>) { calls++; });
  f.submit(mlp_spec(R"(,"resources":{"gpu":"A100"})"));
  f.db->close();  // drain the writer: any lease it would start has finished
  EXPECT_EQ(calls.load(), 0);
  EXPECT_EQ(f.svc->waiting_workers(), 1u);
  EXPECT_EQ(f.svc->queued_count(), 1u);
  f.svc->shutdown();  // answers the waiter while `calls` still exists
  EXPECT_EQ(calls.load(), 1);
}

TEST(LongPoll, TickEndsWaitsPastTheirDeadline) {
  ServiceFixture f;
  const int64_t w = f.register_worker();
  std::atomic<int> none{0};
  f.svc->lease(w, 5000, [&](Expected<std::optional<jobs::LeaseGrant>> r) {
    if (r && !*r) none++;
  });
  f.clock.advance_ms(4999);
  f.svc->tick();
  EXPECT_EQ(none.load(), 0);
  f.clock.advance_ms(1);
  f.svc->tick();
  EXPECT_EQ(none.load(), 1);
  EXPECT_EQ(f.svc->waiting_workers(), 0u);
}

TEST(LongPoll, ANewPollReplacesTheOldOneAndShutdownAnswersAll) {
  ServiceFixture f;
  const int64_t w1 = f.register_worker();
  const int64_t w2 = f.register_worker();
  std::atomic<int> none{0};
  auto count_none = [&](Expected<std::optional<jobs::LeaseGrant>> r) {
    if (r && !*r) none++;
  };
  f.svc->lease(w1, 30000, count_none);
  f.svc->lease(w1, 30000, count_none);  // replaces the first, which is answered
  EXPECT_EQ(none.load(), 1);
  f.svc->lease(w2, 30000, count_none);
  EXPECT_EQ(f.svc->waiting_workers(), 2u);
  f.svc->shutdown();
  EXPECT_EQ(none.load(), 3);
  f.svc->lease(w2, 30000, count_none);  // after shutdown: answered at once
  EXPECT_EQ(none.load(), 4);
}

TEST(LongPoll, UnknownWorkersAreNotFound) {
  ServiceFixture f;
  auto r = f.lease_now(999);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::not_found);
}

TEST(LongPoll, ManyWorkersRaceForFewJobsAndEachJobIsLeasedOnce) {
  ServiceFixture f;
  constexpr int kWorkers = 16, kJobs = 5;
  std::vector<int64_t> workers;
  for (int i = 0; i < kWorkers; ++i) workers.push_back(f.register_worker());
  std::mutex mu;
  std::vector<int64_t> leased;
  std::atomic<int> answered{0};
  for (int64_t w : workers)
    f.svc->lease(w, 60000, [&](Expected<std::optional<jobs::LeaseGrant>> r) {
      if (r && *r) {
        std::lock_guard<std::mutex> lock(mu);
        leased.push_back((*r)->job_id);
      }
      answered++;
    });
  std::vector<std::thread> submitters;
  for (int i = 0; i < kJobs; ++i) submitters.emplace_back([&] { f.submit(); });
  for (auto& t : submitters) t.join();
  jobctl::testing::poll_until([&] { return answered.load() >= kJobs; });
  f.db->close();
  std::unique_lock<std::mutex> lock(mu);
  std::sort(leased.begin(), leased.end());
  EXPECT_EQ(leased.size(), static_cast<size_t>(kJobs));
  EXPECT_EQ(std::unique(leased.begin(), leased.end()), leased.end());
  EXPECT_EQ(f.svc->waiting_workers(), static_cast<size_t>(kWorkers - kJobs));
  lock.unlock();
  f.svc->shutdown();  // answers the rest while the captured locals still exist
}

TEST(List, PagesFollowTheNextCursorToTheEnd) {
  ServiceFixture f;
  for (int i = 0; i < 7; ++i) f.submit();
  jobs::JobListRequest req;
  req.limit = 3;
  std::vector<int64_t> ids;
  for (int page = 0; page < 10; ++page) {
    auto p = f.svc->list_jobs(req);
    ASSERT_TRUE(p);
    for (const auto& j : p->jobs) ids.push_back(j.id);
    if (!p->next_after) break;
    req.after_id = *p->next_after;
  }
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 2, 3, 4, 5, 6, 7}));
  req = {};
  req.limit = 7;
  auto exact = f.svc->list_jobs(req);
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->jobs.size(), 7u);
  EXPECT_FALSE(exact->next_after);  // exactly one page: no cursor
}

TEST(Restart, TheQueueAndWorkersComeBackFromTheStore) {
  jobctl::testing::TempDir dir;
  ManualClock clock;
  store::StoreOptions o;
  o.path = dir.file("jobctl.db");
  int64_t worker = 0, job = 0;
  {
    auto db = store::Store::open(o, clock);
    ASSERT_TRUE(db);
    jobs::JobService svc(**db, clock, std::make_unique<jobs::FifoMatcher>());
    ASSERT_TRUE(svc.start());
    job = svc.submit_job(mlp_spec())->id;
    jobs::WorkerRegistration reg;
    reg.name = "survivor";
    worker = svc.register_worker(reg)->worker_id;
  }
  auto db = store::Store::open(o, clock);
  ASSERT_TRUE(db);
  jobs::JobService svc(**db, clock, std::make_unique<jobs::FifoMatcher>());
  ASSERT_TRUE(svc.start());
  EXPECT_EQ(svc.queued_count(), 1u);
  std::promise<Expected<std::optional<jobs::LeaseGrant>>> p;
  svc.lease(worker, 0, [&p](Expected<std::optional<jobs::LeaseGrant>> r) { p.set_value(std::move(r)); });
  auto r = p.get_future().get();
  ASSERT_TRUE(r && *r);
  EXPECT_EQ((*r)->job_id, job);
}

TEST(Workers, ListShowsCapabilitiesAndHeldJobs) {
  ServiceFixture f;
  const int64_t job = f.submit();
  const int64_t w = f.register_worker({{"Tesla T4", 15360}}, "gpu-box");
  ASSERT_TRUE(f.lease_now(w));
  auto ws = f.svc->list_workers();
  ASSERT_TRUE(ws);
  ASSERT_EQ(ws->size(), 1u);
  EXPECT_EQ((*ws)[0].row.name, "gpu-box");
  ASSERT_EQ((*ws)[0].capabilities.gpus.size(), 1u);
  EXPECT_EQ((*ws)[0].capabilities.gpus[0].model, "Tesla T4");
  EXPECT_EQ((*ws)[0].job_ids, (std::vector<int64_t>{job}));
}

}  // namespace
}  // namespace jobctl::daemon::service
