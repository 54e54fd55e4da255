// `jobctl estimate SPEC [--gpus N]`: the memory per GPU and the compute of a command job's
// estimate.model (cost/transformer_estimate.h), with no daemon. The figures placement uses; the
// PyTorch comparison (tests/cost/torch_memory_check.py) reads them as JSON.
//
// Bad input: a message naming the field or flag on stderr and exit status 2; an unreadable file:
// exit status 1.
#include <CLI/CLI.hpp>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/fixed_decimal.h"
#include "base/terminal_text.h"
#include "cli/commands.h"
#include "cost/transformer_estimate.h"

namespace jobctl::cli {

namespace {

[[noreturn]] void estimate_fail(CliContext& ctx, const std::string& message, int code) {
  *ctx.err << "error: " << terminal_text(message, true) << "\n";
  throw CLI::RuntimeError(code);
}

nlohmann::json estimate_json(const cost::TransformerEstimate& e) {
  return {{"parameters", e.parameters},
          {"tokens", e.tokens},
          {"training_flops", e.training_flops},
          {"gpus", e.gpus},
          {"data_parallel", e.data_parallel},
          {"bytes_per_gpu",
           {{"weights", e.model_state.weights},
            {"gradients", e.model_state.gradients},
            {"optimizer", e.model_state.optimizer},
            {"activations", e.activation_bytes},
            {"allowance", e.allowance_bytes},
            {"total", e.total_bytes}}}};
}

void run_estimate(CliContext& ctx, const std::string& file, int gpus) {
  if (ctx.output != "table" && ctx.output != "json") estimate_fail(ctx, "-o: estimate prints table or json", 2);
  std::ifstream in(file, std::ios::binary);
  if (!in) estimate_fail(ctx, "cannot read job spec '" + file + "': " + std::strerror(errno), 1);
  std::ostringstream text;
  text << in.rdbuf();
  auto estimate = cost::estimate_transformer_spec(text.str(), gpus);
  if (!estimate) estimate_fail(ctx, estimate.error().message, 2);
  const cost::TransformerEstimate& e = *estimate;
  if (ctx.output == "json") {
    *ctx.out << estimate_json(e).dump(2) << "\n";
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
    << "  allowance     " << gib(e.allowance_bytes) << "\n"
    << "  total         " << gib(e.total_bytes) << "\n";
}

}  // namespace

void add_estimate_commands(CLI::App& app, CliContext& ctx) {
  struct Args {
    std::string file;
    int gpus = 0;
  };
  auto args = std::make_shared<Args>();
  auto* cmd = app.add_subcommand("estimate", "Memory per GPU and compute of a spec's estimate.model, with no daemon");
  cmd->add_option("SPEC", args->file, "job spec file (JSON) with estimate.model")->required();
  cmd->add_option("--gpus", args->gpus, "GPUs to estimate for (default: resources.gpus)")->check(CLI::Range(1, 4096));
  cmd->add_option("-o,--output", ctx.output, "table (default) or json");
  cmd->callback([&ctx, args] { run_estimate(ctx, args->file, args->gpus); });
}

}  // namespace jobctl::cli
