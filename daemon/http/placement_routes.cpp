#include "daemon/http/placement_routes.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include "cost/breakeven.h"
#include "cost/cost_json.h"
#include "cost/fleet_plan.h"
#include "cost/gpu_specs.h"
#include "daemon/http/caller.h"
#include "daemon/http/route_access.h"
#include "daemon/ledger/ledger_report.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

using nlohmann::json;
using placement::PlacementService;

namespace {

Expected<double> number_param(const std::string& text, const std::string& field) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
    return make_error(ErrorCode::invalid_argument, field + " must be a number (got '" + text.substr(0, 40) + "')", field);
  return v;
}

void quote(placement::PlacementService& p, const net::HttpRequest& req, const net::Responder& respond) {
  if (req.body.empty())
    return respond(net::error_response(make_error(ErrorCode::invalid_argument, "a job spec (JSON) is required", "body")));
  if (!net::is_json_content_type(req.content_type))
    return respond(net::error_response(make_error(ErrorCode::unsupported_media_type,
                                             "the job spec must be sent with Content-Type: application/json",
                                             "Content-Type")));
  auto q = p.quote(req.body);
  if (!q) {
    Error e = q.error();
    if (e.field.empty()) e.field = "body";
    return respond(net::error_response(e));
  }
  respond(net::json_response(200, *q));
}

void spend(ledger::Ledger& ledger, const net::HttpRequest& req, const net::Responder& respond) {
  int64_t from = 0, to = std::numeric_limits<int64_t>::max();
  std::string group_by = "job";
  for (const auto& [key, value] : req.query) {
    if (key == "from" || key == "to") {
      auto v = net::parse_int_param(value, key, 0, std::numeric_limits<int64_t>::max());
      if (!v) return respond(net::error_response(v.error()));
      (key == "from" ? from : to) = *v;
    } else if (key == "group_by") {
      group_by = value;
    } else {
      return respond(net::error_response(
          net::unknown_query_parameter(key)));
    }
  }
  // A user sees only what was billed to them (their jobs); admins, and everyone without auth, all.
  auto r = ledger::spend_report(ledger, from, to, group_by, caller_of(req).job_scope());
  if (!r) return respond(net::error_response(r.error()));
  respond(net::json_response(200, cost::to_json(*r)));
}

// The same figures as `jobctl report breakeven` (cli/cost_commands.cpp), against the daemon's
// catalog (the built-in one plus any configured files).
void breakeven(placement::PlacementService& p, const net::HttpRequest& req, const net::Responder& respond) {
  std::map<std::string, std::string> q;
  for (const auto& [key, value] : req.query) q[key] = value;
  static const std::vector<std::string> kKnown = {
      "gpu", "purchase_usd", "offer", "region", "setup_usd", "power_kw", "pue", "electricity_usd_per_kwh",
      "lifetime_years", "utilisation", "maintenance_usd_per_year"};
  for (const auto& [key, value] : q)
    if (std::find(kKnown.begin(), kKnown.end(), key) == kKnown.end())
      return respond(net::error_response(
          net::unknown_query_parameter(key)));
  for (const char* required : {"gpu", "purchase_usd", "offer"})
    if (!q.count(required))
      return respond(net::error_response(make_error(ErrorCode::invalid_argument, std::string(required) + " is required", required)));
  const cost::GpuSpec* spec = cost::find_gpu(q["gpu"]);
  if (!spec) {
    std::string near;
    for (const auto& n : cost::closest_gpu_names(q["gpu"])) near += (near.empty() ? "" : ", ") + n;
    return respond(net::error_response(make_error(
        ErrorCode::invalid_argument, "unknown GPU model '" + q["gpu"].substr(0, 40) + "'; closest known names: " + near, "gpu")));
  }
  auto ref = cost::parse_offer_ref(q["offer"]);
  if (!ref) return respond(net::error_response(make_error(ErrorCode::invalid_argument, ref.error().message, "offer")));
  cost::BreakevenInput in;
  in.local.gpu_model = std::string(spec->name);
  in.local.power_kw = spec->tdp_w / 1000.0;
  in.local.electricity_usd_per_kwh = 0.15;
  struct Field { const char* name; double* target; };
  for (Field f : {Field{"purchase_usd", &in.local.purchase_usd}, Field{"setup_usd", &in.local.setup_usd},
                  Field{"power_kw", &in.local.power_kw}, Field{"pue", &in.local.pue},
                  Field{"electricity_usd_per_kwh", &in.local.electricity_usd_per_kwh},
                  Field{"lifetime_years", &in.local.lifetime_years}, Field{"utilisation", &in.local.utilisation},
                  Field{"maintenance_usd_per_year", &in.local.maintenance_usd_per_year}}) {
    auto it = q.find(f.name);
    if (it == q.end()) continue;
    auto v = number_param(it->second, f.name);
    if (!v) return respond(net::error_response(v.error()));
    *f.target = *v;
  }
  if (in.local.purchase_usd < 0)
    return respond(net::error_response(make_error(ErrorCode::invalid_argument, "purchase_usd must be >= 0", "purchase_usd")));
  const auto offers = p.offers();
  const auto chosen = cost::breakeven_offer(offers, ref->first, ref->second, q.count("region") ? q["region"] : "");
  if (!chosen)
    return respond(net::error_response(make_error(ErrorCode::not_found, "no offer " + q["offer"].substr(0, 60) + " in the catalog", "offer")));
  const cost::Offer& offer = *chosen->offer;
  in.offer = chosen->label;
  in.cloud_usd_per_hour = chosen->on_demand_usd_per_gpu_hour;
  in.cloud_spot_usd_per_hour = chosen->spot_usd_per_gpu_hour;
  in.offer_gpu = cost::offer_gpu_name(offer);
  auto report = cost::breakeven_report(in);
  if (!report) return respond(net::error_response(report.error()));
  json j = *report;
  j["offer_region"] = offer.region;
  j["spot_zone"] = chosen->spot_zone;
  j["breakeven_hours"] = report->on_demand.breakeven_hours ? json(*report->on_demand.breakeven_hours) : json(nullptr);
  respond(net::json_response(200, j));
}

