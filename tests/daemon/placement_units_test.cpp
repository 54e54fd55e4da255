// The contracts of placement's units one by one: the offer book and its set-asides, heartbeat
// calibration's two halves (record without the store, apply on the placement thread; whole runs,
// and the convergence of identical jobs' estimates), the spot
// deadline policy per job, what a placement pass is asked to decide, and which worker may take a
// job placed on a Slurm partition.
#include <gtest/gtest.h>

#include "daemon/placement/heartbeat_calibration.h"
#include "daemon/placement/offer_book.h"
#include "daemon/placement/placement_matcher.h"
#include "daemon/placement/spot_deadlines.h"
#include "daemon/placement/start_board.h"
#include "scheduler/job.h"
#include "scheduler/placement.h"
#include "train/spec/model_stats.h"
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

// A Slurm batch job's worker registers for the one job it was submitted for: it takes that job,
// and no other job, local or cloud, is ever offered to it; no other worker takes the Slurm job.
// The matcher with a start board: on the reserved worker a job is offered only under the backfill
// rule; each admitted job holds its GPUs at once, so spare GPUs are not handed out twice; the
// reserved job itself and other workers are not held back.
TEST(PlacementMatcher, TheReservedWorkerIsOfferedOnlyJobsThatLeaveTheReservedStartInPlace) {
  ManualClock clock(1'000'000);
  placement::StartBoard board;
  // Worker 3: 4 H100s, two held for 60 s more; job 20 (4 GPUs) is reserved there from then.
  const scheduler::PlanMachine box{3, 4, {1'060'000, 1'060'000}};
  scheduler::StartPlan plan;
  plan.reservation = scheduler::Reservation{20, 3, 4, 1'060'000};
  plan.starts = {{20, 1'060'000}};
  board.publish(plan, {box});
  EXPECT_EQ(board.expected_start(20), 1'060'000);
  EXPECT_FALSE(board.expected_start(21));

  jobs::WorkerCapabilities two_free;  // what worker 3 offers: its two free GPUs
  two_free.gpus = {jobs::GpuDevice{"NVIDIA H100 80GB HBM3", 81559}, jobs::GpuDevice{"NVIDIA H100 80GB HBM3", 81559}};
  auto job = [](int64_t id, int gpus, double hours) {
    jobs::QueuedJob q{id, 50, id, "H100", gpus, store::OptionKind::local, "H100", ""};
    q.placement_estimated_hours = hours;
    return q;
  };
  placement::PlacementMatcher matcher(board, clock);
  jobs::JobQueue long_job;
  long_job.insert(job(30, 1, 2.0));  // two hours: past the reserved start
  EXPECT_FALSE(matcher.pick(3, two_free, long_job));
  EXPECT_EQ(matcher.pick(4, two_free, long_job), 30);  // another worker: no reservation there
  jobs::JobQueue short_jobs;
  short_jobs.insert(job(31, 1, 30.0 / 3600));  // ends 30 s before the start
  short_jobs.insert(job(32, 1, 2.0));
  EXPECT_EQ(matcher.pick(3, two_free, short_jobs), 31);
  // The reserved job is never held back by its own reservation.
  jobs::QueuedJob reserved = job(20, 4, 1.0);
  EXPECT_TRUE(board.admit(reserved.id, 4, 1.0, 3, clock.now_ms()));

  // A 2-GPU reservation on the same box leaves two GPUs spare at its start: one 1-GPU job of two
  // hours may take one, a second may take the other, a third may not.
  plan.reservation = scheduler::Reservation{20, 3, 2, 1'060'000};
  board.publish(plan, {box});
  EXPECT_TRUE(board.admit(40, 1, 2.0, 3, clock.now_ms()));
  EXPECT_TRUE(board.admit(41, 1, 2.0, 3, clock.now_ms()));
  EXPECT_FALSE(board.admit(42, 1, 2.0, 3, clock.now_ms()));

  // A gang's reservation holds each of its machines: worker 4 (idle) as well as worker 3.
  plan.reservation = scheduler::Reservation{20, 3, 4, 1'060'000, {3, 4}};
  board.publish(plan, {box, scheduler::PlanMachine{4, 4, {}}});
  EXPECT_FALSE(board.admit(50, 1, 2.0, 4, clock.now_ms())) << "would run past the gang's start on its node";
  EXPECT_TRUE(board.admit(51, 1, 30.0 / 3600, 4, clock.now_ms()));
  EXPECT_TRUE(board.admit(52, 1, 2.0, 5, clock.now_ms())) << "not a machine of the gang";
}

