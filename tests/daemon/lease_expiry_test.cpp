// Lease expiry: a leased job whose worker stops heartbeating goes running ->
// preempted -> queued after lease_timeout_s, counts a recovery, its worker is marked lost, and
// its late reports are fenced off; past max_recoveries it fails with the reason; a restarted
// service gives live leases one timeout of grace.
#include <future>

#include <gtest/gtest.h>

#include "tests/daemon/service_support.h"

namespace jobctl::daemon {
namespace {

using jobs::HeartbeatReport;
using jobs::ServiceOptions;

jobs::ServiceOptions short_leases(int max_recoveries = 10) {
  jobs::ServiceOptions o;
  o.heartbeat_interval_s = 1;
  o.lease_timeout_s = 5;
  o.max_recoveries = max_recoveries;
  return o;
}

TEST(LeaseExpiry, SilentWorkersJobIsRequeuedAndTheWorkerMarkedLost) {
  testing::ServiceFixture f(short_leases());
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  auto g = f.lease_now(w);
  ASSERT_TRUE(g && *g);
  ASSERT_TRUE(f.svc->heartbeat(job, jobs::HeartbeatReport{{w, (*g)->epoch}, R"({"step":3})"}));
  f.clock.advance_ms(4000);
  EXPECT_EQ(*f.svc->expire_leases(), 0);  // not yet
  ASSERT_TRUE(f.svc->heartbeat(job, jobs::HeartbeatReport{{w, (*g)->epoch}, std::nullopt}));  // renewed
  f.clock.advance_ms(4999);
  EXPECT_EQ(*f.svc->expire_leases(), 0);
  f.clock.advance_ms(2);
  EXPECT_EQ(*f.svc->expire_leases(), 1);

  auto d = f.svc->get_job(job);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->job.state, store::JobState::queued);
  EXPECT_EQ(d->job.recoveries, 1);
  EXPECT_FALSE(d->job.worker_id);
  EXPECT_FALSE(d->job.lease_expires_ms);
  std::vector<std::string> types;
  for (const auto& e : d->events) types.push_back(e.type);
  EXPECT_EQ(types, (std::vector<std::string>{"submitted", "leased", "started", "preempted", "requeued"}));
  EXPECT_NE(d->events[3].detail_json.find("lease expired"), std::string::npos);
  auto ws = f.svc->list_workers();
  ASSERT_TRUE(ws);
  EXPECT_EQ((*ws)[0].row.state, store::WorkerState::lost);

  // The presumed-dead worker is fenced off.
  auto late = f.svc->heartbeat(job, jobs::HeartbeatReport{{w, (*g)->epoch}, std::nullopt});
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, ErrorCode::stale_epoch);
  // Another worker takes it, at a new epoch; the lost worker is active again when it asks.
  const int64_t w2 = f.register_worker({}, "w2");
  auto g2 = f.lease_now(w2);
  ASSERT_TRUE(g2 && *g2);
  EXPECT_EQ((*g2)->job_id, job);
  EXPECT_EQ((*g2)->epoch, (*g)->epoch + 1);
}

TEST(LeaseExpiry, TickExpiresLeases) {
  testing::ServiceFixture f(short_leases());
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  ASSERT_TRUE(f.lease_now(w));
  f.clock.advance_ms(6000);
  f.svc->tick();
  EXPECT_EQ(f.svc->get_job(job)->job.state, store::JobState::queued);
}

TEST(LeaseExpiry, PastMaxRecoveriesTheJobFailsWithTheReason) {
  testing::ServiceFixture f(short_leases(/*max_recoveries=*/1));
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  for (int round = 0; round < 2; ++round) {
    auto g = f.lease_now(w);
    ASSERT_TRUE(g && *g) << round;
    f.clock.advance_ms(6000);
    EXPECT_EQ(*f.svc->expire_leases(), 1);
  }
  auto d = f.svc->get_job(job);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->job.state, store::JobState::failed);
  EXPECT_EQ(d->job.recoveries, 2);
  ASSERT_TRUE(d->job.error);
  EXPECT_NE(d->job.error->find("max_recoveries 1"), std::string::npos) << *d->job.error;
  EXPECT_NE(d->job.error->find("lease expired"), std::string::npos) << *d->job.error;
}

