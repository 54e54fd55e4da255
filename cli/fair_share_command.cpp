// jobctl fairshare [-o table|json]
// Each user's fair share as jobctld orders jobs by it (docs/cost-model.md, "Fair share"): their
// share, their decayed usage (price-weighted GPU-hours) and their factor 2^(-usage/share), both
// normalised over the users.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/cost_command_support.h"
#include "cli/table.h"

namespace jobctl::cli {

namespace {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void run_fair_share(CliContext& ctx) {
  check_output(ctx, {"table", "json"});
  nlohmann::json j = daemon_call(ctx, "GET", "/v1/fair-share");
  if (ctx.output == "json") {
    *ctx.out << j.dump(2) << "\n";
    return;
  }
  if (!j.value("enabled", false)) {
    *ctx.out << "fair share is off (placement.fair_share.enabled; on by default when auth is on): jobs wait in "
                "priority, then age, order\n";
    return;
  }
  Table t({"user", "share", "share (normalised)", "usage (GPU-h, price-weighted, decayed)", "usage (normalised)",
           "factor"});
  for (const auto& u : j.value("users", nlohmann::json::array()))
    t.add_row({u.value("user", ""), fixed(u.value("share", 0.0), 2), fixed(u.value("normalized_share", 0.0), 3),
               fixed(u.value("usage", 0.0), 4), fixed(u.value("normalized_usage", 0.0), 3),
               fixed(u.value("factor", 0.0), 3)});
  t.print(*ctx.out);
  const nlohmann::json w = j.value("weights", nlohmann::json::object());
  *ctx.out << "half-life " << fixed(j.value("half_life_days", 0.0), 1) << " days; a job's order: "
           << fixed(w.value("priority", 0.0), 0) << " x priority/100 + " << fixed(w.value("fair_share", 0.0), 0)
           << " x factor + " << fixed(w.value("age", 0.0), 0) << " x age/" << fixed(w.value("max_age_days", 0.0), 1)
           << " days + " << fixed(w.value("size", 0.0), 0) << " x GPUs/widest, highest first\n";
}

}  // namespace

void add_fair_share_command(CLI::App& app, CliContext& ctx) {
  auto* fs = app.add_subcommand("fairshare", "Each user's fair share: share, decayed usage and factor");
  fs->add_option("-o,--output", ctx.output, "table (default) or json");
  fs->callback([&ctx] { run_fair_share(ctx); });
}

}  // namespace jobctl::cli