// The plan reserves the one free worker for the job behind the one that starts now (a job given
// back, requeued behind an urgent one, as a placement pass runs before the worker asks again): the
// job ahead is still offered first, and the reservation holds back only the jobs behind it.
TEST(PlacementMatcher, TheJobPlannedBeforeTheReservedOneIsNotHeldBackByIt) {
  ManualClock clock(1'000'000);
  placement::StartBoard board;
  const scheduler::PlanMachine cpu_box{7, 1, {}};
  auto job = [](int64_t id, int priority, double hours) {
    jobs::QueuedJob q{id, priority, id, "any", 1, store::OptionKind::local, "cpu", ""};
    q.placement_estimated_hours = hours;
    return q;
  };
  const jobs::QueuedJob urgent = job(2, 90, 10.0 / 3600), low = job(1, 10, 100.0 / 3600), later = job(3, 5, 1.0);
  board.publish(scheduler::plan_starts({cpu_box}, {{urgent.id, 1, urgent.placement_estimated_hours, {7}},
                                                   {low.id, 1, low.placement_estimated_hours, {7}},
                                                   {later.id, 1, later.placement_estimated_hours, {7}}},
                                       clock.now_ms()),
                {cpu_box});
  ASSERT_TRUE(board.reservation());
  EXPECT_EQ(board.reservation()->job_id, low.id);
  clock.advance_ms(300);  // the worker asks a little after the pass

  jobs::WorkerCapabilities cpu_worker;
  cpu_worker.cpu_cores = 2;
  placement::PlacementMatcher matcher(board, clock);
  jobs::JobQueue queue;
  queue.insert(low);
  queue.insert(urgent);
  queue.insert(later);
  EXPECT_EQ(matcher.pick(7, cpu_worker, queue), urgent.id);
  jobs::JobQueue behind;
  behind.insert(later);
  EXPECT_FALSE(matcher.pick(7, cpu_worker, behind));  // an hour: past the reserved start
}

