// Gangs (a job on several machines, resources.nodes > 1) through the job service with its real
// store: all nodes leased in one change or none, the rendezvous each node is told, the bounded
// hold of idle workers, no deadlock between gangs, and the gang stopping as one when a node fails
// or goes silent.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include "daemon/jobs/job_service.h"
#include "tests/daemon/service_support.h"

namespace jobctl::daemon {
namespace {

using jobs::LeaseGrant;
using testing::ServiceFixture;
using namespace std::chrono_literals;

std::string gang_spec(int nodes, int priority = 50) {
  return R"({"command":["python3","train_ddp.py"],"resources":{"gpu":"cpu","nodes":)" + std::to_string(nodes) +
         R"(},"priority":)" + std::to_string(priority) + "}";
}

// A gang that replaces a lost node rather than restart (resources.on_node_loss).
const std::string kReplacingSpec =
    R"({"command":["torchrun","train.py"],"resources":{"gpu":"cpu","nodes":2,"on_node_loss":"replace_node"}})";

const std::string kSingleSpec = R"({"command":["true"],"resources":{"gpu":"cpu"}})";

// A lease long-poll whose answer is awaited later.
struct PendingLease {
  std::shared_ptr<std::promise<Expected<std::optional<LeaseGrant>>>> promise =
      std::make_shared<std::promise<Expected<std::optional<LeaseGrant>>>>();
  std::future<Expected<std::optional<LeaseGrant>>> future = promise->get_future();

  bool answered(std::chrono::milliseconds within = 0ms) { return future.wait_for(within) == std::future_status::ready; }
  std::optional<LeaseGrant> grant() {
    auto r = future.get();
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : std::nullopt;
  }
};

struct GangFixture : ServiceFixture {
  explicit GangFixture(jobs::ServiceOptions options = gang_options()) : ServiceFixture(options) {}

  static jobs::ServiceOptions gang_options() {
    jobs::ServiceOptions o;
    o.lease_timeout_s = 10;
    o.gang_assembly_s = 30;
    return o;
  }

  // A CPU worker that runs command jobs, at `address` (empty: it said none).
  int64_t worker(const std::string& address, const std::string& name = "node") {
    jobs::WorkerRegistration reg;
    reg.name = name;
    reg.capabilities.cpu_cores = 4;
    reg.capabilities.commands = true;
    reg.capabilities.address = address;
    auto r = svc->register_worker(reg);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r->worker_id : 0;
  }

  PendingLease ask(int64_t worker, int port = 0, int64_t wait_ms = 60'000) {
    PendingLease p;
    svc->lease(worker, wait_ms, [promise = p.promise](Expected<std::optional<LeaseGrant>> r) {
      promise->set_value(std::move(r));
    }, std::nullopt, port);
    return p;
  }

  int64_t submit_spec(const std::string& spec) {
    auto r = svc->submit_job(spec);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r->id : 0;
  }

  // Workers a (10.0.0.1, with a port) and b, a 2-node gang, both asking: leased_a and leased_b
  // are their grants (rank 0 and 1).
  std::tuple<int64_t, int64_t, int64_t> two_workers_and_a_gang(const std::string& spec = gang_spec(2)) {
    const int64_t a = worker("10.0.0.1", "a"), b = worker("10.0.0.2", "b");
    const int64_t id = submit_spec(spec);
    PendingLease pa = ask(a, 41000), pb = ask(b);
    const bool leased = pa.answered(5s) && pb.answered(5s);
    EXPECT_TRUE(leased) << "the gang was not leased";
    if (leased) {
      leased_a = pa.grant();
      leased_b = pb.grant();
    }
    return {a, b, id};
  }
  std::optional<LeaseGrant> leased_a, leased_b;

