// The candidate table and reason of a placement (cli/commands.h, print_placement), shown by
// `jobctl quote` and `jobctl show`.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/readable.h"
#include "base/terminal_text.h"
#include "cli/commands.h"
#include "cli/table.h"

namespace jobctl::cli {

void print_placement(std::ostream& out, const nlohmann::json& p, bool all) {
  if (!p.is_object()) return;
  const nlohmann::json rows = p.contains("candidates") && p["candidates"].is_array() ? p["candidates"] : nlohmann::json::array();
  auto rejected = [](const nlohmann::json& c) { return c.contains("rejection") && c["rejection"].is_string(); };
  auto cost = [](const nlohmann::json& c) {
    return c.contains("estimated_cost_usd") && c["estimated_cost_usd"].is_number() ? c["estimated_cost_usd"].get<double>()
                                                                                    : std::numeric_limits<double>::infinity();
  };
  // "wait": until the job starts (a local worker freeing, a cloud instance booting, a Slurm queue).
  // "GPU": the machine's (an instance's, a Slurm node's); "uses": the GPUs the job takes there,
  // "GiB/GPU" its memory on each.
  std::vector<std::string> header{"option", "GPU", "uses", "GiB/GPU", "$/h", "wait", "est. time", "est. cost",
                                  "meets deadline", "chosen"};
  if (all) header.push_back("rejected");
  Table t(header, 48);
  auto add = [&](const nlohmann::json& c) {
    // No price (a spot row of an offer with no spot market): no wait, time or cost either ("-").
    const bool priced = c.contains("usd_per_hour") && c["usd_per_hour"].is_number();
    auto figure = [&](const char* k) { return c.contains(k) && c[k].is_number() ? c[k].get<double>() : std::nan(""); };
    auto number = [&](const char* k) { return priced ? figure(k) : std::nan(""); };
    std::vector<std::string> row{c.value("label", c.value("option", "")),
                                 c.value("gpu", "") + " x" + std::to_string(c.value("machine_gpus", c.value("gpus", 1))),
                                 std::to_string(c.value("job_gpus", c.value("gpus", 1))),
                                 std::isnan(figure("memory_gib_per_gpu")) ? "-" : fixed_decimal(figure("memory_gib_per_gpu"), 1),
                                 readable::usd_per_hour(number("usd_per_hour")),
                                 readable::duration_hours(number("queue_wait_hours")),
                                 readable::duration_hours(number("estimated_hours")),
                                 readable::usd(number("estimated_cost_usd")),
                                 c.value("meets_deadline", false) ? "yes" : "no",
                                 c.value("chosen", false) ? "*" : ""};
    if (all) row.push_back(c.value("rejected", c.value("rejection_reason", "")));
    t.add_row(row);
  };
  size_t fitting = 0;
  std::map<std::string, size_t> by_reason;
  for (const auto& c : rows) {
    if (rejected(c))
      ++by_reason[c["rejection"].get<std::string>()];
    else
      ++fitting;
  }
  if (all) {
    for (const auto& c : rows) add(c);
  } else {
    // The chosen option first, then the cheapest other fitting ones.
    std::vector<const nlohmann::json*> shown;
    for (const auto& c : rows)
      if (!rejected(c) && c.value("chosen", false)) shown.push_back(&c);
    std::vector<const nlohmann::json*> rest;
    for (const auto& c : rows)
      if (!rejected(c) && !c.value("chosen", false)) rest.push_back(&c);
    std::stable_sort(rest.begin(), rest.end(), [&](const auto* a, const auto* b) { return cost(*a) < cost(*b); });
    for (const auto* c : rest) {
      if (shown.size() >= kPlacementRows) break;
      shown.push_back(c);
    }
    for (const auto* c : shown) add(*c);
  }
  if (t.empty())
    out << "no option fits\n";
  else
    t.print(out);
  if (all && !t.empty()) out << "every option, in the order placement weighed them\n";
  if (!all) {
    // The order as it is: the chosen row leads even when a fitting option costs less ("gpu: any"
    // prefers a GPU; a deadline rules out the cheapest; an idle worker beats waiting).
    const size_t listed = std::min(fitting, kPlacementRows);
    if (fitting > 0) {
      out << "the chosen option first, then the other fitting options by estimated cost, cheapest first";
      if (fitting > listed) out << "; " << listed << " of " << fitting << " fitting options listed (--all lists every row)";
      out << "\n";
    }
    if (!by_reason.empty()) {
      size_t total = 0;
      std::string parts;
      std::vector<std::pair<std::string, size_t>> sorted(by_reason.begin(), by_reason.end());
      std::stable_sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
      for (const auto& [reason, n] : sorted) {
        total += n;
        parts += (parts.empty() ? "" : ", ") + std::to_string(n) + " " + reason;
      }
      out << "rejected: " << total << " (" << parts << ")\n";
    }
  }
  out << "reason: " << terminal_text(p.value("reason", ""), true) << "\n";
  // What the job is to the cost model, a built-in model's as a described transformer's.
  if (p.contains("workload") && p["workload"].is_object()) {
    const nlohmann::json& w = p["workload"];
    auto figure = [&](const char* k) { return w.contains(k) && w[k].is_number() ? w[k].get<double>() : std::nan(""); };
    std::string line = w.value("model_kind", "");
    if (!std::isnan(figure("parameters"))) line += ", " + readable::magnitude(figure("parameters")) + " parameters";
    if (!std::isnan(figure("training_flops"))) line += ", " + readable::magnitude(figure("training_flops")) + " FLOPs";
    if (!std::isnan(figure("memory_gib_per_gpu")))
      line += ", " + fixed_decimal(figure("memory_gib_per_gpu"), 2) + " GiB per GPU on " +
              std::to_string(w.value("gpus", 1)) + (w.value("gpus", 1) == 1 ? " GPU" : " GPUs");
    if (w.value("gpus_auto", false)) line += " (gpus auto: each option at the smallest count that fits)";
    out << "workload: " << terminal_text(line, true) << "\n";
  }
}

}  // namespace jobctl::cli
