#include "cloud/sim/sim_routes.h"

#include <limits>

#include "net/json_body.h"

namespace jobctl::cloud::sim {

using net::error_response;
using net::HttpRequest;
using net::HttpResponse;
using net::json_object_body;
using net::json_response;
using net::only_keys;
using net::PathParams;
using net::Responder;
using net::Router;
using net::string_field;
using nlohmann::json;

namespace {

void answer(const Responder& respond, int ok, const Expected<json>& r) {
  respond(r ? json_response(ok, *r) : error_response(r.error()));
}

void launch(SimCloud& c, const HttpRequest& req, const Responder& respond) {
  auto body = json_object_body(req, /*required=*/true);
  if (!body) return respond(error_response(body.error()));
  if (auto st = only_keys(*body, {"instance_type", "region", "zone", "spot", "server", "tag", "name", "for_job", "worker_flags"}); !st)
    return respond(error_response(st.error()));
  SimLaunch l;
  auto type = string_field(*body, "instance_type", 100);
  if (!type) return respond(error_response(type.error()));
  l.instance_type = *type;
  auto region = string_field(*body, "region", 100, std::string());
  if (!region) return respond(error_response(region.error()));
  l.region = *region;
  auto zone = string_field(*body, "zone", 100, std::string());
  if (!zone) return respond(error_response(zone.error()));
  l.zone = *zone;
  if (auto it = body->find("spot"); it != body->end()) {
    if (!it->is_boolean())
      return respond(error_response(make_error(ErrorCode::invalid_argument, "spot must be true or false", "spot")));
    l.spot = it->get<bool>();
  }
  auto server = string_field(*body, "server", 2000, std::string());
  if (!server) return respond(error_response(server.error()));
  l.server = *server;
  if (!l.server.empty() && l.server.rfind("http://", 0) != 0 && l.server.rfind("https://", 0) != 0)
    return respond(error_response(make_error(ErrorCode::invalid_argument, "server must be an http:// or https:// URL", "server")));
  auto tag = string_field(*body, "tag", 200, std::string());
  if (!tag) return respond(error_response(tag.error()));
  l.tag = *tag;
  auto name = string_field(*body, "name", 200, std::string());
  if (!name) return respond(error_response(name.error()));
  l.name = *name;
  if (auto it = body->find("for_job"); it != body->end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 0)
      return respond(error_response(make_error(ErrorCode::invalid_argument, "for_job must be a job id (an integer >= 0)", "for_job")));
    l.for_job = it->get<int64_t>();
  }
  if (auto it = body->find("worker_flags"); it != body->end()) {
    if (!it->is_array() || it->size() > 64)
      return respond(error_response(make_error(ErrorCode::invalid_argument, "worker_flags must be an array of strings", "worker_flags")));
    for (const auto& f : *it) {
      if (!f.is_string() || f.get<std::string>().size() > 1024)
        return respond(error_response(make_error(ErrorCode::invalid_argument, "worker_flags must be an array of strings", "worker_flags")));
      l.worker_flags.push_back(f.get<std::string>());
    }
  }
  answer(respond, 201, c.launch(l));
}

}  // namespace

Router make_sim_router(SimCloud& c) {
  Router r;
  r.add("GET", "/healthz", [&c](const HttpRequest&, const PathParams&, Responder respond) {
    respond(json_response(200, json{{"status", "ok"},
                                    {"sim_seconds", c.sim_seconds_now()},
                                    {"spot_capacity", c.spot_capacity_now()}}));
  });
  r.add("GET", "/offers", [&c](const HttpRequest&, const PathParams&, Responder respond) {
    respond(json_response(200, c.offers_json()));
  });
  r.add("POST", "/instances", [&c](const HttpRequest& req, const PathParams&, Responder respond) {
    launch(c, req, respond);
  });
  r.add("GET", "/instances", [&c](const HttpRequest& req, const PathParams&, Responder respond) {
    if (auto st = net::only_query_keys(req, {"tag"}); !st) return respond(error_response(st.error()));
    respond(json_response(200, c.list(req.query_param("tag").value_or(""))));
  });
  r.add("GET", "/instances/{id}", [&c](const HttpRequest&, const PathParams& p, Responder respond) {
    answer(respond, 200, c.describe(p.at(0)));
  });
  r.add("POST", "/instances/{id}/terminate", [&c](const HttpRequest&, const PathParams& p, Responder respond) {
    answer(respond, 200, c.terminate(p.at(0)));
  });
  r.add("POST", "/instances/{id}/interrupt", [&c](const HttpRequest& req, const PathParams& p, Responder respond) {
    auto body = json_object_body(req, /*required=*/false);
    if (!body) return respond(error_response(body.error()));
    if (auto st = only_keys(*body, {"reason"}); !st) return respond(error_response(st.error()));
    auto reason = string_field(*body, "reason", 200, std::string("requested"));
    if (!reason) return respond(error_response(reason.error()));
    answer(respond, 200, c.interrupt(p.at(0), *reason));
  });
  // EC2's instance metadata path, per instance: 404 until a notice, then the action document.
  r.add("GET", "/instances/{id}/latest/meta-data/spot/instance-action",
        [&c](const HttpRequest&, const PathParams& p, Responder respond) {
          auto a = c.instance_action(p.at(0));
          if (!a) return respond(error_response(a.error()));
          if (!*a)
            return respond(error_response(make_error(ErrorCode::not_found, "no interruption notice for " + p.at(0))));
          respond(json_response(200, **a));
        });
  r.add("GET", "/interruptions", [&c](const HttpRequest& req, const PathParams&, Responder respond) {
    if (auto st = net::only_query_keys(req, {"tag", "since_ms"}); !st) return respond(error_response(st.error()));
    int64_t since = 0;
    if (auto s = req.query_param("since_ms")) {
      auto v = net::parse_int_param(*s, "since_ms", 0, std::numeric_limits<int64_t>::max());
      if (!v) return respond(error_response(v.error()));
      since = *v;
    }
    respond(json_response(200, c.interruptions(req.query_param("tag").value_or(""), since)));
  });
  r.add("GET", "/billing", [&c](const HttpRequest&, const PathParams&, Responder respond) {
    respond(json_response(200, c.billing()));
  });
  return r;
}

}  // namespace jobctl::cloud::sim
