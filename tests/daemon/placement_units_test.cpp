// The contracts of placement's units one by one: the offer book and its set-asides, heartbeat
// calibration's two halves (record without the store, apply on the placement thread), the spot
// deadline policy per job, and what a placement pass is asked to decide.
#include <gtest/gtest.h>

#include "daemon/placement/heartbeat_calibration.h"
#include "daemon/placement/offer_book.h"
#include "daemon/placement/spot_deadlines.h"
#include "tests/daemon/placement_support.h"

namespace jobctl::daemon::testing {
namespace {

using nlohmann::json;

cost::Offer offer(std::string type, double od, std::optional<double> spot) {
  cost::Offer o;
  o.cloud = "aws";
  o.instance_type = std::move(type);
  o.region = "us-east-1";
  o.gpu_model = "V100";
  o.gpu_count = 1;
  o.gpu_memory_gb = 16;
  o.on_demand_usd_per_hour = od;
  o.spot_usd_per_hour = spot;
  return o;
}

TEST(OfferBook, SetAsideOffersLeaveUntilTheirTimeAndTheGenerationSaysSo) {
  placement::OfferBook book;
  book.reset({offer("p3.2xlarge", 3.06, 0.92), offer("g4dn.xlarge", 0.526, 0.2)});
  const auto first = book.usable(1'000);
  ASSERT_EQ(first.offers->size(), 2u);
  EXPECT_EQ(book.usable(2'000).generation, first.generation) << "nothing changed";

  book.set_aside("p3.2xlarge", "us-east-1", /*spot=*/true, 10'000);  // its spot market only
  const auto spot_aside = book.usable(2'000);
  EXPECT_NE(spot_aside.generation, first.generation);
  ASSERT_EQ(spot_aside.offers->size(), 2u);
  EXPECT_FALSE((*spot_aside.offers)[0].spot_usd_per_hour);
  EXPECT_TRUE((*spot_aside.offers)[1].spot_usd_per_hour);

  book.set_aside("g4dn.xlarge", "us-east-1", /*spot=*/false, 5'000);  // the whole offer
  const auto both = book.usable(3'000);
  ASSERT_EQ(both.offers->size(), 1u);
  EXPECT_EQ((*both.offers)[0].instance_type, "p3.2xlarge");

  const auto later = book.usable(5'000);  // the on-demand set-aside is over
  EXPECT_NE(later.generation, both.generation);
  EXPECT_EQ(later.offers->size(), 2u);
  EXPECT_FALSE((*later.offers)[0].spot_usd_per_hour);
  EXPECT_EQ(book.usable(10'000).offers->at(0).spot_usd_per_hour, 0.92);
  EXPECT_EQ(book.all().size(), 2u) << "all() lists set-aside offers too";
}

// record() runs on the store's writer thread (a heartbeat's completion): it must not touch the
// store. It works with the store closed; apply_recorded() does the reads and the write.
TEST(HeartbeatCalibration, RecordOnlyQueuesApplyReadsAndWrites) {
  PlacementFixture f;
  const int64_t w = f.add_worker({});
  const int64_t id = f.submit(mlp_spec());
  ASSERT_EQ(f.lease(w), id);

  placement::HeartbeatCalibration calibration(*f.db, f.clock);
  ASSERT_TRUE(calibration.load());
  const auto before = calibration.snapshot().generation;
  const std::string beat = json{{"step", 3}, {"total_steps", 100}, {"step_ms", 2.0}}.dump();
  EXPECT_TRUE(calibration.record(id, w, beat)) << "the first waiting observation: wake the placement thread";
  EXPECT_FALSE(calibration.record(id, w, beat));
  EXPECT_FALSE(calibration.record(id, w, R"({"step": 3})")) << "no step time: not an observation";
  EXPECT_FALSE(calibration.record(id, w, "not json"));
  EXPECT_TRUE(calibration.calibrations().empty());

  ASSERT_TRUE(calibration.apply_recorded());
  auto cal = calibration.calibrations();
  ASSERT_EQ(cal.size(), 1u);
  EXPECT_EQ(cal[0].samples, 2);
  EXPECT_NE(calibration.snapshot().generation, before);
  auto stored = f.db->calibrations();
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].samples, 2);

  // Recording needs no store at all.
  f.db->close();
  EXPECT_TRUE(calibration.record(id, w, beat));
  EXPECT_FALSE(calibration.apply_recorded()) << "the write fails on a closed store, and says so";
}

// A worker with simulated GPUs trains on the CPU: its step times must not calibrate the GPU it
// claims (a cloudsim "V100" job estimated at 0.22 s took 4.3 s).
TEST(HeartbeatCalibration, SimulatedWorkersNeverCalibrateTheGpuTheyClaim) {
  PlacementFixture f;
  jobs::WorkerRegistration reg;
  reg.name = "fake-v100";
  reg.capabilities.gpus = {{"Tesla V100-SXM2-16GB", 16384}};
  reg.capabilities.cpu_cores = 2;
  reg.capabilities.memory_mb = 8192;
  reg.capabilities.simulated = true;
  auto fake = f.svc->register_worker(reg);
  ASSERT_TRUE(fake);
  const int64_t id = f.submit(mlp_spec(R"(,"resources":{"gpu":"V100"})"));
  ASSERT_EQ(f.lease(fake->worker_id), id);
  placement::HeartbeatCalibration calibration(*f.db, f.clock);
  ASSERT_TRUE(calibration.load());
  const std::string beat = json{{"step", 3}, {"total_steps", 100}, {"step_ms", 40.0}}.dump();
  calibration.record(id, fake->worker_id, beat);
  calibration.record(id, fake->worker_id, beat);
  ASSERT_TRUE(calibration.apply_recorded());
  EXPECT_TRUE(calibration.calibrations().empty()) << "a simulated worker's step times were taken for a V100's";

  // The same from a real V100 does calibrate it.
  const int64_t real = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}});
  const int64_t id2 = f.submit(mlp_spec(R"(,"resources":{"gpu":"V100"})"));
  ASSERT_EQ(f.lease(real), id2);
  calibration.record(id2, real, beat);
  ASSERT_TRUE(calibration.apply_recorded());
  ASSERT_EQ(calibration.calibrations().size(), 1u);
}

TEST(HeartbeatCalibration, ObservationsBeyondTheLimitAreDroppedAndReported) {
  PlacementFixture f;
  placement::HeartbeatCalibration calibration(*f.db, f.clock);
  const std::string beat = json{{"step", 1}, {"total_steps", 10}, {"step_ms", 1.0}}.dump();
  for (size_t i = 0; i < placement::HeartbeatCalibration::kMaxRecorded + 3; ++i) calibration.record(999, 1, beat);
  auto st = calibration.apply_recorded();  // job 999 does not exist: its observations are skipped
  ASSERT_FALSE(st);
  EXPECT_NE(st.error().message.find("3 heartbeat observations dropped"), std::string::npos) << st.error().message;
  EXPECT_TRUE(calibration.apply_recorded()) << "reported once";
}

// One policy object per job: once it committed to on-demand for a job, it stays there for that
// job and no other.
TEST(SpotDeadlines, OnePolicyPerJobAskedAtRequeue) {
  PlacementFixture f;
  placement::SpotDeadlines deadlines(*f.db, f.clock, placement::SpotDeadlineSettings{"up", 0.05, 10});
  const int64_t now = f.clock.now_ms();
  const auto late = deadlines.progress(now - 3'600'000 * 9, now, 10, 5, 0.2, scheduler::Capacity::none);
  EXPECT_NEAR(late.elapsed_hours, 9, 1e-9);
  EXPECT_NEAR(late.remaining_compute(), 4, 1e-9);
  EXPECT_EQ(deadlines.at_requeue(1, late), scheduler::Capacity::on_demand);
  const auto early = deadlines.progress(now, now, 10, 5, 0.2, scheduler::Capacity::none);
  EXPECT_EQ(deadlines.at_requeue(1, early), scheduler::Capacity::on_demand) << "job 1 stays committed";
  EXPECT_NE(deadlines.at_requeue(2, early), scheduler::Capacity::on_demand) << "job 2 has its own policy";
  EXPECT_TRUE(deadlines.check_running()) << "no running spot job: nothing to check";
}

// request() and capacity_changed() only record, and say when the placement thread must be woken
// (the first thing recorded since the last pass).
TEST(PlacementPasses, RequestsAreRecordedAndTheFirstOneWakes) {
  PlacementFixture f;
  f.placement->tick();  // what start() requested
  const int before = f.wakes.load();
  auto a = f.svc->submit_job(mlp_spec());
  auto b = f.svc->submit_job(mlp_spec());
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(f.db->write([](store::WriteTxn&) { return Status{}; }));  // the submits' hooks ran
  EXPECT_EQ(f.wakes.load(), before + 1) << "two jobs queued, one wake-up";
  EXPECT_EQ(f.job(a->id).state, store::JobState::queued);
  f.placement->tick();
  EXPECT_NE(f.job(a->id).placement_json, std::nullopt) << "decided by the tick";
  EXPECT_NE(f.job(b->id).placement_json, std::nullopt);
}

}  // namespace
}  // namespace jobctl::daemon::testing
