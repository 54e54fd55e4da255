#include "scheduler/start_plan.h"

#include <gtest/gtest.h>

namespace jobctl::scheduler {
namespace {

constexpr int64_t kNow = 1'000'000;
constexpr int64_t kSec = 1000;

double seconds(int s) { return s / 3600.0; }

// An 8-GPU machine, seven GPUs held by 1-GPU jobs ending at now+10 s ... now+70 s.
PlanMachine busy_box() {
  PlanMachine m{1, 8, {}};
  for (int k = 1; k <= 7; ++k) m.held_until.push_back(kNow + 10 * k * kSec);
  return m;
}

TEST(StartPlan, TheFirstJobThatCannotStartIsReservedWhereTheLongestRunningJobEnds) {
  const std::vector<PlanJob> queue = {{10, 8, seconds(100), {1}}, {11, 1, seconds(30), {1}}};
  const StartPlan plan = plan_starts({busy_box()}, queue, kNow);
  ASSERT_TRUE(plan.reservation);
  EXPECT_EQ(plan.reservation->job_id, 10);
  EXPECT_EQ(plan.reservation->machine_id, 1);
  EXPECT_EQ(plan.reservation->gpus, 8);
  EXPECT_EQ(plan.reservation->start_ms, kNow + 70 * kSec);
  EXPECT_EQ(plan.expected_start(10), kNow + 70 * kSec);
  // Behind it, the 1-GPU job is planned after the wide one (the plan's start is an upper bound).
  EXPECT_EQ(plan.expected_start(11), kNow + 170 * kSec);
}

TEST(StartPlan, JobsThatFitNowStartNowAndTheReservationGoesToTheEarliestMachine) {
  PlanMachine a{1, 4, {kNow + 50 * kSec, kNow + 50 * kSec}};
  PlanMachine b{2, 4, {kNow + 20 * kSec}};
  // Job 5 (first in the queue) takes machine b's three free GPUs now; job 6 needs 4.
  const std::vector<PlanJob> queue = {{5, 3, seconds(10), {2}}, {6, 4, seconds(60), {1, 2}}, {7, 4, seconds(5), {1, 2}}};
  const StartPlan plan = plan_starts({a, b}, queue, kNow);
  EXPECT_EQ(plan.expected_start(5), kNow);
  ASSERT_TRUE(plan.reservation);
  EXPECT_EQ(plan.reservation->job_id, 6);
  EXPECT_EQ(plan.reservation->machine_id, 2);  // b is whole at now+20 s, a at now+50 s
  EXPECT_EQ(plan.reservation->start_ms, kNow + 20 * kSec);
  EXPECT_EQ(plan.expected_start(7), kNow + 50 * kSec);  // a, then
}

// A free 1-GPU machine and two jobs: the first starts now, the second is reserved after it, and
// the first is ahead of the reservation (it is never held back by it).
TEST(StartPlan, TheJobsPlannedBeforeTheReservedOneAreAheadOfIt) {
  const std::vector<PlanJob> queue = {{1, 1, seconds(10), {1}}, {2, 1, seconds(100), {1}}, {3, 1, seconds(5), {1}}};
  const StartPlan plan = plan_starts({PlanMachine{1, 1, {}}}, queue, kNow);
  ASSERT_TRUE(plan.reservation);
  EXPECT_EQ(plan.reservation->job_id, 2);
  EXPECT_EQ(plan.reservation->start_ms, kNow + 10 * kSec);
  EXPECT_EQ(plan.ahead_of_reservation, (std::set<int64_t>{1}));
}

// A gang of two 1-GPU machines starts when the second of its machines frees, holds both from
// then, and its reservation holds both: a job that would run past its start may take neither.
TEST(StartPlan, AGangIsReservedEveryMachineItNeedsAndStartsWhenTheLastIsFree) {
  PlanMachine a{1, 1, {kNow + 10 * kSec}};
  PlanMachine b{2, 1, {kNow + 40 * kSec}};
  PlanMachine c{3, 1, {kNow + 90 * kSec}};
  PlanJob gang{20, 1, seconds(100), {1, 2, 3}, 2};
  const StartPlan plan = plan_starts({a, b, c}, {gang, {21, 1, seconds(30), {1, 2, 3}}}, kNow);
  ASSERT_TRUE(plan.reservation);
  EXPECT_EQ(plan.reservation->job_id, 20);
  EXPECT_EQ(plan.reservation->machine_ids, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(plan.reservation->start_ms, kNow + 40 * kSec) << "when b, the later of its two, is free";
  EXPECT_EQ(plan.expected_start(21), kNow + 90 * kSec) << "c: a and b are the gang's from now+40 s";
  EXPECT_FALSE(may_backfill(*plan.reservation, a, kNow + 10 * kSec, 1, seconds(60)));
  EXPECT_TRUE(may_backfill(*plan.reservation, a, kNow + 10 * kSec, 1, seconds(20)));
  EXPECT_FALSE(may_backfill(*plan.reservation, b, kNow, 1, seconds(60)));
  EXPECT_TRUE(may_backfill(*plan.reservation, c, kNow, 1, seconds(600)));
  // Wider than the machines it may use: no start.
  gang.nodes = 4;
  EXPECT_FALSE(plan_starts({a, b, c}, {gang}, kNow).expected_start(20));
}

TEST(StartPlan, AJobNoMachineCanHoldHasNoStart) {
  const StartPlan plan = plan_starts({PlanMachine{1, 4, {}}}, {{3, 8, 1.0, {1}}, {4, 1, 1.0, {}}}, kNow);
  EXPECT_FALSE(plan.reservation);
  EXPECT_FALSE(plan.expected_start(3));
  EXPECT_FALSE(plan.expected_start(4));
}

TEST(StartPlan, AJobPastItsEstimateIsTakenToEndNow) {
  const StartPlan plan = plan_starts({PlanMachine{1, 2, {kNow - 5 * kSec}}}, {{3, 2, 1.0, {1}}}, kNow);
  EXPECT_FALSE(plan.reservation);
  EXPECT_EQ(plan.expected_start(3), kNow);
}

// A 4-GPU box with three GPUs held until now+10 s, +20 s and +30 s, and a queue of a 1-GPU job
// that fits now, the wide job, and a 2-GPU job behind it: the first starts now, and each job that
// cannot start now is reserved, in queue order, up to the limit; every one is a hold.
TEST(StartPlan, EachJobThatCannotStartNowIsReservedUpToTheLimit) {
  const PlanMachine box{1, 4, {kNow + 10 * kSec, kNow + 20 * kSec, kNow + 30 * kSec}};
  const std::vector<PlanJob> queue = {{1, 1, seconds(5), {1}}, {2, 4, seconds(10), {1}}, {3, 2, seconds(100), {1}}};
  const StartPlan plan = plan_starts({box}, queue, kNow);
  EXPECT_EQ(plan.expected_start(1), kNow);
  ASSERT_EQ(plan.reservations.size(), 2u);
  EXPECT_EQ(plan.reservations[0].job_id, 2);
  EXPECT_EQ(plan.reservations[0].start_ms, kNow + 30 * kSec);
  EXPECT_EQ(plan.reservations[0].end_ms, kNow + 40 * kSec);
  EXPECT_EQ(plan.reservations[1].job_id, 3);
  EXPECT_EQ(plan.reservations[1].start_ms, kNow + 40 * kSec);
  ASSERT_EQ(plan.holds.size(), 3u);
  EXPECT_EQ(plan.holds[0].job_id, 1);
  EXPECT_EQ(plan.order.at(3), 2u);
  // One reservation at most: the 2-GPU job behind it is not planned.
  const StartPlan one = plan_starts({box}, queue, kNow, 1);
  ASSERT_EQ(one.reservations.size(), 1u);
  EXPECT_EQ(one.reservations[0].job_id, 2);
  EXPECT_FALSE(one.expected_start(3));
}

// The starvation of a wide job behind a mixed stream, in the plan: small jobs waiting ahead of
// the wide one, the first of them reserved, the wide one reserved as well; a job that came after
// the wide one may start only where it leaves every hold ahead of it in place, the small jobs
// ahead of the wide one are not held back by it.
TEST(StartPlan, AJobBehindTheWideOneMayStartOnlyWhereItLeavesEveryHoldAheadInPlace) {
  // 4 GPUs: two free now, two held until now+20 s.
  const PlanMachine box{1, 4, {kNow + 20 * kSec, kNow + 20 * kSec}};
  // Ahead of the wide job: a 2-GPU job that starts now (until now+10 s) and a 2-GPU job that
  // cannot (reserved from now+10 s to now+30 s, on the GPUs the first frees).
  const std::vector<PlanJob> queue = {{1, 2, seconds(10), {1}}, {2, 2, seconds(20), {1}}, {3, 4, seconds(30), {1}}};
  const StartPlan plan = plan_starts({box}, queue, kNow);
  ASSERT_EQ(plan.reservations.size(), 2u);
  EXPECT_EQ(plan.reservations[1].job_id, 3);
  EXPECT_EQ(plan.reservations[1].start_ms, kNow + 30 * kSec);
  auto ahead_of = [&plan](int64_t job) {
    std::vector<const Reservation*> ahead;
    const size_t order = plan.order.count(job) ? plan.order.at(job) : SIZE_MAX;
    for (const auto& h : plan.holds)
      if (h.job_id != job && plan.order.at(h.job_id) < order) ahead.push_back(&h);
    return ahead;
  };
  // A later 1-GPU job (not in the plan): the box's two free GPUs are job 1's now; nothing fits.
  EXPECT_FALSE(may_start(ahead_of(99), box, kNow, 1, seconds(5)));
  // Once job 1 runs (counted on the box) and job 1's hold is spent: still none before now+10 s.
  PlanMachine running = box;
  running.held_until.insert(running.held_until.end(), 2, kNow + 10 * kSec);
  std::vector<const Reservation*> behind;
  for (const auto& h : plan.holds)
    if (h.job_id != 1) behind.push_back(&h);
  EXPECT_FALSE(may_start(behind, running, kNow + 1 * kSec, 1, seconds(5)));
  // At now+20 s (the first two jobs' GPUs free, job 2 on two of them until 30 s): a 1-GPU job of
  // 5 s ends before the wide job's start; one of 15 s would delay it.
  PlanMachine later{1, 4, {kNow + 30 * kSec, kNow + 30 * kSec}};
  std::vector<const Reservation*> wide_only{&plan.reservations[1]};
  EXPECT_TRUE(may_start(wide_only, later, kNow + 20 * kSec, 2, seconds(5)));
  EXPECT_FALSE(may_start(wide_only, later, kNow + 20 * kSec, 1, seconds(15)));
  // Job 2 (ahead of the wide one) is never held back by it: the only hold ahead of it is job 1's,
  // and with no hold ahead a job may take whatever is free.
  ASSERT_EQ(ahead_of(2).size(), 1u);
  EXPECT_EQ(ahead_of(2)[0]->job_id, 1);
  EXPECT_TRUE(may_start({}, box, kNow, 2, seconds(600)));
}

// A running job past its estimate is taken to end now: the wide job behind it is planned to start
// now, and that hold keeps the GPUs for it — a job behind it may not take them.
TEST(StartPlan, AJobPlannedToStartNowHoldsItsGpusAgainstTheJobsBehindIt) {
  const PlanMachine box{1, 4, {kNow - 5 * kSec}};  // overran by 5 s; three GPUs free
  const StartPlan plan = plan_starts({box}, {{7, 4, seconds(60), {1}}}, kNow);
  EXPECT_FALSE(plan.reservation);
  EXPECT_EQ(plan.expected_start(7), kNow);
  ASSERT_EQ(plan.holds.size(), 1u);
  std::vector<const Reservation*> ahead{&plan.holds[0]};
  EXPECT_FALSE(may_start(ahead, box, kNow + 500, 1, seconds(1)));
}

TEST(Backfill, OnTheReservedMachineOnlyJobsEndingByTheStartOrOnSpareGpus) {
  const PlanMachine box = busy_box();
  const Reservation r{10, 1, 8, kNow + 70 * kSec};
  EXPECT_TRUE(may_backfill(r, box, kNow, 1, seconds(70)));   // ends exactly at the start
  EXPECT_FALSE(may_backfill(r, box, kNow, 1, seconds(71)));  // would delay it
  EXPECT_TRUE(may_backfill(r, PlanMachine{2, 8, {}}, kNow, 1, 100.0));  // another machine

  // A 6-GPU reservation on the same box: at its start all 8 GPUs are free, so two may run past it.
  const Reservation narrow{10, 1, 6, kNow + 30 * kSec};
  PlanMachine held = box;  // GPUs of jobs ending at 40..70 s are still held at the start
  EXPECT_EQ(spare_gpus_at_start(narrow, held), 8 - 4 - 6);
  EXPECT_FALSE(may_backfill(narrow, held, kNow, 1, 1.0));
  held.held_until.resize(2);  // only the jobs ending at 10 s and 20 s remain
  EXPECT_EQ(spare_gpus_at_start(narrow, held), 2);
  EXPECT_TRUE(may_backfill(narrow, held, kNow, 2, 1.0));
  EXPECT_FALSE(may_backfill(narrow, held, kNow, 3, 1.0));
}

}  // namespace
}  // namespace jobctl::scheduler
