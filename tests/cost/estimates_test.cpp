#include <cmath>
#include <random>

#include <gtest/gtest.h>

#include <limits>
#include <nlohmann/json.hpp>

#include "cost/cpu_peak.h"
#include "cost/efficiency_calibrator.h"
#include "cost/interruption_rates.h"
#include "cost/runtime_estimate.h"
#include "cost/steady_step_time.h"
#include "cost/vram_estimate.h"
#include "cost/workload.h"

namespace jobctl::cost {
namespace {

TEST(RuntimeEstimate, FlopsOverPeakTimesEfficiency) {
  const GpuSpec* v100 = find_gpu("V100");
  ASSERT_NE(v100, nullptr);
  // 6 x 1e9 parameters x 1e6 samples = 6e15 FLOPs at 15.7 TFLOPS x 0.5: 764.33 s.
  const double h = estimate_runtime_hours(6e15, *v100, Precision::fp32, 0.5);
  EXPECT_NEAR(h * 3600, 6e15 / (15.7e12 * 0.5), 1e-6);
  // Two GPUs halve it; FP16 tensor cores are 125/15.7 faster.
  EXPECT_NEAR(estimate_runtime_hours(6e15, *v100, Precision::fp32, 0.5, 2), h / 2, 1e-12);
  EXPECT_NEAR(estimate_runtime_hours(6e15, *v100, Precision::fp16, 0.5), h * 15.7 / 125, 1e-12);
  EXPECT_TRUE(std::isinf(estimate_runtime_hours(1e12, *v100, Precision::fp32, 0)));
  EXPECT_GT(default_efficiency("V100", "cnn"), default_efficiency("V100", "mlp"));
  EXPECT_GT(default_efficiency("cpu", "mlp"), default_efficiency("V100", "mlp"));
}

TEST(VramEstimate, SumsTheParts) {
  train::ModelStats s;
  s.weight_bytes = 400'000'000;
  s.gradient_bytes = 400'000'000;
  s.optimizer_state_bytes = 800'000'000;  // AdamW: 2 copies
  s.activation_bytes_per_sample = 1'000'000;
  const auto v = estimate_vram(s, 128);
  EXPECT_EQ(v.activation_bytes, 128'000'000);
  const int64_t base = 1'728'000'000;
  EXPECT_EQ(v.workspace_bytes, kWorkspaceFixedBytes + base / 10);
  EXPECT_EQ(v.total_bytes, base + v.workspace_bytes);
  // The batch is split over GPUs (rounded up).
  EXPECT_EQ(estimate_vram(s, 129, 2).activation_bytes, 65'000'000);
  EXPECT_EQ(s.training_bytes(128), base);  // agrees with model_stats' own sum
}

TEST(VramEstimate, UsesTheMicroBatchAndBf16Sizes) {
  auto stats = [](const char* train) {
    auto spec = train::parse_job_spec(std::string(R"({"model":{"kind":"cnn"},"data":{"dataset":"fashion-mnist"},"train":)") +
                                      train + "}");
    EXPECT_TRUE(spec) << spec.error().message;
    return std::pair{*spec, train::model_stats(*spec)};
  };
  const auto [fp32_spec, fp32] = stats(R"({"batch_size":256})");
  const auto [acc_spec, acc] = stats(R"({"batch_size":256,"accumulate_steps":4})");
  const auto [half_spec, half] = stats(R"({"batch_size":256,"precision":"bf16"})");
  const auto [re_spec, re] = stats(R"({"batch_size":256,"recompute":true})");
  const VramEstimate v = estimate_vram(fp32, 256), va = estimate_vram(acc, 256), vh = estimate_vram(half, 256),
                     vr = estimate_vram(re, 256);
  EXPECT_EQ(v.activation_bytes, fp32.activation_bytes_per_sample * 256 + 4 * 256);
  EXPECT_EQ(va.activation_bytes, acc.activation_bytes_per_sample * 64 + 4 * 256);  // micro-batches of 64
  EXPECT_LT(va.total_bytes, v.total_bytes);
  EXPECT_EQ(vh.weight_bytes, v.weight_bytes + half.parameters * 2);  // + the bf16 copy
  EXPECT_LT(vh.activation_bytes, v.activation_bytes);
  EXPECT_LT(vr.activation_bytes, v.activation_bytes * 86 / 100);  // recomputation: at least 14% less
  EXPECT_EQ(v.data_bytes, fp32.data_bytes + 4 * ((60000 + 255) / 256));
  // bf16 jobs are priced at the bf16 peak; the workload carries the micro-batch estimate.
  EXPECT_EQ(workload_from_spec(half_spec, half).precision, Precision::bf16);
  EXPECT_EQ(workload_from_spec(fp32_spec, fp32).precision, Precision::fp32);
  EXPECT_EQ(workload_from_spec(acc_spec, acc).vram_bytes_per_gpu, va.total_bytes);
  const GpuSpec* h100 = find_gpu("H100");
  ASSERT_NE(h100, nullptr);
  EXPECT_GT(effective_flops_per_hour(*h100, Precision::bf16, 0.5), 10 * effective_flops_per_hour(*h100, Precision::fp32, 0.5));
}

TEST(EfficiencyCalibrator, LearnsFromStepTimes) {
  EfficiencyCalibrator cal;
  EXPECT_DOUBLE_EQ(cal.efficiency("V100", "mlp"), default_efficiency("V100", "mlp"));
  // A step of 1.57e12 FLOPs taking 1 s on a V100 (15.7 TFLOPS fp32) is 10% of peak.
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(cal.observe("V100", "mlp", 1.57e12, 1.0));
  EXPECT_NEAR(cal.efficiency("V100", "mlp"), 0.10, 1e-12);
  EXPECT_NEAR(cal.efficiency("Tesla V100", "mlp"), 0.10, 1e-12);  // any spelling
  // Other keys are untouched.
  EXPECT_DOUBLE_EQ(cal.efficiency("V100", "cnn"), default_efficiency("V100", "cnn"));
  EXPECT_DOUBLE_EQ(cal.efficiency("A100", "mlp"), default_efficiency("A100", "mlp"));
  // A weighted median of log-efficiency: one step at 40% and one at 10%, equal weights, meet at
  // 20% (the middle of the two); a third at 10% holds it there, however wild the other.
  EfficiencyCalibrator two;
  ASSERT_TRUE(two.observe("V100", "cnn", 1.57e12 * 4, 1.0));
  ASSERT_TRUE(two.observe("V100", "cnn", 1.57e12, 1.0));
  EXPECT_NEAR(two.efficiency("V100", "cnn"), 0.20, 1e-12);
  ASSERT_TRUE(two.observe("V100", "cnn", 1.57e12, 1.0));
  EXPECT_NEAR(two.efficiency("V100", "cnn"), 0.10, 1e-12);
  ASSERT_TRUE(two.calibration("V100", "cnn"));
  EXPECT_EQ(two.calibration("V100", "cnn")->samples, 3);
}

TEST(EfficiencyCalibrator, FollowsAChangeAfterTheWindow) {
  EfficiencyCalibrator cal;
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(cal.observe("A100", "mlp", 19.5e12 * 0.05, 1.0));
  // The window keeps the last 20 runs: with 9 at the new value the median is still the old one,
  // with 10 of each it is between them, and once more than half the window is at the new value
  // the estimate is the new value. (The running mean this replaced followed by (1 - 1/20)^n.)
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(cal.observe("A100", "mlp", 19.5e12 * 0.20, 1.0));
  EXPECT_NEAR(cal.efficiency("A100", "mlp"), 0.05, 1e-12);
  ASSERT_TRUE(cal.observe("A100", "mlp", 19.5e12 * 0.20, 1.0));
  EXPECT_NEAR(cal.efficiency("A100", "mlp"), 0.10, 1e-12);
  ASSERT_TRUE(cal.observe("A100", "mlp", 19.5e12 * 0.20, 1.0));
  EXPECT_NEAR(cal.efficiency("A100", "mlp"), 0.20, 1e-12);
  for (int i = 0; i < 89; ++i) ASSERT_TRUE(cal.observe("A100", "mlp", 19.5e12 * 0.20, 1.0));
  EXPECT_NEAR(cal.efficiency("A100", "mlp"), 0.20, 1e-12);
  EXPECT_EQ(cal.calibration("A100", "mlp")->samples, 200);
}

// Forged runs (a step faster than the GPU's peak, a run a day outside its steps) are refused
// with their reason and change nothing, stored state included.
TEST(EfficiencyCalibrator, ForgedRunsChangeNothing) {
  EfficiencyCalibrator cal;
  const double peak = 19.5e12;  // one A100 at fp32
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(cal.observe_run("A100", "mlp", 1e9, 1e9 / (peak * 0.06), peak, 60, 100));
  const double eff = cal.efficiency("A100", "mlp");
  const double hours = cal.expected_run_hours("A100", "mlp", 1e15, peak);
  auto fast = cal.observe_run("A100", "mlp", 1e9, 1e-12, peak, 10, 100);
  ASSERT_FALSE(fast);
  EXPECT_EQ(fast.error().field, "step_seconds");
  EXPECT_NE(fast.error().message.find("peak"), std::string::npos) << fast.error().message;
  auto slow_run = cal.observe_run("A100", "mlp", 1e9, 1e9 / (peak * 0.06), peak, 1e300, 100);
  ASSERT_FALSE(slow_run);
  EXPECT_EQ(slow_run.error().field, "elapsed_seconds");
  EXPECT_EQ(cal.observe_overhead("A100", "mlp", 1e300).error().field, "overhead_seconds");
  EXPECT_EQ(cal.observe("A100", "mlp", 1e3, 1e9).error().field, "step_seconds") << "below 1e-8 of peak";
  EXPECT_DOUBLE_EQ(cal.efficiency("A100", "mlp"), eff);
  EXPECT_DOUBLE_EQ(cal.expected_run_hours("A100", "mlp", 1e15, peak), hours);
  EXPECT_EQ(cal.calibration("A100", "mlp")->samples, 5);
  // State written before these checks existed, with a poisoned overhead, loads without it.
  auto old = EfficiencyCalibrator::from_json(nlohmann::json::parse(
      R"({"version":1,"entries":[{"gpu":"A100","model_kind":"mlp","log_efficiency":0,"samples":2,)"
      R"("overhead_s":1e300,"overhead_samples":2}]})"));
  ASSERT_TRUE(old) << old.error().message;
  EXPECT_EQ(old->overhead_seconds("A100", "mlp"), 0);
  EXPECT_LT(old->expected_run_hours("A100", "mlp", 1e15, peak), 1.0);
  // And a window with an implausible run is refused as a whole.
  EXPECT_FALSE(EfficiencyCalibrator::from_json(nlohmann::json::parse(
      R"({"version":1,"entries":[{"gpu":"A100","model_kind":"mlp","log_efficiency":-3,"samples":1,)"
      R"("runs":[[5.0,1]]}]})")));
}

// An estimate more than kUnconfirmedFactor (4) from the model's own figure needs runs of total
// weight kAgreeingRuns (3) that agree with it; until then it is held at that factor.
TEST(EfficiencyCalibrator, AFarMoveNeedsSeveralAgreeingRuns) {
  EfficiencyCalibrator cal;
  const double prior = default_efficiency("A100", "mlp");  // 5%
  const double peak = 19.5e12;
  auto at = [&](double eff) { return cal.observe("A100", "mlp", peak * eff, 1.0); };
  ASSERT_TRUE(at(0.9));
  ASSERT_TRUE(at(0.9));
  EXPECT_NEAR(cal.efficiency("A100", "mlp"), prior * 4, 1e-12) << "two runs: held at 4x the model's figure";
  ASSERT_TRUE(at(0.9));
  EXPECT_NEAR(cal.efficiency("A100", "mlp"), 0.9, 1e-12) << "three agreeing runs: the median stands";
  ASSERT_TRUE(at(0.7));  // within 1.5x of the median: agrees, and moves it only inside the runs
  EXPECT_NEAR(cal.efficiency("A100", "mlp"), 0.9, 1e-12);
  // Low-weight runs (a new worker's) count for their weight in the agreement too.
  EfficiencyCalibrator fresh;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(fresh.observe("A100", "mlp", peak * 0.9, 1.0, 1, Precision::fp32, 0.25));
  EXPECT_NEAR(fresh.efficiency("A100", "mlp"), prior * 4, 1e-12) << "8 x 0.25 = 2 < 3";
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(fresh.observe("A100", "mlp", peak * 0.9, 1.0, 1, Precision::fp32, 0.25));
  EXPECT_NEAR(fresh.efficiency("A100", "mlp"), 0.9, 1e-12);
  // The overhead: above 600 s it needs agreeing runs as well.
  EfficiencyCalibrator over;
  ASSERT_TRUE(over.observe_overhead("A100", "mlp", 20000));
  ASSERT_TRUE(over.observe_overhead("A100", "mlp", 20000));
  EXPECT_DOUBLE_EQ(over.overhead_seconds("A100", "mlp"), 600);
  ASSERT_TRUE(over.observe_overhead("A100", "mlp", 21000));
  EXPECT_DOUBLE_EQ(over.overhead_seconds("A100", "mlp"), 20000);
}

// A new worker's first runs are weighted low: three of them (0.25 each) do not move what two
// trusted runs say, where a running mean would have followed them.
TEST(EfficiencyCalibrator, ANewWorkersRunsWeighLittle) {
  const double peak = 19.5e12;
  EfficiencyCalibrator cal;
  ASSERT_TRUE(cal.observe("A100", "mlp", peak * 0.1, 1.0));
  ASSERT_TRUE(cal.observe("A100", "mlp", peak * 0.1, 1.0));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(cal.observe("A100", "mlp", peak * 0.18, 1.0, 1, Precision::fp32, 0.25));
  EXPECT_NEAR(cal.efficiency("A100", "mlp"), 0.1, 1e-12);
  ASSERT_TRUE(cal.observe("A100", "mlp", peak * 0.18, 1.0));
  ASSERT_TRUE(cal.observe("A100", "mlp", peak * 0.18, 1.0));
  EXPECT_NEAR(cal.efficiency("A100", "mlp"), 0.18, 1e-12) << "trusted runs that agree do move it";
  EXPECT_EQ(cal.observe("A100", "mlp", peak * 0.1, 1.0, 1, Precision::fp32, 0).error().field, "weight");
}

TEST(EfficiencyCalibrator, RejectsBadObservations) {
  EfficiencyCalibrator cal;
  EXPECT_EQ(cal.observe("Gaudi2", "mlp", 1e12, 1).error().field, "gpu_model");
  EXPECT_EQ(cal.observe("V100", "mlp", 0, 1).error().field, "step_flops");
  EXPECT_EQ(cal.observe("V100", "mlp", 1e12, -1).error().field, "step_seconds");
  EXPECT_EQ(cal.observe("V100", "mlp", 1e12, 1, 0).error().field, "gpus");
  EXPECT_TRUE(cal.all().empty());
}

TEST(EfficiencyCalibrator, RoundTripsThroughJson) {
  EfficiencyCalibrator cal;
  ASSERT_TRUE(cal.observe("V100", "mlp", 1.57e12, 1.0));
  ASSERT_TRUE(cal.observe("cpu", "cnn", 0.5e12 * 0.3, 1.0));
  const auto text = cal.to_json().dump();
  auto back = EfficiencyCalibrator::from_json(nlohmann::json::parse(text));
  ASSERT_TRUE(back);
  EXPECT_NEAR(back->efficiency("V100", "mlp"), 0.1, 1e-12);
  EXPECT_NEAR(back->efficiency("cpu", "cnn"), 0.3, 1e-12);
  EXPECT_EQ(back->all().size(), 2u);
  // Continuing after a reload behaves as if never stopped.
  ASSERT_TRUE(cal.observe("V100", "mlp", 1.57e12 * 2, 1.0));
  ASSERT_TRUE(back->observe("V100", "mlp", 1.57e12 * 2, 1.0));
  EXPECT_DOUBLE_EQ(back->efficiency("V100", "mlp"), cal.efficiency("V100", "mlp"));

  auto bad = EfficiencyCalibrator::from_json(nlohmann::json::parse(
      R"({"version":1,"entries":[{"gpu":"V100","model_kind":"mlp","log_efficiency":0.5,"samples":3}]})"));
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().field, "entries[0].log_efficiency");
  EXPECT_FALSE(EfficiencyCalibrator::from_json(nlohmann::json::parse(R"({"version":2,"entries":[]})")));
  EXPECT_FALSE(EfficiencyCalibrator::from_json(nlohmann::json::parse("[]")));
}

// CPUs learn apart by (model, cores); a CPU observation needs its peak.
TEST(EfficiencyCalibrator, CpuMachinesAreKeyedByModelAndCores) {
  EfficiencyCalibrator cal;
  const std::string two = cpu_device_key("AMD EPYC", 2), sixteen = cpu_device_key("AMD EPYC", 16);
  EXPECT_EQ(two, "cpu/AMD EPYC/2");
  ASSERT_TRUE(cal.observe_at_peak(two, "mlp", 0.1e12 * 0.5, 1.0, 0.1e12));
  EXPECT_NEAR(cal.efficiency(two, "mlp"), 0.5, 1e-12);
  EXPECT_DOUBLE_EQ(cal.efficiency(sixteen, "mlp"), default_efficiency("cpu", "mlp"));
  EXPECT_EQ(cal.observe_at_peak(two, "mlp", 1e9, 1.0, 0).error().field, "peak_flops_per_second");
  EXPECT_EQ(cal.observe_at_peak("Gaudi2", "mlp", 1e9, 1.0, 1e12).error().field, "gpu_model");
  // A GPU by any of its names is one device.
  ASSERT_TRUE(cal.observe_at_peak("Tesla V100-SXM2-16GB", "mlp", 1.57e12, 1.0, 15.7e12));
  EXPECT_NEAR(cal.efficiency("V100", "mlp"), 0.1, 1e-12);
  auto back = EfficiencyCalibrator::from_json(cal.to_json());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_NEAR(back->efficiency(two, "mlp"), 0.5, 1e-12);
}

TEST(EfficiencyCalibrator, LearnsTheOverheadOutsideSteps) {
  EfficiencyCalibrator cal;
  EXPECT_DOUBLE_EQ(cal.overhead_seconds("cpu/AMD EPYC/2", "mlp"), 0);
  ASSERT_TRUE(cal.observe_overhead("cpu/AMD EPYC/2", "mlp", 3.0));
  ASSERT_TRUE(cal.observe_overhead("cpu/AMD EPYC/2", "mlp", 5.0));
  EXPECT_DOUBLE_EQ(cal.overhead_seconds("cpu/AMD EPYC/2", "mlp"), 4.0);
  EXPECT_FALSE(cal.observe_overhead("cpu/AMD EPYC/2", "mlp", -1));
  // Overhead alone is a calibration entry; efficiency stays the default until steps are seen.
  EXPECT_DOUBLE_EQ(cal.efficiency("cpu/AMD EPYC/2", "mlp"), default_efficiency("cpu", "mlp"));
  auto back = EfficiencyCalibrator::from_json(cal.to_json());
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_DOUBLE_EQ(back->overhead_seconds("cpu/AMD EPYC/2", "mlp"), 4.0);
  EXPECT_DOUBLE_EQ(back->efficiency("cpu/AMD EPYC/2", "mlp"), default_efficiency("cpu", "mlp"));
}

TEST(SteadyStepTime, TheMedianOfTheWindowsAfterTheFirst) {
  SteadyStepTime t;
  EXPECT_FALSE(t.seconds());
  t.add(10, 90);   // start-up
  EXPECT_DOUBLE_EQ(*t.seconds(), 0.090);
  t.add(20, 10);
  t.add(20, 10);   // a heartbeat repeating the last report
  t.add(30, 11);
  t.add(40, 40);   // a checkpoint written in this window
  t.add(50, 9);
  EXPECT_EQ(t.windows(), 5u);
  EXPECT_DOUBLE_EQ(*t.seconds(), 0.0105);  // median of 10, 11, 40, 9
  t.add(45, 1);    // out of order: ignored
  t.add(60, -3);   // nonsense: ignored
  EXPECT_EQ(t.windows(), 5u);
}

// A CPU's peak from its cores and vector width: this repository's VM (2 x AMD EPYC with
// AVX-512 executed as 2 x 256 bits, FMA, 2.6 GHz) is 0.166 TFLOP/s, not the table's 0.5.
TEST(CpuPeak, FromCoresAndVectorWidth) {
  CpuFacts vm{.model = "AMD EPYC", .vendor = "AuthenticAMD", .cores = 2, .vector_bits = 512, .fma = true, .mhz = 2596.144};
  EXPECT_EQ(effective_vector_bits(vm), 256);
  EXPECT_NEAR(cpu_peak_tflops(vm), 2 * 2.596144e9 * 8 * 2 * 2 / 1e12, 1e-12);
  EXPECT_NEAR(cpu_peak_tflops(vm), 0.166, 0.001);
  CpuFacts intel{.model = "Intel Xeon", .vendor = "GenuineIntel", .cores = 16, .vector_bits = 512, .fma = true, .mhz = 3000};
  EXPECT_NEAR(cpu_peak_tflops(intel), 16 * 3e9 * 16 * 2 * 2 / 1e12, 1e-12);
  CpuFacts old;  // SSE2, no FMA, unknown clock: 2.5 GHz
  old.cores = 4;
  old.vector_bits = 128;
  EXPECT_NEAR(cpu_peak_tflops(old), 4 * 2.5e9 * 4 * 1 * 2 / 1e12, 1e-12);
  EXPECT_DOUBLE_EQ(cpu_peak_tflops(CpuFacts{}), 0);
  EXPECT_EQ(cpu_device_key("", 4), "cpu");
}

// The peak a CPU machine is timed and calibrated at: the formula's until the worker measured its
// cores; then the measurement x kMeasuredPeakHeadroom where that is higher (a VM whose reported
// clock is its base clock: the issue's 2-core AMD EPYC ran the built-in MLP at a counted 0.216
// TFLOP/s, above the formula's 0.156), never lower than the formula.
TEST(CpuPeak, AMeasuredPeakRaisesTheFormulasNeverLowersIt) {
  CpuFacts vm{.model = "AMD EPYC", .vendor = "AuthenticAMD", .cores = 2, .vector_bits = 256, .fma = true, .mhz = 2445};
  const double formula = 2 * 2.445e9 * 8 * 2 * 2 / 1e12;
  EXPECT_NEAR(cpu_machine_peak_tflops(vm), formula, 1e-12);  // not measured: the formula
  vm.measured_tflops = 0.12;  // 2 cores x 60 GFLOP/s
  EXPECT_NEAR(cpu_machine_peak_tflops(vm), 0.12 * kMeasuredPeakHeadroom, 1e-12);
  EXPECT_GT(cpu_machine_peak_tflops(vm), 0.216);
  vm.measured_tflops = 0.02;  // measured on a busy machine: the formula still holds
  EXPECT_NEAR(cpu_machine_peak_tflops(vm), formula, 1e-12);
  vm.measured_tflops = std::numeric_limits<double>::infinity();
  EXPECT_NEAR(cpu_machine_peak_tflops(vm), formula, 1e-12);
  CpuFacts unknown_width;  // no vector width, so no formula: the measurement alone
  unknown_width.model = "RISC-V";
  unknown_width.cores = 4;
  unknown_width.measured_tflops = 0.01;
  EXPECT_NEAR(cpu_machine_peak_tflops(unknown_width), 0.01 * kMeasuredPeakHeadroom, 1e-12);
}

// What people read for a device: a CPU machine by its cores, a GPU by its model and count.
TEST(CpuPeak, DeviceLabelsReadAsPeopleSayThem) {
  EXPECT_EQ(device_label(cpu_device_key("Intel(R) Xeon(R) Processor", 2), 1), "CPU, 2 cores");
  EXPECT_EQ(device_label(cpu_device_key("AMD EPYC", 1), 1), "CPU, 1 core");
  EXPECT_EQ(device_label("cpu", 1), "CPU");
  EXPECT_EQ(device_label("cpu/odd/x", 1), "CPU");
  EXPECT_EQ(device_label("H100-SXM", 8), "H100-SXM x8");
  EXPECT_EQ(device_label("", 1), "? x1");
}

// The peak is the kernels' (train/spec/blas_cores.h, the table jobctl-train selects by): AVX
// without FMA runs the Sandybridge kernels; a worker pinned to a core (OPENBLAS_CORETYPE) gets
// that core's width, the generic Prescott's SSE included.
TEST(CpuPeak, FollowsTheKernelsChosen) {
  CpuFacts sandy{.model = "Xeon E5", .vendor = "GenuineIntel", .cores = 4, .vector_bits = 256, .fma = false, .mhz = 2000};
  EXPECT_EQ(effective_vector_bits(sandy), 256);
  EXPECT_FALSE(kernels_use_fma(sandy));
  EXPECT_NEAR(cpu_peak_tflops(sandy), 4 * 2e9 * 8 * 1 * 2 / 1e12, 1e-12);
  CpuFacts spr{.model = "Intel(R) Xeon(R) Processor", .vendor = "GenuineIntel", .cores = 2, .vector_bits = 512,
               .fma = true, .mhz = 2000};
  EXPECT_EQ(effective_vector_bits(spr), 512);
  EXPECT_TRUE(kernels_use_fma(spr));
  CpuFacts prescott = spr;
  pin_to_blas_core(prescott, "Prescott");
  EXPECT_EQ(effective_vector_bits(prescott), 128);
  EXPECT_FALSE(kernels_use_fma(prescott));
  EXPECT_NEAR(cpu_peak_tflops(prescott), 2 * 2e9 * 4 * 1 * 2 / 1e12, 1e-12);
  CpuFacts haswell = spr;
  pin_to_blas_core(haswell, "haswell");
  EXPECT_NEAR(cpu_peak_tflops(haswell), 2 * 2e9 * 8 * 2 * 2 / 1e12, 1e-12);
  CpuFacts unpinned = spr;
  pin_to_blas_core(unpinned, "");
  EXPECT_DOUBLE_EQ(cpu_peak_tflops(unpinned), cpu_peak_tflops(spr));
}

// Configured rates beat the traces', the more specific first; the traces pool by level.
TEST(InterruptionRates, ConfiguredThenTraces) {
  InterruptionRates r;
  const auto from_traces = r.rate("aws", "us-east-1", "p3.2xlarge");
  EXPECT_NEAR(from_traces.per_hour, 0.628, 0.001);
  EXPECT_NE(from_traces.source.find("101 interruptions"), std::string::npos) << from_traces.source;
  r.set("", "", "", 0.1);
  EXPECT_DOUBLE_EQ(r.rate("aws", "us-east-1", "p3.2xlarge").per_hour, 0.1);
  r.set("aws", "", "", 0.3);
  r.set("aws", "us-east-1", "", 0.4);
  r.set("aws", "", "p3.2xlarge", 0.5);
  r.set("aws", "us-east-1", "p3.2xlarge", 0.6);
  EXPECT_DOUBLE_EQ(r.rate("aws", "us-east-1", "p3.2xlarge").per_hour, 0.6);
  EXPECT_DOUBLE_EQ(r.rate("aws", "us-west-2", "p3.2xlarge").per_hour, 0.5);
  EXPECT_DOUBLE_EQ(r.rate("aws", "us-east-1", "g5.xlarge").per_hour, 0.4);
  EXPECT_DOUBLE_EQ(r.rate("aws", "us-east-2", "g5.xlarge").per_hour, 0.3);
  EXPECT_DOUBLE_EQ(r.rate("gcp", "us-east1", "a2-highgpu-1g").per_hour, 0.1);
  r.set("aws", "", "", 0.35);  // the same key again: replaced
  EXPECT_DOUBLE_EQ(r.rate("aws", "us-east-2", "g5.xlarge").per_hour, 0.35);
  EXPECT_EQ(r.rate("aws", "us-east-2", "g5.xlarge").source, "configured aws//");
  for (const auto& t : spot_trace_summaries()) {
    EXPECT_GE(t.interruptions, 0) << t.file;
    EXPECT_GT(t.available_hours, 0) << t.file;
  }
}

// Why identical jobs converge: a run's step windows (a slow first window, one slowed by a
// checkpoint write, the rest steady with a little noise) and its elapsed time (start-up and
// evaluation besides the steps) become one efficiency and one overhead observation; the next
// identical run's estimate (compute + overhead) is then within the run-to-run noise. Five
// synthetic runs of 469 steps of 10 ms +-3% with 2.5 s outside the steps.
TEST(EfficiencyCalibrator, IdenticalRunsConvergeOnSteadyStepsAndOverhead) {
  EfficiencyCalibrator cal;
  const std::string cpu = "cpu/AMD EPYC/2";
  const double peak = 0.166e12, step_flops = 0.5e9, steps = 469;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> noise(0.97, 1.03);
  std::vector<double> errors;
  for (int run = 0; run < 5; ++run) {
    SteadyStepTime steady;
    double step_seconds_total = 0;
    for (int window = 1; window * 20 <= steps; ++window) {
      double ms = 10 * noise(rng);
      if (window == 1) ms *= 4;   // start-up: first touches, thread pools
      if (window == 12) ms *= 3;  // a checkpoint written in this window
      steady.add(window * 20, ms);
      step_seconds_total += 20 * ms / 1000;
    }
    const double elapsed = step_seconds_total + 2.5 * noise(rng);
    const double estimate = cal.expected_run_hours(cpu, "mlp", step_flops * steps, peak) * 3600;
    errors.push_back((estimate - elapsed) / elapsed);
    ASSERT_TRUE(cal.observe_run(cpu, "mlp", step_flops, *steady.seconds(), peak, elapsed, static_cast<int64_t>(steps)));
  }
  EXPECT_GT(std::fabs(errors[0]), 0.15);  // uncalibrated: the default efficiency, no overhead
  for (size_t i = 1; i < errors.size(); ++i) EXPECT_LT(std::fabs(errors[i]), 0.15) << "run " << i + 1;
  EXPECT_FALSE(cal.observe_run(cpu, "mlp", step_flops, 0.01, peak, 10, 0));
}

}  // namespace
}  // namespace jobctl::cost