  jobs::JobRow job(int64_t id) {
    auto d = svc->get_job(id);
    EXPECT_TRUE(d) << (d ? "" : d.error().message);
    return d ? d->job : jobs::JobRow{};
  }
};

TEST(GangLease, AllNodesAreLeasedInOneChangeOrNone) {
  GangFixture f;
  const int64_t a = f.worker("10.0.0.1", "a");
  const int64_t b = f.worker("10.0.0.2", "b");
  const int64_t id = f.submit_spec(gang_spec(2));
  const std::string before = f.dump();

  PendingLease first = f.ask(a, 41000);
  EXPECT_FALSE(first.answered(200ms)) << "one node of two must not be leased alone";
  EXPECT_EQ(f.job(id).state, store::JobState::queued);
  EXPECT_EQ(f.dump(), before) << "a partial gang wrote nothing";

  PendingLease second = f.ask(b);  // brings no port: rank 0 is the worker that did
  ASSERT_TRUE(second.answered(5s));
  ASSERT_TRUE(first.answered(5s));
  auto ga = first.grant();
  auto gb = second.grant();
  ASSERT_TRUE(ga && gb);
  ASSERT_TRUE(ga->gang && gb->gang);
  EXPECT_EQ(ga->job_id, id);
  EXPECT_EQ(gb->job_id, id);
  EXPECT_EQ(ga->epoch, gb->epoch);
  EXPECT_EQ(ga->gang->rank, 0);
  EXPECT_EQ(gb->gang->rank, 1);
  for (const auto& g : {*ga->gang, *gb->gang}) {
    EXPECT_EQ(g.nodes, 2);
    EXPECT_EQ(g.addrs, (std::vector<std::string>{"10.0.0.1", "10.0.0.2"}));
    EXPECT_EQ(g.master_addr, "10.0.0.1");
    EXPECT_EQ(g.master_port, 41000);
    EXPECT_EQ(g.gpus_per_node, 0);
  }

  auto detail = f.svc->get_job(id);
  ASSERT_TRUE(detail);
  EXPECT_EQ(detail->job.state, store::JobState::placed);
  EXPECT_EQ(detail->job.worker_id, a);
  ASSERT_EQ(detail->nodes.size(), 2u);
  EXPECT_EQ(detail->nodes[1].worker_id, b);
  int leased_events = 0;
  for (const auto& ev : detail->events)
    if (ev.type == "leased") {
      ++leased_events;
      EXPECT_NE(ev.detail_json.find("\"nodes\""), std::string::npos) << ev.detail_json;
    }
  EXPECT_EQ(leased_events, 1);

  // Every node's worker lists the job it holds (the launchers read the same leases).
  auto workers = f.svc->list_workers();
  ASSERT_TRUE(workers);
  for (const auto& w : *workers)
    EXPECT_EQ(w.job_ids, std::vector<int64_t>{id}) << "worker " << w.row.id;
}

TEST(GangLease, AWorkerThatSaidNoAddressIsNeverANode) {
  GangFixture f;
  const int64_t a = f.worker("10.0.0.1", "a");
  const int64_t silent = f.worker("", "no-address");
  const int64_t id = f.submit_spec(gang_spec(2));
  PendingLease first = f.ask(a, 41000);
  auto none = f.lease_now(silent);
  ASSERT_TRUE(none);
  EXPECT_FALSE(*none);
  EXPECT_FALSE(first.answered(200ms));
  EXPECT_EQ(f.job(id).state, store::JobState::queued);
  f.svc->shutdown();
}

TEST(GangLease, TwoGangsThatEachNeedMostOfTheFleetRunOneAfterTheOther) {
  GangFixture f;
  const int64_t w1 = f.worker("10.0.0.1"), w2 = f.worker("10.0.0.2"), w3 = f.worker("10.0.0.3");
  const int64_t g1 = f.submit_spec(gang_spec(2));
  const int64_t g2 = f.submit_spec(gang_spec(2));
  PendingLease p1 = f.ask(w1, 41001), p2 = f.ask(w2, 41002), p3 = f.ask(w3, 41003);
  // The first gang in queue order takes two workers; the third waits for the second gang.
  ASSERT_TRUE(p1.answered(5s));
  ASSERT_TRUE(p2.answered(5s));
  EXPECT_FALSE(p3.answered(200ms));
  auto l1 = p1.grant(), l2 = p2.grant();
  ASSERT_TRUE(l1 && l2);
  EXPECT_EQ(l1->job_id, g1);
  EXPECT_EQ(l2->job_id, g1);
  const int64_t rank0_worker = l1->gang->rank == 0 ? w1 : w2;
  const int64_t rank1_worker = l1->gang->rank == 0 ? w2 : w1;
  // The other node ends first (noted), then rank 0 (the job's outcome).
  ASSERT_TRUE(f.svc->complete(g1, {{rank1_worker, l1->epoch}, "{}"}));
  auto done = f.svc->complete(g1, {{rank0_worker, l1->epoch}, R"({"ok":true})"});
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(done->state, store::JobState::succeeded);
  // Free again: the first of them to ask joins the waiting worker in the second gang.
  PendingLease again = f.ask(w1);
  ASSERT_TRUE(again.answered(5s));
  ASSERT_TRUE(p3.answered(5s));
  auto l3 = p3.grant(), l4 = again.grant();
  ASSERT_TRUE(l3 && l4);
  EXPECT_EQ(l3->job_id, g2);
  EXPECT_EQ(l4->job_id, g2);
  EXPECT_EQ(l3->gang->rank, 0) << "rank 0 is a node that brought a port";
}

TEST(GangLease, AWideGangIsNotStarvedBySingleNodeJobsAndHoldsIdleWorkersOnlySoLong) {
  GangFixture f;
  const int64_t w1 = f.worker("10.0.0.1"), w2 = f.worker("10.0.0.2");
  const int64_t gang = f.submit_spec(gang_spec(2, 80));
  for (int i = 0; i < 3; ++i) f.submit_spec(kSingleSpec);
  // The gang is first in line: the first idle worker waits for it rather than take a small job.
  PendingLease p1 = f.ask(w1, 41001);
  EXPECT_FALSE(p1.answered(200ms));
  PendingLease p2 = f.ask(w2);
  ASSERT_TRUE(p1.answered(5s));
  ASSERT_TRUE(p2.answered(5s));
  EXPECT_EQ(p1.grant()->job_id, gang);
  EXPECT_EQ(p2.grant()->job_id, gang);

  // A second gang that can never gather its three nodes here: an idle worker is kept for it for
  // gang_assembly_s, then takes the small jobs.
  GangFixture g;
  const int64_t only = g.worker("10.0.0.9");
  const int64_t wide = g.submit_spec(gang_spec(3, 80));
  const int64_t small = g.submit_spec(kSingleSpec);
  auto held = g.lease_now(only);
  ASSERT_TRUE(held);
  EXPECT_FALSE(*held) << "held for the gang first in line";
  g.clock.advance_ms(30'000);
  auto after = g.lease_now(only);
  ASSERT_TRUE(after);
  ASSERT_TRUE(*after) << "past gang_assembly_s the worker takes other work";
  EXPECT_EQ((*after)->job_id, small);
  EXPECT_EQ(g.job(wide).state, store::JobState::queued);
}

TEST(GangLease, ANodeThatFailsRestartsTheWholeGangWithOneRecovery) {
  GangFixture f;
  const auto [a, b, id] = f.two_workers_and_a_gang();
  auto ga = f.leased_a, gb = f.leased_b;
  ASSERT_TRUE(ga && gb);
  // Both nodes heartbeat: the other node renews its own lease.
  ASSERT_TRUE(f.svc->heartbeat(id, jobs::HeartbeatReport({a, ga->epoch}, R"({"step":1})")));
  auto member_beat = f.svc->heartbeat(id, jobs::HeartbeatReport({b, gb->epoch}));
  ASSERT_TRUE(member_beat) << member_beat.error().message;
  EXPECT_FALSE(member_beat->cancel);

  auto failed = f.svc->fail(id, {{b, gb->epoch}, "gloo: connection reset by peer"});
  ASSERT_TRUE(failed) << failed.error().message;
  EXPECT_EQ(failed->state, store::JobState::queued);
  EXPECT_EQ(failed->recoveries, 1);
  auto stale = f.svc->heartbeat(id, jobs::HeartbeatReport({a, ga->epoch}));
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, ErrorCode::stale_epoch) << "rank 0 learns the gang stopped";
  auto stale_member = f.svc->heartbeat(id, jobs::HeartbeatReport({b, gb->epoch}));
  ASSERT_FALSE(stale_member);
  EXPECT_EQ(stale_member.error().code, ErrorCode::stale_epoch);
  auto nodes = f.db->gang_members(id);
  ASSERT_TRUE(nodes);
  EXPECT_TRUE(nodes->empty());

  // Placed again as a gang, under the next epoch.
  PendingLease ra = f.ask(a, 41000), rb = f.ask(b);
  ASSERT_TRUE(ra.answered(5s) && rb.answered(5s));
  auto again = ra.grant();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->epoch, ga->epoch + 1);
  EXPECT_EQ(rb.grant()->epoch, ga->epoch + 1);
}

TEST(GangLease, ANodeThatStopsHeartbeatingStopsTheGangAndIsMarkedLost) {
  GangFixture f;
  const auto [a, b, id] = f.two_workers_and_a_gang();
  auto ga = f.leased_a, gb = f.leased_b;
  ASSERT_TRUE(ga && gb);
  // Rank 0 keeps heartbeating; the other node falls silent past the lease timeout (10 s).
  for (int i = 0; i < 6; ++i) {
    f.clock.advance_ms(2000);
    ASSERT_TRUE(f.svc->heartbeat(id, jobs::HeartbeatReport({a, ga->epoch})));
    if (i < 5) {
      EXPECT_EQ(*f.svc->expire_leases(), 0) << "at " << (i + 1) * 2 << " s";
    }
  }
  f.clock.advance_ms(2000);
  ASSERT_TRUE(f.svc->heartbeat(id, jobs::HeartbeatReport({a, ga->epoch})));
  EXPECT_EQ(*f.svc->expire_leases(), 1);
  auto job = f.job(id);
  EXPECT_EQ(job.state, store::JobState::queued);
  EXPECT_EQ(job.recoveries, 1);
  auto silent = f.db->get_worker(b);
  ASSERT_TRUE(silent && *silent);
  EXPECT_EQ((*silent)->state, store::WorkerState::lost);
  auto rank0 = f.db->get_worker(a);
  ASSERT_TRUE(rank0 && *rank0);
  EXPECT_EQ((*rank0)->state, store::WorkerState::active);
}

TEST(GangLease, RankZerosReportIsTheJobsOutcomeAndEndsEveryNodesLease) {
  GangFixture f;
  const auto [a, b, id] = f.two_workers_and_a_gang();
  auto ga = f.leased_a, gb = f.leased_b;
  ASSERT_TRUE(ga && gb);
  auto done = f.svc->complete(id, {{a, ga->epoch}, R"({"weights_sha256":"ab"})"});
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(done->state, store::JobState::succeeded);
  auto nodes = f.db->gang_members(id);
  ASSERT_TRUE(nodes);
  EXPECT_TRUE(nodes->empty());
  // The other node's late report of its own end is refused as stale, and changes nothing.
  auto late = f.svc->complete(id, {{b, gb->epoch}, "{}"});
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, ErrorCode::stale_epoch);
  EXPECT_EQ(f.job(id).state, store::JobState::succeeded);
}