// A wide job behind a small job that waits ahead of it (what a mixed stream leaves in the queue):
// both are reserved, and a job that came after the wide one is offered the box only where it
// leaves the wide job's start in place. With one reservation (the small job's, which leaves a GPU
// spare at its start), a later 1-GPU job of an hour was offered the box and the wide job's start
// moved an hour later.
TEST(PlacementMatcher, AJobBehindTheWideOneNeverTakesItsReservedGpus) {
  ManualClock clock(1'000'000);
  placement::StartBoard board;
  // Worker 3: 4 GPUs, two held until now+20 s.
  const scheduler::PlanMachine box{3, 4, {1'020'000, 1'020'000}};
  auto job = [](int64_t id, int gpus, double hours) {
    jobs::QueuedJob q{id, 50, id, "H100", gpus, store::OptionKind::local, "H100", ""};
    q.placement_estimated_hours = hours;
    return q;
  };
  const jobs::QueuedJob small = job(1, 3, 10.0 / 3600), wide = job(2, 4, 30.0 / 3600);
  const jobs::QueuedJob later = job(3, 1, 1.0), brief = job(4, 1, 5.0 / 3600);
  board.publish(scheduler::plan_starts({box}, {{small.id, 3, small.placement_estimated_hours, {3}},
                                              {wide.id, 4, wide.placement_estimated_hours, {3}}},
                                       clock.now_ms()),
                {box});
  const auto reservations = board.reservations();
  ASSERT_EQ(reservations.size(), 2u);
  EXPECT_EQ(reservations[0].job_id, small.id);
  EXPECT_EQ(reservations[0].start_ms, 1'020'000);
  EXPECT_EQ(reservations[1].job_id, wide.id);
  EXPECT_EQ(reservations[1].start_ms, 1'030'000);

  jobs::WorkerCapabilities two_free;
  two_free.gpus = {jobs::GpuDevice{"NVIDIA H100 80GB HBM3", 81559}, jobs::GpuDevice{"NVIDIA H100 80GB HBM3", 81559}};
  placement::PlacementMatcher matcher(board, clock);
  jobs::JobQueue behind;
  behind.insert(later);
  EXPECT_FALSE(matcher.pick(3, two_free, behind)) << "an hour on the box would move the wide job's start";
  behind.insert(brief);
  EXPECT_EQ(matcher.pick(3, two_free, behind), brief.id) << "5 s end before either reserved start";
  clock.advance_ms(20'000);
  EXPECT_TRUE(board.admit(small.id, 3, small.placement_estimated_hours, 3, clock.now_ms()));
  clock.advance_ms(10'000);
  EXPECT_TRUE(board.admit(wide.id, 4, wide.placement_estimated_hours, 3, clock.now_ms()));
}

TEST(PlacementMatcher, ASlurmJobsWorkerTakesItsOneJobOnly) {
  auto caps = jobs::capabilities_from_json(
      json::parse(R"({"gpus": [], "cpu_cores": 2, "memory_mb": 4096,
                      "instance": {"id": "41", "provider": "slurm", "instance_type": "gpu", "job_id": 7}})"),
      "capabilities");
  ASSERT_TRUE(caps) << caps.error().message;
  ASSERT_TRUE(caps->instance);
  EXPECT_EQ(caps->instance->job_id, 7);
  EXPECT_EQ(jobs::to_json(*caps)["instance"]["job_id"], 7);  // stored as registered
  const auto bad = jobs::capabilities_from_json(
      json::parse(R"({"gpus": [], "instance": {"id": "41", "provider": "slurm", "job_id": 0}})"), "capabilities");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "capabilities.instance.job_id");

  jobs::QueuedJob mine{7, 50, 0, "any", 1, store::OptionKind::slurm, "V100", ""};
  jobs::QueuedJob other{8, 50, 0, "any", 1, store::OptionKind::slurm, "V100", ""};
  jobs::QueuedJob local{9, 50, 0, "any", 1, store::OptionKind::local, "cpu", ""};
  jobs::QueuedJob cloud{10, 50, 0, "any", 1, store::OptionKind::on_demand, "", "gpu"};  // an instance type named like the partition
  EXPECT_TRUE(placement::placement_allows(mine, *caps));
  EXPECT_FALSE(placement::placement_allows(other, *caps));
  EXPECT_FALSE(placement::placement_allows(local, *caps));
  EXPECT_FALSE(placement::placement_allows(cloud, *caps));

  jobs::WorkerCapabilities owned;  // a local CPU worker
  owned.cpu_cores = 2;
  EXPECT_FALSE(placement::placement_allows(mine, owned));
  jobs::WorkerCapabilities instance = owned;  // a cloud instance's worker
  instance.instance = jobs::WorkerInstance{"i-1", "sim", "gpu", false, 7};
  EXPECT_FALSE(placement::placement_allows(mine, instance));
  // A cloud instance launched for job 7 alone (a command job's) takes no other job of its kind...
  EXPECT_FALSE(placement::placement_allows(cloud, instance));
  jobs::QueuedJob seven_on_cloud = cloud;
  seven_on_cloud.id = 7;
  EXPECT_TRUE(placement::placement_allows(seven_on_cloud, instance));
  // ...while one launched for any job of its kind takes it.
  instance.instance->job_id = 0;
  EXPECT_TRUE(placement::placement_allows(cloud, instance));
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
TEST(HeartbeatCalibration, HeartbeatsKeepTheRunsPaceAndItsEndCalibrates) {
  PlacementFixture f;
  const int64_t w = f.add_worker({});
  const int64_t id = f.submit(mlp_spec());
  ASSERT_EQ(f.lease(w), id);

  placement::HeartbeatCalibration calibration(*f.db, f.clock);
  ASSERT_TRUE(calibration.load());
  const auto before = calibration.snapshot().generation;
  auto beat = [](int step, double ms) {
    return json{{"step", step}, {"total_steps", 100}, {"step_ms", ms}, {"start_step", 0}}.dump();
  };
  EXPECT_TRUE(calibration.record(id, w, beat(10, 9.0))) << "the first waiting report: wake the placement thread";
  EXPECT_FALSE(calibration.record(id, w, beat(40, 2.0)));
  EXPECT_FALSE(calibration.record(id, w, beat(70, 2.2)));
  EXPECT_FALSE(calibration.record(id, w, beat(90, 1.8)));
  EXPECT_FALSE(calibration.record(id, w, R"({"step": 3})")) << "no step time: not an observation";
  EXPECT_FALSE(calibration.record(id, w, "not json"));
  ASSERT_TRUE(calibration.apply_recorded());
  EXPECT_TRUE(calibration.calibrations().empty()) << "a run calibrates when it has ended, as a whole";
  EXPECT_EQ(calibration.snapshot().generation, before);

  EXPECT_FALSE(calibration.record_finished(id, w, R"({"steps": 100})")) << "no elapsed time: nothing to learn";
  EXPECT_TRUE(calibration.record_finished(id, w, json{{"elapsed_s", 1.5}, {"steps", 100}}.dump()));
  ASSERT_TRUE(calibration.apply_recorded());
  auto cal = calibration.calibrations();
  ASSERT_EQ(cal.size(), 1u);
  EXPECT_EQ(cal[0].gpu_model, "cpu") << "a CPU worker that did not say what its CPU is: the generic row";
  EXPECT_EQ(cal[0].samples, 1);
  EXPECT_EQ(cal[0].overhead_samples, 1);
  // The steady step time is the median of the windows after the first (2.0 ms): the first
  // window's 9 ms start-up counts as overhead, not as pace.
  EXPECT_NEAR(cal[0].overhead_seconds, 1.5 - 100 * 0.002, 1e-9);
  EXPECT_NE(calibration.snapshot().generation, before);
  auto stored = f.db->calibrations();
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->size(), 1u);
  EXPECT_EQ((*stored)[0].samples, 1);
  EXPECT_NEAR((*stored)[0].overhead_seconds, 1.3, 1e-9);
  EXPECT_EQ((*stored)[0].overhead_samples, 1);
  // What was stored is what a restarted daemon starts from.
  placement::HeartbeatCalibration reloaded(*f.db, f.clock);
  ASSERT_TRUE(reloaded.load());
  ASSERT_EQ(reloaded.calibrations().size(), 1u);
  EXPECT_NEAR(reloaded.calibrations()[0].overhead_seconds, 1.3, 1e-9);
  EXPECT_NEAR(reloaded.calibrations()[0].efficiency, cal[0].efficiency, 1e-12);

  // Recording needs no store at all.
  const int64_t id2 = f.submit(mlp_spec());
  ASSERT_EQ(f.lease(w), id2);
  calibration.record(id2, w, beat(10, 2.0));
  calibration.record(id2, w, beat(50, 2.0));
  ASSERT_TRUE(calibration.apply_recorded());
  f.db->close();
  EXPECT_TRUE(calibration.record_finished(id2, w, json{{"elapsed_s", 1.5}, {"steps", 100}}.dump()));
  EXPECT_FALSE(calibration.apply_recorded()) << "the reads fail on a closed store, and say so";
}

