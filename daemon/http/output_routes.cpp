#include "daemon/http/output_routes.h"

#include "daemon/http/auth_gate.h"
#include "daemon/http/route_access.h"
#include "daemon/http/staged_body.h"
#include "daemon/http/upload_lease.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

using nlohmann::json;

namespace {

// The download is GET /v1/jobs/{id}/outputs/file?path=<path, percent-encoded>.
json stored_output_json(const store::OutputRow& o) {
  return {{"path", o.path}, {"bytes", o.bytes}, {"uploaded_ms", o.uploaded_ms}};
}

void upload_output(jobs::OutputService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  auto fail = [&](const Error& e) { respond(net::error_response(e)); };
  auto id = net::parse_int_param(p.at(0), "id", 1, net::kMaxId);
  if (!id) return fail(id.error());
  if (!req.content_type.empty() && req.content_type.rfind("application/octet-stream", 0) != 0)
    return fail(make_error(ErrorCode::unsupported_media_type,
                           "an output must be sent with Content-Type: application/octet-stream", "Content-Type"));
  jobs::OutputUpload up;
  up.job_id = *id;
  bool have_path = false;
  auto lease = upload_lease(req, [&](const std::string& key, const std::string& value) -> Status {
    if (key != "path") return net::unknown_query_parameter(key);
    up.path = value;
    have_path = true;
    return {};
  });
  if (!lease) return fail(lease.error());
  up.lease = *lease;
  if (!have_path) return fail(make_error(ErrorCode::invalid_argument, "path is required", "path"));
  auto body = staged_body(req, [&svc](std::string_view bytes) { return svc.stage(bytes); });
  if (!body) return fail(body.error());
  up.staged_file = std::move(body->path);
  up.bytes = body->bytes;
  auto row = svc.put(up);
  if (!row) return fail(row.error());
  respond(net::json_response(201, stored_output_json(*row)));
}

void list_outputs(jobs::OutputService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  if (!req.query.empty()) return respond(net::error_response(net::unknown_query_parameter(req.query[0].first)));
  auto id = net::parse_int_param(p.at(0), "id", 1, net::kMaxId);
  if (!id) return respond(net::error_response(id.error()));
  auto rows = svc.list(*id);
  if (!rows) return respond(net::error_response(rows.error()));
  json out = json::array();
  int64_t total = 0;
  for (const auto& r : *rows) {
    out.push_back(stored_output_json(r));
    total += r.bytes;
  }
  respond(net::json_response(200, json{{"job_id", *id}, {"bytes", total}, {"outputs", std::move(out)}}));
}

void download_output(jobs::OutputService& svc, DownloadSlots& slots, const net::HttpRequest& req, const net::PathParams& p,
              const net::Responder& respond) {
  auto id = net::parse_int_param(p.at(0), "id", 1, net::kMaxId);
  if (!id) return respond(net::error_response(id.error()));
  std::optional<std::string> path;
  for (const auto& [key, value] : req.query) {
    if (key != "path") return respond(net::error_response(net::unknown_query_parameter(key)));
    path = value;
  }
  if (!path) return respond(net::error_response(make_error(ErrorCode::invalid_argument, "path is required", "path")));
  auto got = svc.locate(*id, *path);
  if (!got) return respond(net::error_response(got.error()));
  respond(slots.file_answer(std::move(got->second), {{"X-Output-Bytes", std::to_string(got->first.bytes)}}));
}

}  // namespace

void add_output_routes(net::Router& r, jobs::OutputService& svc, DownloadSlots& slots) {
  auto P = [&svc](auto fn) {
    return [&svc, fn](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) { fn(svc, req, p, respond); };
  };
  // The job's owner, its lease holder (a resumed job's worker fetches the earlier outputs) and
  // an admin read them: checkpoint_reader's rule.
  const RouteAccess worker{Access::worker}, reader{Access::checkpoint_reader, "id"};
  // One output is at most the job's whole allowance: an upload past it is refused on its
  // Content-Length, or as its bytes stream past it, before it is staged whole.
  r.add(route("PUT", "/v1/jobs/{id}/outputs", worker, P(upload_output), net::Dispatch::pool,
              net::RequestBody::to_file(static_cast<size_t>(svc.options().max_bytes_per_job),
                                        "outputs.max_bytes_per_job")));
  r.add(route("GET", "/v1/jobs/{id}/outputs", reader, P(list_outputs)));
  r.add(route("GET", "/v1/jobs/{id}/outputs/file", reader,
              [&svc, &slots](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
                download_output(svc, slots, req, p, respond);
              }));
}

}  // namespace jobctl::daemon::http
