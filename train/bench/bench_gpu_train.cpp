// GPU training benchmarks of jobctl's CUDA path, for run_on_gpu.sh:
//
//   jobctl-train-bench-gpu [--seconds S]
//
// 1. Throughput (steps/s) against PyTorch eager on the same models, batches and optimizer
//    (torch_bench.py; run_on_gpu.sh joins the two): each configuration trains on synthetic 28x28
//    data held on the GPU, AdamW (lr 1e-3, weight decay 1e-4), no gradient clipping, timed over
//    at least S seconds after 30 warm-up steps, synchronising every 50 steps (neither side reads
//    the loss every step); with CUDA graphs (the default) and without, so the graphs' share shows.
// 2. Mixed precision, accumulation and recomputation: the wide MLP 784-4096-4096-10 at batch 1024
//    in fp32 and bf16 (goal: bf16 >= 3x fp32), and the CNN with train.accumulate_steps 4 and with
//    train.recompute (their step-time cost).
// 3. The VRAM estimate (cost/vram_estimate, what placement uses) against the device memory the
//    process holds after training (cudaMemGetInfo: total - free, the CUDA context included), for
//    each configuration; goal within 15%.
// 4. The runtime estimate after calibration: the cost model's hours = FLOPs / (peak x efficiency)
//    with the efficiency calibrated from 100 steps (so FLOPs / measured FLOP rate), predicting the
//    time of the next 1000 steps, against their measured time; goal within 15%.
//
// Output: "RESULT name=... impl=... batch=... steps_per_s=..." lines (joined with torch_bench.py),
// "VRAM name=... estimate_bytes=... measured_bytes=..." and "RUNTIME name=... predicted_s=...
// measured_s=..." lines, and tables.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_common.h"
#include "cost/vram_estimate.h"
#include "train/kernels/cuda_backend.h"
#include "train/spec/model_stats.h"
#include "train/trainer/trainer.h"

using namespace jobctl::train;

namespace {

struct Config {
  std::string key;
  JobSpec spec;
  bool vs_torch = false;  // torch_bench.py runs the same configuration under this key
};

int64_t device_bytes_in_use() {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) return -1;
  return static_cast<int64_t>(total_bytes - free_bytes);
}

struct Run {
  double steps_per_s = 0;
  int64_t device_bytes = 0;
};

Run run(const JobSpec& spec, bool graphs, double min_seconds) {
  auto backend = make_cuda_backend(CudaBackendOptions{0, graphs});
  const DataSplits data = make_synthetic(spec.data);
  Trainer trainer(spec, *backend, data.train, data.test);
  for (int i = 0; i < 30; ++i) trainer.step();
  (void)trainer.last_loss();
  int64_t steps = 0;
  const auto t0 = std::chrono::steady_clock::now();
  while (true) {
    for (int i = 0; i < 50; ++i) trainer.step();
    steps += 50;
    (void)trainer.last_loss();  // every 50 steps: bounds the queue, costs one sync per 50
    if (bench::seconds_since(t0) >= min_seconds) break;
  }
  Run r;
  r.steps_per_s = static_cast<double>(steps) / bench::seconds_since(t0);
  r.device_bytes = device_bytes_in_use();
  return r;
}

// The runtime estimate after calibration: rate from 100 steps, prediction for the next 1000.
void runtime_check(const std::string& key, const JobSpec& spec, std::string& lines) {
  auto backend = make_cuda_backend(CudaBackendOptions{});
  const DataSplits data = make_synthetic(spec.data);
  Trainer trainer(spec, *backend, data.train, data.test);
  for (int i = 0; i < 30; ++i) trainer.step();
  (void)trainer.last_loss();
  const double flops_per_step = model_stats(spec).training_flops_per_sample * spec.train.batch_size;
  auto timed = [&](int steps) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) trainer.step();
    (void)trainer.last_loss();
    return bench::seconds_since(t0);
  };
  const double calibration_s = timed(100);
  const double flops_per_s = 100 * flops_per_step / calibration_s;  // peak x calibrated efficiency
  const double predicted_s = 1000 * flops_per_step / flops_per_s;
  const double measured_s = timed(1000);
  char buf[256];
  std::snprintf(buf, sizeof buf, "RUNTIME name=%s predicted_s=%.4f measured_s=%.4f\n", key.c_str(), predicted_s,
                measured_s);
  lines += buf;
}

}  // namespace