// A run resumed from a checkpoint (start_step > 0) is not a whole run: its elapsed time would
// teach a start-up overhead too small, so it calibrates nothing.
TEST(HeartbeatCalibration, AResumedRunIsNotObserved) {
  PlacementFixture f;
  const int64_t w = f.add_worker({});
  const int64_t id = f.submit(mlp_spec());
  ASSERT_EQ(f.lease(w), id);
  placement::HeartbeatCalibration calibration(*f.db, f.clock);
  for (int step : {60, 80, 100})
    calibration.record(id, w, json{{"step", step}, {"total_steps", 100}, {"step_ms", 2.0}, {"start_step", 50}}.dump());
  calibration.record_finished(id, w, json{{"elapsed_s", 0.4}, {"steps", 100}}.dump());
  ASSERT_TRUE(calibration.apply_recorded());
  EXPECT_TRUE(calibration.calibrations().empty());
}

// The daemon's estimate of identical jobs converges on what they take: four runs of one spec on
// one CPU machine whose times differ by up to 10%, each estimated from the calibration of the runs
// before it the way placement estimates (scheduler::place on a PlacementContext built from the
// calibration, with the machine's own peak). The first estimate is the model's alone; from the
// second on each is within 15% of the run it estimates. Without the overhead term it was not: the
// estimate was the steps alone, about half of these short runs.
TEST(HeartbeatCalibration, IdenticalRunsAreEstimatedWithinFifteenPercent) {
  PlacementFixture f;
  jobs::WorkerRegistration reg;
  reg.name = "epyc";
  reg.capabilities.cpu_cores = 2;
  reg.capabilities.memory_mb = 8192;
  reg.capabilities.cpu = cost::CpuFacts{"AMD EPYC 9B14", "AuthenticAMD", 2, 512, true, 2600, 0};
  auto worker = f.svc->register_worker(reg);
  ASSERT_TRUE(worker);
  const int64_t w = worker->worker_id;
  const std::string key = cost::cpu_device_key("AMD EPYC 9B14", 2);
  const std::string spec_text = mlp_spec(R"(,"resources":{"gpu":"cpu"})");
  auto spec = train::parse_job_spec(spec_text);
  ASSERT_TRUE(spec);

  placement::HeartbeatCalibration calibration(*f.db, f.clock);
  auto estimate = [&] {
    scheduler::PlacementConfig config;
    config.cloud_launchable = false;
    config.cpu_peak_tflops[key] = 0.1664;
    scheduler::PlacementContext ctx({}, {}, *calibration.snapshot().calibrator, config);
    scheduler::Worker pool;
    pool.id = "epyc";
    pool.gpu_model = key;
    pool.gpu_memory_gb = 8;
    scheduler::LocalCapacity capacity({pool});
    const scheduler::Job job = scheduler::job_from_spec("j", *spec, train::model_stats(*spec), 0);
    const auto d = scheduler::place(job, ctx, capacity, f.clock.now_ms(), nullptr);
    EXPECT_EQ(d.outcome, scheduler::Outcome::run_local);
    return d.choice.estimated_hours * 3600;
  };
  // Per run: the steady step time (ms) and the elapsed seconds of 400 steps, with a start-up and
  // an evaluation outside them.
  const std::vector<std::pair<double, double>> runs{{5.0, 3.40}, {5.4, 3.70}, {4.9, 3.35}, {5.2, 3.55},
                                                    {5.0, 3.40}, {5.4, 3.70}, {4.9, 3.35}, {5.2, 3.55}};
  std::vector<double> errors;
  for (const auto& [step_ms, elapsed] : runs) {
    const double estimated = estimate();
    const int64_t id = f.submit(spec_text);
    ASSERT_EQ(f.lease(w), id);
    for (int step : {50, 100, 200, 300, 400}) {
      const double window_ms = step == 50 ? 3 * step_ms : step_ms;  // the first window: start-up
      calibration.record(
          id, w, json{{"step", step}, {"total_steps", 400}, {"step_ms", window_ms}, {"start_step", 0}}.dump());
    }
    calibration.record_finished(id, w, json{{"elapsed_s", elapsed}, {"steps", 400}}.dump());
    ASSERT_TRUE(calibration.apply_recorded());
    errors.push_back((estimated - elapsed) / elapsed);
  }
  ASSERT_EQ(calibration.calibrations().size(), 1u);
  EXPECT_EQ(calibration.calibrations()[0].gpu_model, key) << "a CPU machine learns under its own key";
  // This CPU's efficiency is more than 4x from the model's own figure, and a new worker's first
  // three runs weigh a quarter each: the estimate is held at 4x the figure until runs of weight 3
  // agree (3 x 0.25 + 3 x 1: six runs), then follows them (docs/cost-model.md, "Calibration").
  // (With the running mean this replaced, the second run's estimate was already within 15%.)
  for (size_t i = 1; i < 6; ++i) EXPECT_NEAR(errors[i], errors[1], 0.1) << "run " << i + 1 << ": held at the bound";
  for (size_t i = 6; i < errors.size(); ++i)
    EXPECT_LT(std::abs(errors[i]), 0.15) << "run " << i + 1 << ": estimate error " << errors[i];
}