TEST(LeaseExpiry, ARestartedServiceGivesLiveLeasesOneTimeoutOfGrace) {
  testing::ServiceFixture f(short_leases());
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  auto g = f.lease_now(w);
  ASSERT_TRUE(g && *g);
  // The daemon was down for a minute: the stored expiry is long past.
  f.clock.advance_ms(60000);
  f.svc->shutdown();
  f.svc = std::make_unique<jobs::JobService>(*f.db, f.clock, std::make_unique<jobs::FifoMatcher>(),
                                                short_leases());
  ASSERT_TRUE(f.svc->start());
  EXPECT_EQ(*f.svc->expire_leases(), 0);
  ASSERT_TRUE(f.svc->heartbeat(job, jobs::HeartbeatReport{{w, (*g)->epoch}, std::nullopt}));  // reconnected
  EXPECT_EQ(f.svc->get_job(job)->job.recoveries, 0);
  f.clock.advance_ms(6000);
  EXPECT_EQ(*f.svc->expire_leases(), 1);  // but a worker that never comes back still loses it
}

// A step of the wall clock (NTP, a VM restore, a manual change) expires no live lease: silence is
// measured on the steady clock. Stepped back, a lease that then goes silent still expires after
// the timeout, though its stored expiry is a minute ahead.
TEST(LeaseExpiry, AWallClockStepExpiresNoLiveLeaseAndStillExpiresASilentOne) {
  testing::ServiceFixture f(short_leases());
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  auto g = f.lease_now(w);
  ASSERT_TRUE(g && *g);
  const jobs::HeartbeatReport hb{{w, (*g)->epoch}, std::nullopt};
  ASSERT_TRUE(f.svc->heartbeat(job, hb));
  f.clock.advance_ms(1000);
  f.clock.jump_wall_ms(60'000);  // forward a minute
  EXPECT_EQ(*f.svc->expire_leases(), 0);
  ASSERT_TRUE(f.svc->heartbeat(job, hb));
  f.clock.advance_ms(2000);
  EXPECT_EQ(*f.svc->expire_leases(), 0);
  f.clock.jump_wall_ms(-120'000);  // back two minutes
  ASSERT_TRUE(f.svc->heartbeat(job, hb));
  for (int i = 0; i < 4; ++i) {
    f.clock.advance_ms(2000);
    EXPECT_EQ(*f.svc->expire_leases(), 0) << i;
    ASSERT_TRUE(f.svc->heartbeat(job, hb)) << i;
  }
  EXPECT_EQ(f.svc->get_job(job)->job.state, store::JobState::running);
  EXPECT_EQ(f.svc->get_job(job)->job.recoveries, 0);
  // Now silent: 5 s on the steady clock, while its stored expiry is still far ahead.
  f.clock.advance_ms(5001);
  EXPECT_EQ(*f.svc->expire_leases(), 1);
  EXPECT_EQ(f.svc->get_job(job)->job.state, store::JobState::queued);
}

// A worker heartbeating through an outage of twice the lease timeout is active at once after the
// restart, its "last seen" is its newest heartbeat, and its job keeps its first lease.
TEST(Liveness, AWorkerHeartbeatingThroughAnOutageIsActiveAfterTheRestart) {
  testing::ServiceFixture f(short_leases());
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  auto g = f.lease_now(w);
  ASSERT_TRUE(g && *g);
  const jobs::HeartbeatReport hb{{w, (*g)->epoch}, std::nullopt};
  ASSERT_TRUE(f.svc->heartbeat(job, hb));
  f.svc->shutdown();
  f.clock.advance_ms(10'000);  // down for twice the timeout; the worker's heartbeats fail
  f.svc = std::make_unique<jobs::JobService>(*f.db, f.clock, std::make_unique<jobs::FifoMatcher>(), short_leases());
  ASSERT_TRUE(f.svc->start());
  auto worker = [&] {
    auto workers = f.svc->list_workers();
    EXPECT_TRUE(workers && workers->size() == 1);
    return workers && !workers->empty() ? (*workers)[0].row : store::WorkerRow{};
  };
  EXPECT_EQ(*f.svc->mark_silent_workers_lost(), 0);  // not heard from yet, but jobctld just started
  EXPECT_EQ(worker().state, store::WorkerState::active);
  for (int i = 0; i < 5; ++i) {
    f.clock.advance_ms(1000);
    ASSERT_TRUE(f.svc->heartbeat(job, hb)) << i;
    EXPECT_EQ(*f.svc->mark_silent_workers_lost(), 0) << i;
    EXPECT_EQ(*f.svc->expire_leases(), 0) << i;
    EXPECT_EQ(worker().state, store::WorkerState::active) << i;
    EXPECT_EQ(worker().last_seen_ms, f.clock.now_ms()) << i;  // state and "last seen" agree
  }
  auto d = f.svc->get_job(job);
  EXPECT_EQ(d->job.state, store::JobState::running);
  EXPECT_EQ(d->job.lease_epoch, (*g)->epoch);
  EXPECT_EQ(d->job.recoveries, 0);
}

// A worker marked lost that is heard from again (a heartbeat) is active again: a heartbeat sets
// it back, as a lease request does.
TEST(Liveness, AHeartbeatSetsALostWorkerBackToActive) {
  testing::ServiceFixture f(short_leases());
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  auto g = f.lease_now(w);
  ASSERT_TRUE(g && *g);
  ASSERT_TRUE(f.db->write([w](store::WriteTxn& txn) -> Status {
    auto row = txn.worker(w);
    if (!row) return row.error();
    (*row)->state = store::WorkerState::lost;
    return txn.update_worker(**row);
  }));
  ASSERT_TRUE(f.svc->heartbeat(job, jobs::HeartbeatReport{{w, (*g)->epoch}, std::nullopt}));
  auto workers = f.svc->list_workers();
  ASSERT_TRUE(workers && workers->size() == 1);
  EXPECT_EQ((*workers)[0].row.state, store::WorkerState::active);
}

// A worker that registers and never asks again (or stops asking) is lost after the lease timeout;
// one in a long-poll, or one that asks, is not; a lost worker that asks again is back.
TEST(Liveness, SilentWorkersAreLost) {
  testing::ServiceFixture f(short_leases());
  const int64_t phantom = f.register_worker({}, "phantom");
  const int64_t polling = f.register_worker({}, "polling");
  const int64_t waiting = f.register_worker({}, "waiting");
  f.clock.advance_ms(4000);
  ASSERT_TRUE(f.lease_now(polling));
  std::promise<void> answered;
  f.svc->lease(waiting, 60'000, [&answered](auto) { answered.set_value(); });  // a long-poll, still open
  f.clock.advance_ms(1500);  // phantom and waiting silent for 5.5 s; polling for 1.5 s
  EXPECT_EQ(*f.svc->mark_silent_workers_lost(), 1);
  auto state = [&](int64_t id) {
    auto workers = f.svc->list_workers();
    if (workers)
      for (const auto& w : *workers)
        if (w.row.id == id) return std::string(store::to_string(w.row.state));
    return std::string("?");
  };
  EXPECT_EQ(state(phantom), "lost");
  EXPECT_EQ(state(polling), "active");
  EXPECT_EQ(state(waiting), "active");
  EXPECT_EQ(*f.svc->mark_silent_workers_lost(), 0);  // nothing new
  ASSERT_TRUE(f.lease_now(phantom));                  // it asks again: back
  f.svc->shutdown();                                  // answers the open long-poll
  answered.get_future().wait();
  f.submit();  // a synchronous write: the poll's asynchronous touch is committed before it
  EXPECT_EQ(state(phantom), "active");
}

}  // namespace
}  // namespace jobctl::daemon
