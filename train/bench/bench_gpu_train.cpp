// GPU training throughput of jobctl's CUDA path (steps/s), for comparison with PyTorch eager on
// the same models, batches and optimizer (torch_bench.py; run_on_gpu.sh runs both and joins them).
//
//   jobctl-train-bench-gpu [--seconds S]
//
// Each configuration trains on synthetic 28x28 data held on the GPU (as torch_bench.py does),
// AdamW (lr 1e-3, weight decay 1e-4), no gradient clipping, and is timed over at least S seconds
// after 30 warm-up steps, synchronising only at the end (neither side reads the loss every step).
// It runs with CUDA graphs (the default) and without, so the graphs' share is visible.
// Output: one "RESULT name=... impl=... batch=... steps_per_s=..." line per run, then a table.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_common.h"
#include "train/kernels/cuda_backend.h"
#include "train/trainer/trainer.h"

using namespace jobctl::train;

namespace {

struct Config {
  std::string key;
  JobSpec spec;
};

double steps_per_second(const JobSpec& spec, bool graphs, double min_seconds) {
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
  return static_cast<double>(steps) / bench::seconds_since(t0);
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
  std::vector<Config> configs = {
      {"mlp_784_256_128_10_b128", bench::model_spec(ModelKind::mlp, {256, 128}, {}, 128, 16384)},
      {"mlp_784_4096_4096_10_b1024", bench::model_spec(ModelKind::mlp, {4096, 4096}, {}, 1024, 16384)},
      {"cnn_32_64_128_b128", bench::model_spec(ModelKind::cnn, {128}, {32, 64}, 128, 16384)},
  };
  for (auto& c : configs) {
    c.spec.train.lr = 1e-3;
    c.spec.train.weight_decay = 1e-4;
  }
  auto probe = make_cuda_backend(CudaBackendOptions{});
  std::printf("device: %s\n", probe->device_name().c_str());
  probe.reset();
  std::printf("| model | batch | jobctl steps/s (graphs) | jobctl steps/s (no graphs) |\n| --- | --- | --- | --- |\n");
  std::string lines;
  for (const auto& c : configs) {
    const double with = steps_per_second(c.spec, true, seconds);
    const double without = steps_per_second(c.spec, false, seconds);
    std::printf("| %s | %d | %.1f | %.1f |\n", bench::model_name(c.spec).c_str(), c.spec.train.batch_size, with, without);
    std::fflush(stdout);
    char buf[256];
    std::snprintf(buf, sizeof buf, "RESULT name=%s impl=jobctl batch=%d steps_per_s=%.3f\n", c.key.c_str(),
                  c.spec.train.batch_size, with);
    lines += buf;
    std::snprintf(buf, sizeof buf, "RESULT name=%s impl=jobctl-nographs batch=%d steps_per_s=%.3f\n", c.key.c_str(),
                  c.spec.train.batch_size, without);
    lines += buf;
  }
  std::fputs(lines.c_str(), stdout);
  return 0;
}