// A worker's measured CPU rate is optional (older workers register without it), read strictly
// (a string or a figure no CPU reaches is a 400 naming the field) and kept with the worker's row.
TEST(WorkerCapabilities, AMeasuredCpuRateIsOptionalStrictAndKept) {
  const auto old = jobs::capabilities_from_json(
      json::parse(R"({"cpu_cores": 2, "cpu": {"model": "AMD EPYC", "vector_bits": 256, "fma": true, "mhz": 2445}})"),
      "capabilities");
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->cpu->measured_tflops, 0);
  EXPECT_FALSE(jobs::to_json(*old)["cpu"].contains("measured_tflops"));
  const auto measured = jobs::capabilities_from_json(
      json::parse(R"({"cpu_cores": 2, "cpu": {"model": "AMD EPYC", "vector_bits": 256, "fma": true, "mhz": 2445,
                                            "measured_tflops": 0.17}})"),
      "capabilities");
  ASSERT_TRUE(measured) << measured.error().message;
  EXPECT_DOUBLE_EQ(measured->cpu->measured_tflops, 0.17);
  const auto again = jobs::capabilities_from_json(jobs::to_json(*measured), "capabilities");
  ASSERT_TRUE(again);
  EXPECT_DOUBLE_EQ(again->cpu->measured_tflops, 0.17);
  for (const char* bad : {R"("fast")", "-1", "1e9"}) {
    const auto refused = jobs::capabilities_from_json(
        json::parse(std::string(R"({"cpu": {"measured_tflops": )") + bad + "}}"), "capabilities");
    ASSERT_FALSE(refused) << bad;
    EXPECT_EQ(refused.error().field, "capabilities.cpu.measured_tflops");
  }
}

