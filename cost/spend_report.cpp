#include "cost/spend_report.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "base/fixed_decimal.h"
#include "base/strings.h"

namespace jobctl::cost {

using nlohmann::json;

namespace {

// With no on-demand equivalent at all, the on-demand figure and the savings are null.
json group_json(const SpendGroup& g) {
  const bool known = g.has_equivalent();
  return {{"key", g.key},
          {"seconds", g.seconds},
          {"usd", g.usd},
          {"on_demand_usd", known ? json(g.on_demand_usd) : json(nullptr)},
          {"no_on_demand_equivalent_usd", g.no_equivalent_usd},
          {"savings_usd", known ? json(g.savings_usd()) : json(nullptr)},
          {"savings_fraction", known ? json(g.savings_fraction()) : json(nullptr)}};
}

}  // namespace

SpendReport aggregate_spend(const std::vector<SpendInterval>& intervals, int64_t from_ms, int64_t to_ms,
                            const std::string& group_by) {
  SpendReport r;
  r.from_ms = from_ms;
  r.to_ms = to_ms;
  r.group_by = group_by;
  r.total.key = "total";
  std::map<std::string, SpendGroup> by_key;
  for (const auto& iv : intervals) {
    double part = 1.0;
    if (iv.end_ms > iv.start_ms) {
      const int64_t lo = std::max(iv.start_ms, from_ms), hi = std::min(iv.end_ms, to_ms);
      if (hi <= lo) continue;
      part = static_cast<double>(hi - lo) / static_cast<double>(iv.end_ms - iv.start_ms);
    } else if (iv.start_ms < from_ms || iv.start_ms >= to_ms) {
      continue;
    }
    SpendGroup& g = by_key[iv.key];
    g.key = iv.key;
    for (SpendGroup* t : {&g, &r.total}) {
      t->seconds += iv.billed_seconds * part;
      t->usd += iv.usd * part;
      if (iv.has_equivalent)
        t->on_demand_usd += iv.on_demand_usd * part;
      else
        t->no_equivalent_usd += iv.usd * part;
    }
  }
  for (auto& [k, g] : by_key) r.groups.push_back(g);
  std::stable_sort(r.groups.begin(), r.groups.end(),
                   [](const SpendGroup& a, const SpendGroup& b) { return a.usd > b.usd; });
  return r;
}

json to_json(const SpendReport& r) {
  json groups = json::array();
  for (const auto& g : r.groups) groups.push_back(group_json(g));
  return {{"from_ms", r.from_ms}, {"to_ms", r.to_ms}, {"group_by", r.group_by},
          {"groups", groups}, {"total", group_json(r.total)}};
}

Expected<SpendReport> spend_report_from_json(const json& j) {
  try {
    SpendReport r;
    r.from_ms = j.at("from_ms").get<int64_t>();
    r.to_ms = j.at("to_ms").get<int64_t>();
    r.group_by = j.at("group_by").get<std::string>();
    auto read = [](const json& g) {
      SpendGroup out;
      out.key = g.at("key").get<std::string>();
      out.seconds = g.at("seconds").get<double>();
      out.usd = g.at("usd").get<double>();
      const json& od = g.at("on_demand_usd");
      out.on_demand_usd = od.is_null() ? 0.0 : od.get<double>();
      out.no_equivalent_usd = g.value("no_on_demand_equivalent_usd", od.is_null() ? out.usd : 0.0);
      return out;
    };
    for (const auto& g : j.at("groups")) r.groups.push_back(read(g));
    r.total = read(j.at("total"));
    return r;
  } catch (const json::exception& e) {
    return make_error(ErrorCode::invalid_argument, std::string("not a spend report: ") + e.what());
  }
}

std::string spend_csv(const SpendReport& r) {
  std::ostringstream out;
  // Empty on-demand and savings fields: no on-demand equivalent.
  out << r.group_by << ",resource_hours,spent_usd,on_demand_usd,savings_usd,savings_fraction,no_on_demand_equivalent_usd\n";
  auto line = [&](const SpendGroup& g) {
    const bool known = g.has_equivalent();
    out << csv_field(g.key) << "," << fixed_decimal(g.seconds / 3600.0, 4) << "," << fixed_decimal(g.usd, 4) << ","
        << (known ? fixed_decimal(g.on_demand_usd, 4) : "") << "," << (known ? fixed_decimal(g.savings_usd(), 4) : "")
        << "," << (known ? fixed_decimal(g.savings_fraction(), 4) : "") << "," << fixed_decimal(g.no_equivalent_usd, 4)
        << "\n";
  };
  for (const auto& g : r.groups) line(g);
  line(r.total);
  return out.str();
}

std::string spend_svg(const SpendReport& r) {
  const int bar = 18, gap = 14, left = 160, width = 720, top = 40;
  const int h = top + static_cast<int>(r.groups.size()) * (2 * bar + gap) + 40;
  double max_usd = 0;
  for (const auto& g : r.groups) max_usd = std::max({max_usd, g.usd, g.on_demand_usd});
  if (max_usd <= 0) max_usd = 1;
  const double scale = (width - left - 120) / max_usd;
  std::ostringstream s;
  s << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << h
    << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s << "<text x=\"10\" y=\"20\" font-size=\"14\">Spend by " << xml_escape(r.group_by) << ": $" << fixed_decimal(r.total.usd, 2)
    << " spent, ";
  if (r.total.has_equivalent())
    s << "$" << fixed_decimal(r.total.on_demand_usd, 2) << " all on-demand, " << fixed_decimal(r.total.savings_fraction() * 100, 1)
      << "% saved";
  else
    s << "no on-demand equivalent";
  s << "</text>\n";
  int y = top;
  for (const auto& g : r.groups) {
    s << "<text x=\"10\" y=\"" << y + bar + 4 << "\">" << xml_escape(g.key) << "</text>\n";
    s << "<rect x=\"" << left << "\" y=\"" << y << "\" width=\"" << fixed_decimal(g.usd * scale, 1) << "\" height=\"" << bar
      << "\" fill=\"#2b7bb9\"/><text x=\"" << left + static_cast<int>(g.usd * scale) + 4 << "\" y=\"" << y + 13
      << "\">$" << fixed_decimal(g.usd, 2) << " spent</text>\n";
    s << "<rect x=\"" << left << "\" y=\"" << y + bar << "\" width=\"" << fixed_decimal(g.on_demand_usd * scale, 1)
      << "\" height=\"" << bar << "\" fill=\"#c0c0c0\"/><text x=\"" << left + static_cast<int>(g.on_demand_usd * scale) + 4
      << "\" y=\"" << y + bar + 13 << "\">$" << fixed_decimal(g.on_demand_usd, 2) << " on-demand</text>\n";
    y += 2 * bar + gap;
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace jobctl::cost
