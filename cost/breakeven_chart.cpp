#include "cost/breakeven_chart.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "base/fixed_decimal.h"
#include "base/strings.h"
#include "cost/chart_ticks.h"

namespace jobctl::cost {

std::string breakeven_svg(const BreakevenReport& r) {
  constexpr double W = 760, H = 440, left = 80, right = 200, top = 50, bottom = 60;
  const double pw = W - left - right, ph = H - top - bottom;
  const auto& g = r.input.local;
  const double od = r.input.cloud_usd_per_hour;
  const double local_full = local_hourly_cost(g, LocalPricing::amortised, 1.0);
  double ymax = std::max({od * 2.0, local_full * 1.5, r.input.cloud_spot_usd_per_hour.value_or(0) * 2.0,
                          local_hourly_cost(g, LocalPricing::marginal, 1.0) * 1.5});
  if (!(ymax > 0)) ymax = 1;
  const double ystep = chart_tick_step(ymax, 5);
  ymax = std::ceil(ymax / ystep) * ystep;
  constexpr double umin = 0.05;

  auto X = [&](double u) { return left + pw * u; };
  auto Y = [&](double usd) { return top + ph * (1.0 - std::min(usd, ymax) / ymax); };

  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << ' ' << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<title>" << xml_escape("Break-even: " + g.gpu_model + " owned vs " + r.input.offer) << "</title>\n";
  s << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s << "<text x=\"" << left << "\" y=\"24\" font-size=\"15\" font-weight=\"bold\">"
    << xml_escape("Hourly cost by utilisation: " + g.gpu_model + " owned vs " + r.input.offer) << "</text>\n";
  s << "<defs><clipPath id=\"plot\"><rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw
    << "\" height=\"" << ph << "\"/></clipPath></defs>\n";

  // Grid and axes.
  for (double y = 0; y <= ymax + 1e-9; y += ystep) {
    s << "<line x1=\"" << left << "\" x2=\"" << left + pw << "\" y1=\"" << Y(y) << "\" y2=\"" << Y(y)
      << "\" stroke=\"#e5e5e5\"/>\n";
    s << "<text x=\"" << left - 8 << "\" y=\"" << Y(y) + 4 << "\" text-anchor=\"end\">$" << fixed_decimal(y, 2) << "</text>\n";
  }
  for (int pct = 0; pct <= 100; pct += 10) {
    const double x = X(pct / 100.0);
    s << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"" << top << "\" y2=\"" << top + ph
      << "\" stroke=\"#f0f0f0\"/>\n";
    s << "<text x=\"" << x << "\" y=\"" << top + ph + 18 << "\" text-anchor=\"middle\">" << pct << "%</text>\n";
  }
  s << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << pw << "\" height=\"" << ph
    << "\" fill=\"none\" stroke=\"#333\"/>\n";
  s << "<text x=\"" << left + pw / 2 << "\" y=\"" << H - 18 << "\" text-anchor=\"middle\">"
    << "utilisation (share of hours the GPU is in use)</text>\n";
  s << "<text transform=\"translate(20," << top + ph / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << "USD per hour of use</text>\n";

  // Series.
  auto polyline = [&](auto f, const char* colour, const char* dash) {
    s << "<polyline clip-path=\"url(#plot)\" fill=\"none\" stroke=\"" << colour << "\" stroke-width=\"2\"";
    if (dash[0]) s << " stroke-dasharray=\"" << dash << "\"";
    s << " points=\"";
    for (int i = 0; i <= 95; ++i) {
      const double u = umin + (1.0 - umin) * i / 95.0;
      s << fixed_decimal(X(u), 1) << ',' << fixed_decimal(Y(f(u)), 1) << ' ';
    }
    s << "\"/>\n";
  };
  polyline([&](double u) { return local_hourly_cost(g, LocalPricing::amortised, u); }, "#1f5fbf", "");
  polyline([&](double u) { return local_hourly_cost(g, LocalPricing::marginal, u); }, "#1f5fbf", "2,4");
  polyline([&](double) { return od; }, "#c0392b", "");
  if (r.input.cloud_spot_usd_per_hour)
    polyline([&](double) { return *r.input.cloud_spot_usd_per_hour; }, "#e67e22", "8,4");

  // Break-even marker.
  if (r.on_demand.utilisation_threshold && *r.on_demand.utilisation_threshold <= 1.0) {
    const double u = *r.on_demand.utilisation_threshold;
    s << "<line x1=\"" << X(u) << "\" x2=\"" << X(u) << "\" y1=\"" << top << "\" y2=\"" << top + ph
      << "\" stroke=\"#555\" stroke-dasharray=\"4,3\"/>\n";
    s << "<text x=\"" << X(u) + 4 << "\" y=\"" << top + 14 << "\">break-even "
      << fixed_decimal(u * 100.0, 1) << "% (" << fixed_decimal(*r.on_demand.breakeven_hours_per_month, 0) << " h/month)</text>\n";
  }

  // Legend.
  const double lx = left + pw + 16;
  double ly = top + 10;
  auto legend = [&](const std::string& label, const char* colour, const char* dash) {
    s << "<line x1=\"" << lx << "\" x2=\"" << lx + 24 << "\" y1=\"" << ly << "\" y2=\"" << ly << "\" stroke=\""
      << colour << "\" stroke-width=\"2\"";
    if (dash[0]) s << " stroke-dasharray=\"" << dash << "\"";
    s << "/>\n<text x=\"" << lx + 30 << "\" y=\"" << ly + 4 << "\">" << xml_escape(label) << "</text>\n";
    ly += 20;
  };
  legend(g.gpu_model + " owned, amortised", "#1f5fbf", "");
  legend(g.gpu_model + " owned, marginal", "#1f5fbf", "2,4");
  legend(r.input.offer + " on-demand $" + fixed_decimal(od, 2), "#c0392b", "");
  if (r.input.cloud_spot_usd_per_hour)
    legend(r.input.offer + " spot $" + fixed_decimal(*r.input.cloud_spot_usd_per_hour, 2), "#e67e22", "8,4");
  if (r.on_demand.breakeven_hours)
    s << "<text x=\"" << lx << "\" y=\"" << ly + 10 << "\">break-even after " << fixed_decimal(*r.on_demand.breakeven_hours, 1)
      << " h of use</text>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace jobctl::cost