// The issue's AMD EPYC VM (2 cores, AVX2 with FMA, /proc/cpuinfo's 2445 MHz: 0.156 TFLOP/s by the
// formula) ran the built-in MLP (784-256-128-10, batch 128) at 0.836 ms per step: a counted 0.216
// TFLOP/s, refused as "faster than the device's peak". A worker that measured its cores at start
// (2 x 60 GFLOP/s, registered as cpu.measured_tflops) is calibrated at the measurement's bound
// (cost::cpu_machine_peak_tflops), and the same run is observed; one that did not is still held
// to the formula.
TEST(HeartbeatCalibration, AMeasuredCpuPeakLetsAnHonestFastRunCalibrate) {
  PlacementFixture f;
  auto register_epyc = [&](const std::string& name, double measured_tflops) {
    jobs::WorkerRegistration reg;
    reg.name = name;
    reg.capabilities.cpu_cores = 2;
    reg.capabilities.memory_mb = 8192;
    reg.capabilities.cpu = cost::CpuFacts{"AMD EPYC", "AuthenticAMD", 2, 256, true, 2445, measured_tflops};
    auto worker = f.svc->register_worker(reg);
    EXPECT_TRUE(worker);
    return worker ? worker->worker_id : 0;
  };
  const std::string spec =
      R"({"name":"fmnist-mlp","model":{"kind":"mlp","hidden":[256,128]},)"
      R"("data":{"dataset":"synthetic","samples":12800,"features":784,"classes":10},)"
      R"("train":{"epochs":1,"batch_size":128},"resources":{"gpu":"cpu"}})";
  placement::HeartbeatCalibration calibration(*f.db, f.clock);
  auto run_at_issue_pace = [&](int64_t worker) {
    const int64_t id = f.submit(spec);
    EXPECT_EQ(f.lease(worker), id);
    for (int step : {25, 50, 75, 100})
      calibration.record(id, worker, json{{"step", step}, {"total_steps", 100}, {"step_ms", 0.836}, {"start_step", 0}}.dump());
    calibration.record_finished(id, worker, json{{"elapsed_s", 0.2}, {"steps", 100}}.dump());
    return calibration.apply_recorded();
  };
  const int64_t unmeasured = register_epyc("epyc-old-worker", 0);
  const Status refused = run_at_issue_pace(unmeasured);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find("faster than the device's peak"), std::string::npos) << refused.error().message;
  EXPECT_TRUE(calibration.calibrations().empty());

  const int64_t measured = register_epyc("epyc", 0.12);
  const Status observed = run_at_issue_pace(measured);
  EXPECT_TRUE(observed) << observed.error().message;
  ASSERT_EQ(calibration.calibrations().size(), 1u);
  EXPECT_EQ(calibration.calibrations()[0].gpu_model, cost::cpu_device_key("AMD EPYC", 2));
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
  auto run = [&calibration](int64_t job, int64_t worker) {
    for (int step : {3, 30, 60})
      calibration.record(job, worker, json{{"step", step}, {"total_steps", 100}, {"step_ms", 40.0}}.dump());
    calibration.record_finished(job, worker, json{{"elapsed_s", 5.0}, {"steps", 100}}.dump());
  };
  run(id, fake->worker_id);
  ASSERT_TRUE(calibration.apply_recorded());
  EXPECT_TRUE(calibration.calibrations().empty()) << "a simulated worker's step times were taken for a V100's";

  // The same from a real V100 does calibrate it.
  const int64_t real = f.add_worker({{"Tesla V100-SXM2-16GB", 16384}});
  const int64_t id2 = f.submit(mlp_spec(R"(,"resources":{"gpu":"V100"})"));
  ASSERT_EQ(f.lease(real), id2);
  run(id2, real);
  ASSERT_TRUE(calibration.apply_recorded());
  ASSERT_EQ(calibration.calibrations().size(), 1u);
  EXPECT_EQ(calibration.calibrations()[0].gpu_model, "V100-16GB");
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
  EXPECT_EQ(deadlines.at_placement(1, late), scheduler::Capacity::on_demand);
  const auto early = deadlines.progress(now, now, 10, 5, 0.2, scheduler::Capacity::none);
  EXPECT_EQ(deadlines.at_placement(1, early), scheduler::Capacity::on_demand) << "job 1 stays committed";
  EXPECT_NE(deadlines.at_placement(2, early), scheduler::Capacity::on_demand) << "job 2 has its own policy";
  // A quote (job 0) asks a policy of its own each time: what it commits to is not kept.
  EXPECT_EQ(deadlines.at_placement(0, late), scheduler::Capacity::on_demand);
  EXPECT_NE(deadlines.at_placement(0, early), scheduler::Capacity::on_demand) << "a quote keeps no state";
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

// The chosen row's machine GPUs are "machine_gpus"; a document written before that field gave them
// as "gpus" (now the job's own), and still reads so.
TEST(PlacementChoice, TheMachinesGpusFromThisDocumentOrAnOlderOne) {
  auto now = store::placement_choice_from_json(
      nlohmann::json{{"option", "local"}, {"gpu", "H100-SXM"}, {"gpus", 1}, {"job_gpus", 1}, {"machine_gpus", 8}});
  ASSERT_TRUE(now) << now.error().message;
  EXPECT_EQ(now->gpus, 8);
  EXPECT_EQ(now->job_gpus, 1);
  auto older = store::placement_choice_from_json(nlohmann::json{{"option", "local"}, {"gpu", "H100-SXM"}, {"gpus", 8}, {"job_gpus", 1}});
  ASSERT_TRUE(older) << older.error().message;
  EXPECT_EQ(older->gpus, 8);
  EXPECT_EQ(older->job_gpus, 1);
}

}  // namespace
}  // namespace jobctl::daemon::testing
