// CPU training throughput against the machine's own sgemm, measured in the same run.
//
//   jobctl-train-bench-cpu [--threads N] [--seconds S] [--quick]
//
// For each model: samples/s of full training steps (gather, forward, loss, backward, AdamW) and
// the GFLOP/s that makes with model_stats()'s training FLOPs per sample (3 x forward: the usual
// 6 x parameters for dense layers; it counts the input gradient of the first layer, which the
// trainer skips, as every MFU figure does). The reference is cblas_sgemm (or the portable GEMM
// without OpenBLAS) on 1024^3 and 2048^3 products with the same threads; the table shows the
// model's GFLOP/s as a share of the better of the two. A second pair of columns counts only the
// matrix-product FLOPs the trainer really executes (no input gradient for the first layer).
//
// The models also run with train.recompute and with train.precision bf16, so the cost of each is
// measured in the same run (the "mode" column). Two rows end in a "RESULT name=... impl=jobctl
// batch=... steps_per_s=..." line, the format of torch_bench.py, which cpu_vs_torch.sh joins with
// PyTorch's figures. --quick: only those two rows.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_common.h"
#include "train/app/kernel_selection.h"
#include "train/kernels/cpu_backend.h"
#include "train/kernels/gemm.h"
#include "train/spec/model_stats.h"
#include "train/trainer/trainer.h"

using namespace jobctl::train;

namespace {

double sgemm_gflops(int n, double min_seconds) {
  std::vector<float> a(static_cast<size_t>(n) * n), b(a.size()), c(a.size());
  for (size_t i = 0; i < a.size(); ++i) {
    a[i] = static_cast<float>(i % 7) * 0.25f;
    b[i] = static_cast<float>(i % 5) * 0.5f;
  }
  gemm(Transpose::no, Transpose::no, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);  // warm-up
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    int iters = 0;
    const auto t0 = std::chrono::steady_clock::now();
    double s = 0;
    do {
      gemm(Transpose::no, Transpose::no, n, n, n, 1.0f, a.data(), n, b.data(), n, 0.0f, c.data(), n);
      ++iters;
      s = bench::seconds_since(t0);
    } while (s < min_seconds / 3);
    best = std::max(best, 2.0 * n * n * static_cast<double>(n) * iters / s / 1e9);
  }
  return best;
}

struct Result {
  std::string name;
  std::string mode;
  int batch;
  double samples_per_s;
  double step_ms;
  double gflops;           // model FLOPs (model_stats: 3 x forward)
  double executed_gflops;  // the matrix-product FLOPs the trainer actually runs
};

// Matrix-product FLOPs per sample the trainer runs: forward, weight gradient and input gradient of
// every dense and conv layer, except the input gradient of the first layer (nothing needs it).
double executed_flops_per_sample(Network& net) {
  double f = 0;
  bool first = true;
  for (const auto& l : net.layers()) {
    if (l->weight_count() == 0) continue;
    const Shape3 out = l->output_shape();
    const double per_product = 2.0 * static_cast<double>(l->weight_count()) * out.h * out.w;
    f += per_product * (first ? 2 : 3);
    first = false;
  }
  return f;
}