// on_node_loss "replace_node": a silent node of rank > 0 is replaced by another worker under the
// same lease while rank 0 goes on; the gang is not restarted and no recovery is counted.
TEST(GangLease, AReplacingGangLeasesOnlyItsLostNodeAgainAndGoesOn) {
  GangFixture f;
  const auto [a, b, id] = f.two_workers_and_a_gang(kReplacingSpec);
  auto ga = f.leased_a, gb = f.leased_b;
  ASSERT_TRUE(ga && gb);
  const int64_t c = f.worker("10.0.0.3", "c");
  for (int i = 0; i < 6; ++i) {
    f.clock.advance_ms(2000);
    ASSERT_TRUE(f.svc->heartbeat(id, jobs::HeartbeatReport({a, ga->epoch})));
  }
  f.clock.advance_ms(2000);
  ASSERT_TRUE(f.svc->heartbeat(id, jobs::HeartbeatReport({a, ga->epoch})));
  EXPECT_EQ(*f.svc->expire_leases(), 1);
  auto job = f.job(id);
  EXPECT_EQ(job.state, store::JobState::running);
  EXPECT_EQ(job.recoveries, 0);
  EXPECT_EQ(job.lease_epoch, ga->epoch);
  auto lost = f.db->get_worker(b);
  ASSERT_TRUE(lost && *lost);
  EXPECT_EQ((*lost)->state, store::WorkerState::lost);
  auto nodes = f.db->gang_members(id);
  ASSERT_TRUE(nodes);
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_TRUE((*nodes)[1].vacant());

  // The next worker to ask is leased the vacant rank, told the same master.
  PendingLease pc = f.ask(c);
  ASSERT_TRUE(pc.answered(5s));
  auto gc = pc.grant();
  ASSERT_TRUE(gc && gc->gang);
  EXPECT_EQ(gc->job_id, id);
  EXPECT_EQ(gc->epoch, ga->epoch);
  EXPECT_EQ(gc->gang->rank, 1);
  EXPECT_EQ(gc->gang->nodes, 2);
  EXPECT_EQ(gc->gang->master_addr, "10.0.0.1");
  EXPECT_EQ(gc->gang->master_port, 41000);
  EXPECT_EQ(gc->gang->addrs, (std::vector<std::string>{"10.0.0.1", "10.0.0.3"}));
  // Its node and rank 0 report under the lease; the lost worker cannot.
  EXPECT_TRUE(f.svc->heartbeat(id, jobs::HeartbeatReport({c, gc->epoch})));
  EXPECT_TRUE(f.svc->heartbeat(id, jobs::HeartbeatReport({a, ga->epoch})));
  auto stale = f.svc->heartbeat(id, jobs::HeartbeatReport({b, gb->epoch}));
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, ErrorCode::stale_epoch);
  auto detail = f.svc->get_job(id);
  ASSERT_TRUE(detail);
  bool lost_event = false, replaced_event = false;
  for (const auto& ev : detail->events) {
    lost_event |= ev.type == "node_lost";
    replaced_event |= ev.type == "node_replaced";
    EXPECT_NE(ev.type, "preempted");
  }
  EXPECT_TRUE(lost_event && replaced_event);
  auto done = f.svc->complete(id, {{a, ga->epoch}, R"({"weights_sha256":"ab"})"});
  ASSERT_TRUE(done) << done.error().message;
  EXPECT_EQ(done->state, store::JobState::succeeded);
  EXPECT_EQ(done->recoveries, 0);
}

