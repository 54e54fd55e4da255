// `jobctl estimate SPEC [--gpus N] [--gpu MODEL]`: the memory per GPU and the compute of a command
// job's estimate.model (cost/transformer_estimate.h), with no daemon, and with --gpu the runtime
// placement starts from on that GPU model (before calibration). The figures placement uses; the
// PyTorch comparison (tests/cost/torch_memory_check.py) reads them as JSON.
//
// Bad input: a message naming the field or flag on stderr and exit status 2; an unreadable file:
// exit status 1.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/fixed_decimal.h"
#include "base/readable.h"
#include "base/terminal_text.h"
#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cost/gpu_specs.h"
#include "cost/runtime_estimate.h"
#include "cost/transformer_estimate.h"
#include "cost/workload.h"

namespace jobctl::cli {

namespace {

// The uncalibrated runtime on `gpus` GPUs of one model: the same formula placement prices with.
struct RuntimeOnGpu {
  const cost::GpuSpec* gpu = nullptr;
  cost::Precision precision = cost::Precision::fp32;
  double peak_tflops = 0;
  double utilisation = 0;
  double hours = 0;
};

RuntimeOnGpu runtime_on(const cost::GpuSpec& gpu, const train::TransformerWorkload& m, const cost::TransformerEstimate& e) {
  RuntimeOnGpu r;
  r.gpu = &gpu;
  r.precision = cost::compute_precision(m.precision);
  r.peak_tflops = cost::peak_tflops(gpu, r.precision);
  r.utilisation = cost::default_efficiency(gpu.name, cost::kTransformerModelKind);
  r.hours = cost::estimate_runtime_hours(e.training_flops, gpu, r.precision, r.utilisation, e.gpus);
  return r;
}

nlohmann::json estimate_json(const cost::TransformerEstimate& e, const RuntimeOnGpu* runtime) {
  nlohmann::json out = {{"parameters", e.parameters},
          {"tokens", e.tokens},
          {"training_flops", e.training_flops},
          {"gpus", e.gpus},
          {"data_parallel", e.data_parallel},
          {"bytes_per_gpu",
           {{"weights", e.model_state.weights},
            {"gradients", e.model_state.gradients},
            {"optimizer", e.model_state.optimizer},
            {"activations", e.activation_bytes},
            {"loss_peak", e.loss_peak_bytes},
            {"allowance", e.allowance_bytes},
            {"total", e.total_bytes}}}};
  if (runtime) {
    out["runtime"] = {{"gpu", std::string(runtime->gpu->name)},
                      {"precision", std::string(cost::to_string(runtime->precision))},
                      {"peak_tflops", runtime->peak_tflops},
                      {"utilisation", runtime->utilisation},
                      {"hours", runtime->hours}};
  }
  return out;
}

void run_estimate(CliContext& ctx, const std::string& file, int gpus, const std::string& gpu_name) {
  check_output(ctx, {"table", "json"});
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(ctx, "cannot read job spec '" + file + "': " + std::strerror(errno), 1);
  std::ostringstream text;
  text << in.rdbuf();
  auto estimate = cost::estimate_transformer_spec(text.str(), gpus);
  if (!estimate) fail(ctx, estimate.error().message, 2);
  const cost::TransformerEstimate& e = *estimate;
  std::optional<RuntimeOnGpu> runtime;
  if (!gpu_name.empty()) {
    const cost::GpuSpec* gpu = cost::find_gpu(gpu_name);
    if (!gpu || gpu->name == "cpu") {
      std::string known;
      for (const std::string& n : cost::closest_gpu_names(gpu_name)) known += (known.empty() ? "" : ", ") + n;
      fail(ctx, "--gpu: '" + gpu_name + "' is not a known GPU model (closest: " + known + ")", 2);
    }
    // The workload's own description, for its precision: the spec decoded once more is cheap.
    auto workload = cost::transformer_workload_of_spec(text.str());
    if (!workload) fail(ctx, workload.error().message, 2);
    runtime = runtime_on(*gpu, *workload, e);
  }
  if (ctx.output == "json") {
    *ctx.out << estimate_json(e, runtime ? &*runtime : nullptr).dump(2) << "\n";
    return;
  }
  const auto gib = [](double bytes) { return fixed_decimal(bytes / (1024.0 * 1024 * 1024), 2) + " GiB"; };
  std::ostream& o = *ctx.out;
  o << "parameters      " << fixed_decimal(e.parameters / 1e9, 3) << " B\n"
    << "tokens          " << fixed_decimal(e.tokens / 1e9, 3) << " B\n"
    << "training FLOPs  " << fixed_decimal(e.training_flops / 1e18, 1) << " EFLOP\n"
    << "GPUs            " << e.gpus << " (data-parallel " << e.data_parallel << ")\n"
    << "per GPU:\n"
    << "  weights       " << gib(e.model_state.weights) << "\n"
    << "  gradients     " << gib(e.model_state.gradients) << "\n"
    << "  optimizer     " << gib(e.model_state.optimizer) << "\n"
    << "  activations   " << gib(e.activation_bytes) << "\n"
    << "  loss peak     " << gib(e.loss_peak_bytes) << "\n"
    << "  allowance     " << gib(e.allowance_bytes) << "\n"
    << "  total         " << gib(e.total_bytes) << "\n";
  if (runtime) {
    o << "runtime on " << runtime->gpu->name << "  " << readable::duration_hours(runtime->hours) << " (" << e.gpus << " x "
      << fixed_decimal(runtime->peak_tflops, 0) << " TFLOP/s " << cost::to_string(runtime->precision) << " peak x "
      << fixed_decimal(runtime->utilisation * 100, 1) << "% utilisation, before calibration)\n";
  }
}

}  // namespace

void add_estimate_commands(CLI::App& app, CliContext& ctx) {
  struct Args {
    std::string file;
    int gpus = 0;
    std::string gpu;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("estimate", "Memory per GPU and compute of a spec's estimate.model, with no daemon");
  cmd->add_option("SPEC", args->file, "job spec file (JSON) with estimate.model")->required();
  cmd->add_option("--gpus", args->gpus, "GPUs to estimate for (default: resources.gpus)")->check(CLI::Range(1, 4096));
  cmd->add_option("--gpu", args->gpu, "GPU model to estimate the runtime on (H100, A10G, ...)");
  cmd->add_option("-o,--output", ctx.output, "table (default) or json");
  cmd->callback([&ctx, args] { run_estimate(ctx, args->file, args->gpus, args->gpu); });
}

}  // namespace jobctl::cli
