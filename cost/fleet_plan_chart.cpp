#include "cost/fleet_plan_chart.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/fixed_decimal.h"
#include "base/strings.h"
#include "cost/chart_ticks.h"

namespace jobctl::cost {

std::string fleet_plan_svg(const FleetPlan& p) {
  constexpr double W = 760, H = 440, left = 90, right = 200, top = 50, bottom = 60;
  const double pw = W - left - right, ph = H - top - bottom;
  const std::string& gpu = p.input.gpu_model;
  double ymax = 0;
  for (const auto& r : p.rows) ymax = std::max(ymax, r.total_usd);
  if (!(ymax > 0)) ymax = 1;
  const double ystep = chart_tick_step(ymax, 5);
  ymax = std::ceil(ymax / ystep) * ystep;
  const size_t n = p.rows.size();
  const double slot = pw / static_cast<double>(std::max<size_t>(n, 1));
  const double bar = std::max(2.0, slot * 0.7);
  auto X = [&](size_t i) { return left + slot * (static_cast<double>(i) + 0.5); };
  auto Y = [&](double usd) { return top + ph * (1.0 - std::min(usd, ymax) / ymax); };

  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W << ' ' << H
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<title>" << xml_escape("Fleet plan: " + gpu + " owned, cost against GPUs bought") << "</title>\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << left << "\" y=\"24\" font-size=\"15\" font-weight=\"bold\">"
    << xml_escape("Cost of " + fixed_decimal(p.period_hours / 24.0, 1) + " days of jobs by " + gpu + " GPUs bought") << "</text>\n";
  for (double y = 0; y <= ymax + 1e-9; y += ystep) {
    s << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << Y(y) << "\" y2=\"" << Y(y) << "\" stroke=\"#e5e5e5\"/>\n";
    s << "<text x=\"" << left - 8 << "\" y=\"" << Y(y) + 4 << "\" text-anchor=\"end\">$" << fixed_decimal(y, 0) << "</text>\n";
  }
  struct Part { const char* label; const char* colour; double FleetPlanRow::*field; };
  const Part parts[] = {{"today's owned GPUs", "#7f8c8d", &FleetPlanRow::fleet_usd},
                        {"purchase (bought)", "#1f5fbf", &FleetPlanRow::purchase_usd},
                        {"power + maintenance", "#6fa8dc", nullptr},
                        {"cloud", "#c0392b", &FleetPlanRow::cloud_usd},
                        {"other (not replayed)", "#d5d5d5", &FleetPlanRow::other_usd}};
  const size_t label_every = std::max<size_t>(1, n / 16);
  for (size_t i = 0; i < n; ++i) {
    const FleetPlanRow& r = p.rows[i];
    double base = 0;
    for (const auto& part : parts) {
      const double v = part.field ? r.*part.field : r.power_usd + r.maintenance_usd;
      if (v <= 0) continue;
      s << "<rect x=\"" << fixed_decimal(X(i) - bar / 2, 1) << "\" y=\"" << fixed_decimal(Y(base + v), 1) << "\" width=\""
        << fixed_decimal(bar, 1) << "\" height=\"" << fixed_decimal(Y(base) - Y(base + v), 1) << "\" fill=\"" << part.colour
        << "\"/>\n";
      base += v;
    }
    if (i % label_every == 0)
      s << "<text x=\"" << X(i) << "\" y=\"" << top + ph + 18 << "\" text-anchor=\"middle\">" << r.extra_gpus << "</text>\n";
  }
  s << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph << "\" fill=\"none\" stroke=\"#333\"/>\n";
  s << "<text x=\"" << left + pw / 2 << "\" y=\"" << H - 18 << "\" text-anchor=\"middle\">"
    << xml_escape(gpu + " GPUs bought (N), on top of today's " + std::to_string(p.input.owned_gpus_today)) << "</text>\n";
  s << "<text transform=\"translate(20," << top + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">USD over the period</text>\n";

  // Today's fleet and the cheapest N.
  auto marker = [&](size_t i, const std::string& label, const char* colour, double dy) {
    s << "<line x1=\"" << X(i) << "\" x2=\"" << X(i) << "\" y1=\"" << top << "\" y2=\"" << top + ph << "\" stroke=\"" << colour
      << "\" stroke-dasharray=\"4,3\"/>\n";
    s << "<text x=\"" << X(i) + 4 << "\" y=\"" << top + dy << "\" fill=\"" << colour << "\">" << xml_escape(label) << "</text>\n";
  };
  if (n > 0) marker(0, "today's fleet $" + fixed_decimal(p.rows[0].total_usd, 0), "#333", 14);
  const auto cheapest = static_cast<size_t>(p.cheapest_extra_gpus);
  if (cheapest < n && cheapest > 0)
    marker(cheapest, "cheapest: N = " + std::to_string(p.cheapest_extra_gpus) + ", $" + fixed_decimal(p.rows[cheapest].total_usd, 0),
           "#1e8449", 30);

  const double lx = left + pw + 16;
  double ly = top + 10;
  for (const auto& part : parts) {
    s << "<rect x=\"" << lx << "\" y=\"" << ly - 8 << "\" width=\"16\" height=\"12\" fill=\"" << part.colour << "\"/>\n";
    s << "<text x=\"" << lx + 22 << "\" y=\"" << ly + 2 << "\">" << xml_escape(part.label) << "</text>\n";
    ly += 20;
  }
  if (p.payback_months)
    s << "<text x=\"" << lx << "\" y=\"" << ly + 10 << "\">payback " << fixed_decimal(*p.payback_months, 1) << " months</text>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace jobctl::cost
