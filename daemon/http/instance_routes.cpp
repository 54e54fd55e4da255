#include "daemon/http/instance_routes.h"

#include <nlohmann/json.hpp>

#include "daemon/http/route_access.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

using nlohmann::json;

namespace {

json nullable_id(const std::optional<int64_t>& v) { return v ? json(*v) : json(nullptr); }

void list_instances(provisioning::Provisioner* p, const net::HttpRequest& req, const net::Responder& respond) {
  if (!req.query.empty()) {
    const std::string key = req.query.front().first.substr(0, 40);
    return respond(net::error_response(make_error(ErrorCode::invalid_argument, "unknown query parameter " + key, key)));
  }
  if (p == nullptr)
    return respond(net::json_response(200, json{{"provider", nullptr}, {"instances", json::array()}}));
  auto views = p->instances();
  if (!views) return respond(net::error_response(views.error()));
  json list = json::array();
  for (const auto& v : *views) list.push_back(instance_json(v));
  const std::string err = p->last_error();
  respond(net::json_response(200, json{{"provider", std::string(p->provider_kind())},
                                  {"tag", p->settings().tag},
                                  {"reconciled", p->reconciled()},
                                  {"last_error", err.empty() ? json(nullptr) : json(err)},
                                  {"instances", std::move(list)}}));
}

}  // namespace

json instance_json(const provisioning::InstanceView& v) {
  const store::InstanceRow& r = v.row;
  return json{{"id", r.id},
              {"provider", r.provider},
              {"instance_type", r.instance_type},
              {"region", r.region},
              {"zone", r.zone},
              {"spot", r.spot},
              {"state", r.state},
              {"launched_for_job_id", r.job_id == 0 ? json(nullptr) : json(r.job_id)},
              {"worker_id", nullable_id(v.worker_id)},
              {"job_id", nullable_id(v.running_job_id)},
              {"usd_per_hour", r.usd_per_hour},
              {"on_demand_usd_per_hour", r.on_demand_usd_per_hour},
              {"billed_usd", v.billed_usd},
              {"launched_ms", r.launched_ms},
              {"ended_ms", nullable_id(r.ended_ms)},
              {"idle_since_ms", nullable_id(r.idle_since_ms)},
              {"notice_ms", nullable_id(r.notice_ms)},
              {"reason", r.reason}};
}

void add_instance_routes(net::Router& r, provisioning::Provisioner* p) {
  r.add(route("GET", "/v1/instances", {Access::user},
              [p](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
                list_instances(p, req, respond);
              }));
}

}  // namespace jobctl::daemon::http
