#include "daemon/http/bundle_routes.h"

#include <unistd.h>

#include "daemon/auth/secret.h"
#include "daemon/http/caller.h"
#include "daemon/http/route_access.h"
#include "daemon/http/staged_body.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

using nlohmann::json;

namespace {

void upload(jobs::BundleService& bundles, const net::HttpRequest& req, const net::Responder& respond) {
  auto fail = [&](const Error& e) { respond(net::error_response(e)); };
  if (!req.query.empty())
    return fail(net::unknown_query_parameter(req.query[0].first));
  // Sent as application/octet-stream (net::BrowserGuard refuses other types); the body's magic says what it is.
  // The bytes: the file the server streamed them to, or (no server: tests, tools) in memory.
  auto body = staged_body(req, [&bundles](std::string_view bytes) { return bundles.stage(bytes); });
  if (!body) return fail(body.error());
  const std::string staged = std::move(body->path);
  // Hashed from the file a piece at a time: the bundle is never held in memory.
  auto sha = auth::sha256_file_hex(staged);
  if (!sha) {
    ::unlink(staged.c_str());
    return fail(sha.error());
  }
  auto stored = bundles.store(caller_of(req).user, staged, *sha);
  if (!stored) return fail(stored.error());
  respond(net::json_response(201, json{{"bundle", stored->sha256}, {"bytes", stored->bytes}}));
}

void download(const jobs::BundleService& bundles, DownloadSlots& slots, const net::PathParams& p,
              const net::Responder& respond) {
  auto path = bundles.path_of(p.at(0));
  if (!path) return respond(net::error_response(path.error()));
  respond(slots.file_answer(std::move(*path)));
}

}  // namespace

void add_bundle_routes(net::Router& r, jobs::BundleService& bundles, DownloadSlots& slots) {
  // An upload streams to a file (at most the server's upload limit, and at most a user's whole
  // quota: past either it is refused before it is staged whole), never whole in memory. A
  // bundle is read by the worker that runs its job: any token (bundles are named by their SHA-256,
  // which only the specs naming them show).
  r.add(route("POST", "/v1/bundles", {Access::user},
              [&bundles](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
                upload(bundles, req, respond);
              },
              net::Dispatch::pool,
              net::RequestBody::to_file(static_cast<size_t>(bundles.options().quota_bytes_per_user),
                                        "bundles.quota_bytes_per_user")));
  r.add(route("GET", "/v1/bundles/{sha256}", {Access::any_token},
              [&bundles, &slots](const net::HttpRequest&, const net::PathParams& p, net::Responder respond) {
                download(bundles, slots, p, respond);
              }));
}

}  // namespace jobctl::daemon::http
