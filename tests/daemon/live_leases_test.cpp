// Heartbeats answered from memory (daemon/jobs/live_leases.h): the store is written when a lease's
// stored expiry comes within half the timeout of the newest one; in between, what reads a lease's
// liveness or progress (expiry, the job views, the end of a lease, silent-worker checks, shutdown)
// sees the newest heartbeat all the same.
#include <gtest/gtest.h>

#include "daemon/jobs/live_leases.h"
#include "tests/daemon/service_support.h"

namespace jobctl::daemon {
namespace {

using jobs::HeartbeatReport;
using jobs::LeaseRef;
using jobs::LiveLeases;

TEST(LiveLeases, ALeaseIsRenewedInMemoryOnlyWhileItsStoredExpiryIsRecent) {
  LiveLeases live(10'000, 5'000);
  const LeaseRef lease{7, 3};
  EXPECT_FALSE(live.renew(1, lease, 0, 0, R"({"step":1})"));  // never stored: through the store
  live.stored(1, lease, 0, 0, R"({"step":1})", 10'000);
  EXPECT_TRUE(live.renew(1, lease, 4'999, 4'999, R"({"step":2})"));
  EXPECT_FALSE(live.renew(1, lease, 5'000, 5'000, R"({"step":3})"));   // the stored expiry is 5 s away
  EXPECT_FALSE(live.renew(1, LeaseRef{7, 4}, 1'000, 1'000, std::nullopt));  // another lease
  EXPECT_FALSE(live.renew(1, LeaseRef{8, 3}, 1'000, 1'000, std::nullopt));
  auto hb = live.find(1, lease);
  ASSERT_TRUE(hb);
  EXPECT_EQ(hb->last_ms, 4'999);
  EXPECT_EQ(hb->progress_json, R"({"step":2})");  // the refused renewal recorded nothing
  EXPECT_FALSE(live.find(1, LeaseRef{7, 4}));
}

TEST(LiveLeases, AnOlderStoredHeartbeatDoesNotHideANewerOne) {
  LiveLeases live(10'000, 5'000);
  const LeaseRef lease{7, 3};
  live.stored(1, lease, 1'000, 1'000, R"({"step":1})", 11'000);
  ASSERT_TRUE(live.renew(1, lease, 3'000, 3'000, R"({"step":3})"));
  live.stored(1, lease, 2'000, 2'000, R"({"step":2})", 12'000);  // committed after the renewal above
  auto hb = live.find(1, lease);
  ASSERT_TRUE(hb);
  EXPECT_EQ(hb->last_ms, 3'000);
  EXPECT_EQ(hb->progress_json, R"({"step":3})");
  EXPECT_EQ(hb->stored_expires_ms, 12'000);
  EXPECT_EQ(live.unstored().size(), 1u);  // step 3 is not in the store
  live.stored(1, lease, 3'000, 3'000, R"({"step":3})", 13'000);
  EXPECT_TRUE(live.unstored().empty());
  // A new lease of the job replaces the entry.
  live.stored(1, LeaseRef{9, 4}, 4'000, 4'000, std::nullopt, 14'000);
  EXPECT_FALSE(live.find(1, lease));
  auto next = live.find(1, LeaseRef{9, 4});
  ASSERT_TRUE(next);
  EXPECT_FALSE(next->progress_json);
}

TEST(LiveLeases, EntriesAreForgottenWhenTheLeaseEndsOrGoesSilent) {
  LiveLeases live(10'000, 5'000);
  live.stored(1, LeaseRef{7, 1}, 0, 0, std::nullopt, 10'000);
  live.stored(2, LeaseRef{7, 1}, 2'000, 2'000, std::nullopt, 12'000);
  live.stored(3, LeaseRef{8, 1}, 1'000, 1'000, std::nullopt, 11'000);
  live.forget(3);
  EXPECT_FALSE(live.find(3, LeaseRef{8, 1}));
  EXPECT_EQ(live.silent(10'000), std::vector<int64_t>{});
  EXPECT_EQ(live.silent(10'001), std::vector<int64_t>{1});
  EXPECT_EQ(live.prune(10'000), 0u);
  EXPECT_EQ(live.prune(10'001), 1u);  // job 1: nothing for more than the timeout
  EXPECT_EQ(live.size(), 1u);
  EXPECT_FALSE(live.renew(1, LeaseRef{7, 1}, 10'001, 10'001, std::nullopt));
}

// A service with a 60 s lease timeout (the store is written every 30 s of heartbeats).
struct LiveLeasesService : ::testing::Test {
  LiveLeasesService() : f(options()) {
    t0 = f.clock.now_ms();
    job = f.submit();
    worker = f.register_worker();
    auto g = f.lease_now(worker);
    EXPECT_TRUE(g && *g);
    if (g && *g) lease = LeaseRef{worker, (*g)->epoch};
  }
  static jobs::ServiceOptions options() {
    jobs::ServiceOptions o;
    o.heartbeat_interval_s = 2;
    o.lease_timeout_s = 60;
    return o;
  }
  jobs::HeartbeatReply heartbeat(int step) {
    auto r = f.svc->heartbeat(job, HeartbeatReport{lease, R"({"step":)" + std::to_string(step) + "}"});
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? *r : jobs::HeartbeatReply{};
  }
  store::JobRow stored() {
    auto r = f.db->get_job(job);
    EXPECT_TRUE(r && *r);
    return r && *r ? **r : store::JobRow{};
  }
  store::JobRow shown() {
    auto d = f.svc->get_job(job);
    EXPECT_TRUE(d);
    return d ? d->job : store::JobRow{};
  }

  testing::ServiceFixture f;
  int64_t t0 = 0;  // when the lease began
  int64_t job = 0;
  int64_t worker = 0;
  LeaseRef lease;
};

TEST_F(LiveLeasesService, HeartbeatsBetweenStoresAreAnsweredFromMemoryAndShownAtOnce) {
  heartbeat(1);  // the first of a lease goes through the store (it starts the job)
  EXPECT_EQ(stored().state, store::JobState::running);
  EXPECT_EQ(stored().progress_json, R"({"step":1})");
  EXPECT_EQ(stored().lease_expires_ms, t0 + 60'000);

  f.clock.advance_ms(2'000);
  EXPECT_EQ(heartbeat(2).lease_expires_ms, t0 + 62'000);
  EXPECT_EQ(stored().progress_json, R"({"step":1})");  // not written
  EXPECT_EQ(stored().lease_expires_ms, t0 + 60'000);
  EXPECT_EQ(shown().progress_json, R"({"step":2})");   // but shown
  EXPECT_EQ(shown().lease_expires_ms, t0 + 62'000);
  auto page = f.svc->list_jobs({});
  ASSERT_TRUE(page);
  ASSERT_EQ(page->jobs.size(), 1u);
  EXPECT_EQ(page->jobs[0].progress_json, R"({"step":2})");

  f.clock.advance_ms(28'000);  // 30 s after the stored heartbeat: its expiry is 30 s away
  heartbeat(3);
  EXPECT_EQ(stored().progress_json, R"({"step":3})");
  EXPECT_EQ(stored().lease_expires_ms, t0 + 90'000);
}

TEST_F(LiveLeasesService, ExpiryRenewsALeaseHeardFromInMemory) {
  heartbeat(1);
  f.clock.advance_ms(29'000);
  heartbeat(2);  // from memory: the stored expiry stays at 60 s
  f.clock.advance_ms(31'001);  // 60.001 s: the stored expiry has passed, the last heartbeat has not
  EXPECT_EQ(*f.svc->expire_leases(), 0);
  EXPECT_EQ(stored().state, store::JobState::running);
  EXPECT_EQ(stored().lease_expires_ms, t0 + 89'000);  // renewed from the newest heartbeat
  EXPECT_EQ(stored().progress_json, R"({"step":2})");
  f.clock.advance_ms(28'999);  // 89 s
  EXPECT_EQ(*f.svc->expire_leases(), 0);
  f.clock.advance_ms(2);
  EXPECT_EQ(*f.svc->expire_leases(), 1);  // 60 s after the last heartbeat, as ever
  EXPECT_EQ(stored().state, store::JobState::queued);
}

TEST_F(LiveLeasesService, ACancelReachesTheWorkerOnItsNextHeartbeat) {
  heartbeat(1);
  f.clock.advance_ms(2'000);
  EXPECT_FALSE(heartbeat(2).cancel);  // from memory
  ASSERT_TRUE(f.svc->cancel_job(job));
  f.clock.advance_ms(2'000);
  EXPECT_TRUE(heartbeat(3).cancel);
}

TEST_F(LiveLeasesService, TheEndOfALeaseStoresItsNewestProgress) {
  heartbeat(1);
  f.clock.advance_ms(2'000);
  heartbeat(2);
  ASSERT_TRUE(f.svc->complete(job, jobs::CompletionReport{lease, R"({"test_accuracy":0.9})"}));
  EXPECT_EQ(stored().state, store::JobState::succeeded);
  EXPECT_EQ(stored().progress_json, R"({"step":2})");
  // The lease is over: a late heartbeat is refused, not answered from memory.
  auto late = f.svc->heartbeat(job, HeartbeatReport{lease, std::nullopt});
  EXPECT_FALSE(late && !late->cancel);
}

TEST_F(LiveLeasesService, AnotherLeaseOfTheJobIsNeverAnsweredFromTheOldOnesEntry) {
  heartbeat(1);
  ASSERT_TRUE(f.svc->preempt(job, jobs::PreemptionReport{lease, "spot notice"}));
  const int64_t w2 = f.register_worker({}, "w2");
  auto g = f.lease_now(w2);
  ASSERT_TRUE(g && *g);
  auto old = f.svc->heartbeat(job, HeartbeatReport{lease, R"({"step":9})"});
  ASSERT_FALSE(old);
  EXPECT_EQ(old.error().code, ErrorCode::stale_epoch);
  EXPECT_FALSE(stored().progress_json);  // the new lease starts without progress
}

// The stored last_seen_ms moves in steps of 10 s and only with a store write; with a 10 s lease
// timeout that alone would call a worker heartbeating every 3 s silent.
TEST(LiveLeasesLiveness, AWorkerHeardFromInMemoryIsNeitherSilentNorShownStale) {
  jobs::ServiceOptions o;
  o.heartbeat_interval_s = 3;
  o.lease_timeout_s = 10;
  testing::ServiceFixture f(o);
  const int64_t job = f.submit();
  const int64_t w = f.register_worker();
  auto g = f.lease_now(w);
  ASSERT_TRUE(g && *g);
  const int64_t t0 = f.clock.now_ms();
  for (int t = 0; t <= 9; t += 3) {  // stored at 0 and 6 s, from memory at 3 and 9 s
    f.clock.set_ms(t0 + t * 1000);
    ASSERT_TRUE(f.svc->heartbeat(job, HeartbeatReport{{w, (*g)->epoch}, std::nullopt}));
  }
  f.clock.set_ms(t0 + 11'000);
  EXPECT_EQ(*f.svc->mark_silent_workers_lost(), 0);
  EXPECT_EQ(*f.svc->expire_leases(), 0);
  auto ws = f.svc->list_workers();
  ASSERT_TRUE(ws);
  ASSERT_EQ(ws->size(), 1u);
  EXPECT_EQ((*ws)[0].row.state, store::WorkerState::active);
  EXPECT_EQ((*ws)[0].row.last_seen_ms, t0 + 9'000);
  f.clock.set_ms(t0 + 19'001);  // silent for more than the timeout: lost after all
  EXPECT_EQ(*f.svc->expire_leases(), 1);
}

TEST_F(LiveLeasesService, ShutdownStoresTheNewestHeartbeats) {
  heartbeat(1);
  f.clock.advance_ms(5'000);
  heartbeat(2);
  ASSERT_TRUE(f.svc->store_live_heartbeats());
  EXPECT_EQ(stored().progress_json, R"({"step":2})");
  EXPECT_EQ(stored().lease_expires_ms, t0 + 65'000);
  // A restarted service reads them back.
  f.svc->shutdown();
  f.svc = std::make_unique<jobs::JobService>(*f.db, f.clock, std::make_unique<jobs::FifoMatcher>(), options());
  ASSERT_TRUE(f.svc->start());
  EXPECT_EQ(shown().progress_json, R"({"step":2})");
}

}  // namespace
}  // namespace jobctl::daemon
