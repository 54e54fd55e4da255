// jobctl gpus [-o table|json]
// The GPU models jobctl knows (cost/gpu_specs.h), their figures, and the names resources.gpu takes.
#include <CLI/CLI.hpp>

#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "base/fixed_decimal.h"
#include "cli/cost_command_support.h"
#include "cli/table.h"
#include "cost/gpu_specs.h"

namespace jobctl::cli {

namespace {

void run_gpus(CliContext& ctx) {
  check_output(ctx, {"table", "json"});
  if (ctx.output == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& g : cost::gpu_specs())
      j.push_back({{"name", g.name},           {"family", g.family},         {"form", g.form},
                   {"fp32_tflops", g.fp32_tflops}, {"tf32_tflops", g.tf32_tflops}, {"fp16_tflops", g.fp16_tflops},
                   {"bf16_tflops", g.bf16_tflops}, {"memory_gb", g.memory_gb},     {"bandwidth_gbs", g.bandwidth_gbs},
                   {"tdp_w", g.tdp_w},         {"source", g.source}});
    *ctx.out << j.dump(2) << "\n";
    return;
  }
  Table t({"name", "family", "form", "memory GB", "FP32 TFLOPS", "BF16 TFLOPS", "GB/s", "TDP W"});
  for (const auto& g : cost::gpu_specs())
    t.add_row({std::string(g.name), std::string(g.family), g.form.empty() ? "-" : std::string(g.form),
               fixed_decimal(g.memory_gb, 0), fixed_decimal(g.fp32_tflops, 1), fixed_decimal(cost::peak_tflops(g, cost::Precision::bf16), 1),
               fixed_decimal(g.bandwidth_gbs, 0), fixed_decimal(g.tdp_w, 0)});
  t.print(*ctx.out);
  *ctx.out << "resources.gpu takes a family (\"A100\": any A100), a family and memory (\"A100-80GB\"), a variant "
              "(\"H100-PCIe\"), \"any\" or \"cpu\"; case, spaces and vendor words do not matter.\n";
}

}  // namespace

void add_gpus_command(CLI::App& app, CliContext& ctx) {
  auto* gpus = app.add_subcommand("gpus", "The GPU models jobctl knows, their figures, and the names resources.gpu takes");
  gpus->add_option("-o,--output", ctx.output, "table (default) or json");
  gpus->callback([&ctx] { run_gpus(ctx); });
}

}  // namespace jobctl::cli