// A node given back (its spot instance reclaimed) is replaced too; a vacancy nobody fills within
// workers.gang_assembly_s restarts the gang, one recovery counted.
TEST(GangLease, AReplacingGangThatFindsNoReplacementInTimeRestarts) {
  GangFixture f;
  const auto [a, b, id] = f.two_workers_and_a_gang(kReplacingSpec);
  auto ga = f.leased_a, gb = f.leased_b;
  ASSERT_TRUE(ga && gb);
  ASSERT_TRUE(f.svc->preempt(id, jobs::PreemptionReport{{b, gb->epoch}, "spot notice"}));
  auto hb = f.svc->heartbeat(id, jobs::HeartbeatReport({a, ga->epoch}));
  ASSERT_TRUE(hb);
  EXPECT_FALSE(hb->move) << "the gang goes on: only the node is replaced";
  EXPECT_EQ(f.job(id).state, store::JobState::running);
  for (int i = 0; i < 14; ++i) {  // 28 s of the 30 s allowed
    f.clock.advance_ms(2000);
    ASSERT_TRUE(f.svc->heartbeat(id, jobs::HeartbeatReport({a, ga->epoch})));
    EXPECT_EQ(*f.svc->expire_leases(), 0) << "at " << (i + 1) * 2 << " s";
  }
  f.clock.advance_ms(4000);
  ASSERT_TRUE(f.svc->heartbeat(id, jobs::HeartbeatReport({a, ga->epoch})));
  EXPECT_EQ(*f.svc->expire_leases(), 1);
  auto job = f.job(id);
  EXPECT_EQ(job.state, store::JobState::queued);
  EXPECT_EQ(job.recoveries, 1);
  auto detail = f.svc->get_job(id);
  ASSERT_TRUE(detail);
  bool restarted = false;
  for (const auto& ev : detail->events)
    if (ev.type == "preempted" && ev.detail_json.find("not replaced within 30 s") != std::string::npos) restarted = true;
  EXPECT_TRUE(restarted);
}

TEST(GangSpec, NodesAreForCommandJobsAndBounded) {
  GangFixture f;
  auto trainer = f.svc->submit_job(R"({"model":{"kind":"mlp","hidden":[32]},"data":{"dataset":"synthetic","samples":256},
                                       "resources":{"nodes":2}})");
  ASSERT_FALSE(trainer);
  EXPECT_EQ(trainer.error().field, "resources.nodes");
  auto too_many = f.svc->submit_job(gang_spec(65));
  ASSERT_FALSE(too_many);
  EXPECT_EQ(too_many.error().field, "resources.nodes");
  auto ok = f.svc->submit_job(gang_spec(2));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->resource_nodes, 2);
  auto lone = f.svc->submit_job(R"({"command":["true"],"resources":{"on_node_loss":"replace_node"}})");
  ASSERT_FALSE(lone);
  EXPECT_EQ(lone.error().field, "resources.on_node_loss");
  auto unknown = f.svc->submit_job(R"({"command":["true"],"resources":{"nodes":2,"on_node_loss":"shrug"}})");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().field, "resources.on_node_loss");
}

}  // namespace
}  // namespace jobctl::daemon