// The fleet plan (cost/fleet_plan.h) from the daemon's history: the query names the period, the
// model and the GPU that would be bought; each parameter's error names it.
void plan(placement::PlacementService& p, const net::HttpRequest& req, const net::Responder& respond) {
  placement::FleetPlanRequest r;
  struct NumberField { const char* name; std::optional<double>* target; };
  const NumberField numbers[] = {{"purchase_usd", &r.purchase_usd},
                                 {"setup_usd", &r.setup_usd},
                                 {"lifetime_years", &r.lifetime_years},
                                 {"power_kw", &r.power_kw},
                                 {"pue", &r.pue},
                                 {"electricity_usd_per_kwh", &r.electricity_usd_per_kwh},
                                 {"maintenance_usd_per_year", &r.maintenance_usd_per_year},
                                 {"utilisation", &r.utilisation}};
  for (const auto& [key, value] : req.query) {
    if (key == "from" || key == "to") {
      auto v = net::parse_int_param(value, key, 0, std::numeric_limits<int64_t>::max());
      if (!v) return respond(net::error_response(v.error()));
      (key == "from" ? r.from_ms : r.to_ms) = *v;
    } else if (key == "gpu") {
      r.gpu = value;
    } else if (key == "max_extra_gpus") {
      auto v = net::parse_int_param(value, key, 0, cost::kMaxPlanExtraGpus);
      if (!v) return respond(net::error_response(v.error()));
      r.max_extra_gpus = static_cast<int>(*v);
    } else if (key == "max_wait_hours") {
      auto v = number_param(value, key);
      if (!v) return respond(net::error_response(v.error()));
      r.max_wait_hours = *v;
    } else {
      const std::string& name = key;  // Clang 14 (the TSan build) cannot capture a structured binding
      auto it = std::find_if(std::begin(numbers), std::end(numbers), [&name](const NumberField& f) { return name == f.name; });
      if (it == std::end(numbers))
        return respond(net::error_response(
            net::unknown_query_parameter(key)));
      auto v = number_param(value, key);
      if (!v) return respond(net::error_response(v.error()));
      *it->target = *v;
    }
  }
  // A plan's period is always stated: from the epoch it would amortise purchases over decades.
  if (std::none_of(req.query.begin(), req.query.end(), [](const auto& kv) { return kv.first == "from"; }))
    return respond(net::error_response(make_error(ErrorCode::invalid_argument, "from is required (the period's start)", "from")));
  auto result = p.fleet_plan(r);
  if (!result) return respond(net::error_response(result.error()));
  respond(net::json_response(200, cost::to_json(*result)));
}

void catalog(placement::PlacementService& p, const net::HttpRequest&, const net::Responder& respond) {
  json offers = json::array();
  for (const auto& o : p.offers()) offers.push_back(o);
  respond(net::json_response(200, json{{"offers", offers}}));
}

void fair_share(placement::PlacementService& p, const net::HttpRequest&, const net::Responder& respond) {
  auto report = p.fair_share();
  if (!report) return respond(net::error_response(report.error()));
  const auto& fs = p.fair_share_settings();
  json users = json::array();
  if (*report)
    for (const auto& [name, e] : **report)
      users.push_back({{"user", name},
                       {"share", e.share},
                       {"normalized_share", e.norm_share},
                       {"usage", e.usage},
                       {"normalized_usage", e.norm_usage},
                       {"factor", e.factor}});
  respond(net::json_response(
      200, json{{"enabled", report->has_value()},
                {"half_life_days", fs.half_life_days},
                {"weights",
                 {{"priority", fs.weights.priority},
                  {"fair_share", fs.weights.fair_share},
                  {"age", fs.weights.age},
                  {"size", fs.weights.size},
                  {"max_age_days", static_cast<double>(fs.weights.max_age_ms) / 86'400'000.0}}},
                {"users", users}}));
}

}  // namespace

void add_placement_routes(net::Router& r, placement::PlacementService& p, ledger::Ledger& ledger) {
  auto S = [&p](auto fn) {
    return [&p, fn](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) { fn(p, req, respond); };
  };
  const RouteAccess user{Access::user};
  r.add(route("POST", "/v1/quote", user, S(quote)));
  r.add(route("GET", "/v1/reports/spend", user, [&ledger](const net::HttpRequest& req, const net::PathParams&,
                                                          net::Responder respond) { spend(ledger, req, respond); }));
  r.add(route("GET", "/v1/reports/breakeven", user, S(breakeven)));
  // The plan sums every user's jobs: a user token (which sees only its own spend) may not read it.
  r.add(route("GET", "/v1/reports/plan", {Access::admin}, S(plan)));
  r.add(route("GET", "/v1/catalog", user, S(catalog)));
  r.add(route("GET", "/v1/fair-share", user, S(fair_share)));
}

}  // namespace jobctl::daemon::http