Result run_model(const JobSpec& spec, CpuBackend& backend, double min_seconds) {
  const DataSplits data = make_synthetic(spec.data);
  Trainer trainer(spec, backend, data.train, data.test);
  for (int i = 0; i < 5; ++i) trainer.step();  // warm-up: caches, BLAS buffers
  (void)trainer.last_loss();
  int64_t steps = 0, samples = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double s = 0;
  do {
    samples += trainer.batch_rows(trainer.global_step());
    trainer.step();
    ++steps;
    s = bench::seconds_since(t0);
  } while (s < min_seconds || steps < 20);
  (void)trainer.last_loss();
  s = bench::seconds_since(t0);
  const ModelStats stats = model_stats(spec);
  Result r;
  r.name = bench::model_name(spec);
  r.mode = std::string(to_string(spec.train.precision)) + (spec.train.recompute ? " recompute" : "");
  r.batch = spec.train.batch_size;
  r.samples_per_s = static_cast<double>(samples) / s;
  r.step_ms = 1000.0 * s / static_cast<double>(steps);
  r.gflops = stats.training_flops_per_sample * r.samples_per_s / 1e9;
  r.executed_gflops = executed_flops_per_sample(trainer.network()) * r.samples_per_s / 1e9;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  // The kernels jobctl-train would run on this machine (it may execute the bench again).
  const KernelReport kernels = select_kernels(argv);
  int threads = 0;
  double seconds = 3.0;
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string f = argv[i];
    if (f == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else if (f == "--seconds" && i + 1 < argc) seconds = std::atof(argv[++i]);
    else if (f == "--quick") quick = true;
    else {
      std::fprintf(stderr, "usage: %s [--threads N] [--seconds S] [--quick]\n", argv[0]);
      return 2;
    }
  }
  CpuBackend backend(threads);
  std::printf("machine: %s, %s\n", bench::cpu_model().c_str(), backend.device_name().c_str());
  std::printf("kernels: %s; self-check %s\n", kernels.selection.c_str(), kernels.self_check.c_str());
  const double g1024 = sgemm_gflops(1024, quick ? 0.5 : seconds);
  const double g2048 = sgemm_gflops(2048, quick ? 0.5 : seconds);
  const double ref = std::max(g1024, g2048);
  std::printf("sgemm reference: 1024^3 %.1f GFLOP/s, 2048^3 %.1f GFLOP/s\n\n", g1024, g2048);

  auto variant = [](JobSpec s, Precision p, bool recompute) {
    s.train.precision = p;
    s.train.recompute = recompute;
    return s;
  };
  const JobSpec mlp128 = bench::model_spec(ModelKind::mlp, {256, 128}, {}, 128, 16384);
  const JobSpec cnn128 = bench::model_spec(ModelKind::cnn, {128}, {32, 64}, 128, 8192);
  // The two configurations torch_bench.py also runs, under its names.
  const std::vector<std::pair<std::string, JobSpec>> keyed = {{"mlp_784_256_128_10_b128", mlp128},
                                                              {"cnn_32_64_128_b128", cnn128}};
  std::vector<JobSpec> specs;
  if (!quick) {
    specs = {bench::model_spec(ModelKind::mlp, {256, 128}, {}, 256, 16384),
             mlp128,
             variant(mlp128, Precision::fp32, true),
             variant(mlp128, Precision::bf16, false),
             bench::model_spec(ModelKind::cnn, {128}, {16, 32}, 128, 8192),
             cnn128,
             variant(cnn128, Precision::fp32, true),
             variant(cnn128, Precision::bf16, false)};
  } else {
    specs = {mlp128, cnn128};
  }
  std::printf("| model | mode | batch | samples/s | step ms | model GFLOP/s | %% of sgemm | executed GEMM GFLOP/s | %% of sgemm |\n");
  std::printf("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  std::string lines;
  for (const auto& spec : specs) {
    const Result r = run_model(spec, backend, seconds);
    std::printf("| %s | %s | %d | %.0f | %.3f | %.1f | %.0f%% | %.1f | %.0f%% |\n", r.name.c_str(), r.mode.c_str(), r.batch,
                r.samples_per_s, r.step_ms, r.gflops, 100.0 * r.gflops / ref, r.executed_gflops,
                100.0 * r.executed_gflops / ref);
    std::fflush(stdout);
    for (const auto& [key, k_spec] : keyed) {
      if (!(k_spec == spec)) continue;
      char buf[256];
      std::snprintf(buf, sizeof buf, "RESULT name=%s impl=jobctl batch=%d steps_per_s=%.3f\n", key.c_str(), r.batch,
                    1000.0 / r.step_ms);
      lines += buf;
    }
  }
  std::fputs(lines.c_str(), stdout);
  return 0;
}
