#include "daemon/http/webhook_routes.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/http/caller.h"
#include "daemon/http/route_access.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

using nlohmann::json;

namespace {

json webhook_json(const store::WebhookRow& w) {
  return json{{"id", w.id}, {"user", w.owner}, {"url", w.url}, {"events", w.events}, {"created_ms", w.created_ms}};
}

json delivery_json(const store::WebhookDeliveryRow& d) {
  return json{{"id", d.id},
              {"webhook", d.webhook_id},
              {"job", d.job_id},
              {"event", d.event},
              {"state", std::string(store::delivery_state_name(d.state))},
              {"attempts", d.attempts},
              {"next_attempt_ms", d.state == store::DeliveryState::pending ? json(d.next_attempt_ms) : json(nullptr)},
              {"last_status", d.last_status == 0 ? json(nullptr) : json(d.last_status)},
              {"last_error", d.last_error},
              {"created_ms", d.created_ms},
              {"finished_ms", d.finished_ms ? json(*d.finished_ms) : json(nullptr)}};
}

// The webhooks a caller may reach: a user's own; every one for an admin or with auth off.
std::optional<std::string> webhook_scope(const Caller& caller) { return caller.job_scope(); }

}  // namespace

void add_webhook_routes(net::Router& router, notify::WebhookService& webhooks) {
  const RouteAccess user{Access::user};
  router.add(route("POST", "/v1/webhooks", user, [&webhooks](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
    if (auto st = net::only_query_keys(req, {}); !st) return respond(net::error_response(st.error()));
    auto body = net::json_object_body(req, true);
    if (!body) return respond(net::error_response(body.error()));
    if (auto st = net::only_keys(*body, {"url", "events"}); !st) return respond(net::error_response(st.error()));
    auto url = net::string_field(*body, "url", 2048);
    if (!url) return respond(net::error_response(url.error()));
    std::vector<std::string> events;
    if (auto it = body->find("events"); it != body->end()) {
      bool ok = it->is_array() && it->size() <= 16;
      if (ok)
        for (const auto& e : *it) ok = ok && e.is_string();
      if (!ok)
        return respond(net::error_response(make_error(
            ErrorCode::invalid_argument, "events must be an array of event names, e.g. [\"succeeded\", \"failed\"]",
            "events")));
      for (const auto& e : *it) events.push_back(e.get<std::string>());
    }
    auto made = webhooks.create(caller_of(req).user, *url, std::move(events));
    if (!made) return respond(net::error_response(made.error()));
    json out = webhook_json(*made);
    out["secret"] = made->secret;
    net::HttpResponse res = net::json_response(201, out);
    res.headers.emplace_back("Location", "/v1/webhooks/" + std::to_string(made->id));
    respond(std::move(res));
  }));
  router.add(route("GET", "/v1/webhooks", user, [&webhooks](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
    if (auto st = net::only_query_keys(req, {}); !st) return respond(net::error_response(st.error()));
    auto list = webhooks.list(webhook_scope(caller_of(req)));
    if (!list) return respond(net::error_response(list.error()));
    json out = json::array();
    for (const auto& w : *list) out.push_back(webhook_json(w));
    respond(net::json_response(200, json{{"webhooks", std::move(out)}}));
  }));
  router.add(route("POST", "/v1/webhooks/{id}/delete", user, [&webhooks](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
    if (auto st = net::only_query_keys(req, {}); !st) return respond(net::error_response(st.error()));
    auto id = net::parse_int_param(p.at(0), "id", 1, net::kMaxId);
    if (!id) return respond(net::error_response(id.error()));
    auto body = net::json_object_body(req, false);
    if (!body) return respond(net::error_response(body.error()));
    if (auto st = net::only_keys(*body, {}); !st) return respond(net::error_response(st.error()));
    if (auto st = webhooks.remove(webhook_scope(caller_of(req)), *id); !st) return respond(net::error_response(st.error()));
    respond(net::json_response(200, json{{"deleted", *id}}));
  }));
  router.add(route("GET", "/v1/webhooks/{id}/deliveries", user, [&webhooks](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
    if (auto st = net::only_query_keys(req, {"limit"}); !st) return respond(net::error_response(st.error()));
    auto id = net::parse_int_param(p.at(0), "id", 1, net::kMaxId);
    if (!id) return respond(net::error_response(id.error()));
    int64_t limit = 50;
    for (const auto& [key, value] : req.query) {
      auto n = net::parse_int_param(value, "limit", 1, 1000);
      if (!n) return respond(net::error_response(n.error()));
      limit = *n;
    }
    auto list = webhooks.deliveries(webhook_scope(caller_of(req)), *id, static_cast<int>(limit));
    if (!list) return respond(net::error_response(list.error()));
    json out = json::array();
    for (const auto& d : *list) out.push_back(delivery_json(d));
    respond(net::json_response(200, json{{"deliveries", std::move(out)}}));
  }));
}

}  // namespace jobctl::daemon::http