int main(int argc, char** argv) {
  double seconds = 3.0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--seconds") seconds = std::atof(argv[i + 1]);
  }
  if (cuda_device_count() == 0) {
    std::fprintf(stderr, "no CUDA device\n");
    return 1;
  }
  auto mode = [](JobSpec s, Precision p, int accumulate, bool recompute) {
    s.train.precision = p;
    s.train.accumulate_steps = accumulate;
    s.train.recompute = recompute;
    return s;
  };
  const JobSpec small = bench::model_spec(ModelKind::mlp, {256, 128}, {}, 128, 16384);
  const JobSpec wide = bench::model_spec(ModelKind::mlp, {4096, 4096}, {}, 1024, 16384);
  const JobSpec cnn = bench::model_spec(ModelKind::cnn, {128}, {32, 64}, 128, 16384);
  std::vector<Config> configs = {
      {"mlp_784_256_128_10_b128", small, true},
      {"mlp_784_4096_4096_10_b1024", wide, true},
      {"cnn_32_64_128_b128", cnn, true},
      {"mlp_784_4096_4096_10_b1024_bf16", mode(wide, Precision::bf16, 1, false)},
      {"cnn_32_64_128_b128_bf16", mode(cnn, Precision::bf16, 1, false)},
      {"cnn_32_64_128_b128_accumulate4", mode(cnn, Precision::fp32, 4, false)},
      {"cnn_32_64_128_b128_recompute", mode(cnn, Precision::fp32, 1, true)},
  };
  for (auto& c : configs) {
    c.spec.train.lr = 1e-3;
    c.spec.train.weight_decay = 1e-4;
  }
  auto probe = make_cuda_backend(CudaBackendOptions{});
  std::printf("device: %s\n", probe->device_name().c_str());
  probe.reset();
  std::printf("| configuration | batch | steps/s (graphs) | steps/s (no graphs) | VRAM estimate MB | measured MB |\n"
              "| --- | --- | --- | --- | --- | --- |\n");
  std::string lines;
  for (const auto& c : configs) {
    const Run with = run(c.spec, true, seconds);
    const Run without = run(c.spec, false, seconds);
    const int64_t estimate = jobctl::cost::estimate_vram(model_stats(c.spec), c.spec.train.batch_size).total_bytes;
    std::printf("| %s | %d | %.1f | %.1f | %.0f | %.0f |\n", c.key.c_str(), c.spec.train.batch_size, with.steps_per_s,
                without.steps_per_s, static_cast<double>(estimate) / 1e6, static_cast<double>(with.device_bytes) / 1e6);
    std::fflush(stdout);
    char buf[320];
    std::snprintf(buf, sizeof buf, "RESULT name=%s impl=jobctl batch=%d steps_per_s=%.3f\n", c.key.c_str(),
                  c.spec.train.batch_size, with.steps_per_s);
    lines += buf;
    std::snprintf(buf, sizeof buf, "RESULT name=%s impl=jobctl-nographs batch=%d steps_per_s=%.3f\n", c.key.c_str(),
                  c.spec.train.batch_size, without.steps_per_s);
    lines += buf;
    std::snprintf(buf, sizeof buf, "VRAM name=%s estimate_bytes=%lld measured_bytes=%lld\n", c.key.c_str(),
                  static_cast<long long>(estimate), static_cast<long long>(with.device_bytes));
    lines += buf;
  }
  for (const auto& c : configs) runtime_check(c.key, c.spec, lines);
  std::fputs(lines.c_str(), stdout);
  return 0;
}
