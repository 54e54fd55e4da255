#include "daemon/http/checkpoint_routes.h"

#include <cstdio>
#include <limits>

#include "daemon/http/api_json.h"
#include "daemon/http/auth_gate.h"
#include "daemon/http/route_access.h"
#include "daemon/http/staged_body.h"
#include "daemon/http/upload_lease.h"
#include "net/json_body.h"
#include "protocol/worker_messages.h"

namespace jobctl::daemon::http {

using nlohmann::json;
using jobs::CheckpointService;

namespace {

Expected<uint32_t> parse_crc(const std::string& text) {
  if (text.empty() || text.size() > 8 ||
      text.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    return make_error(ErrorCode::invalid_argument, "crc32c must be 1 to 8 hexadecimal digits", "crc32c");
  return static_cast<uint32_t>(std::stoul(text, nullptr, 16));
}

void upload(jobs::CheckpointService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  auto fail = [&](const Error& e) { respond(net::error_response(e)); };
  auto id = net::parse_int_param(p.at(0), "id", 1, net::kMaxId);
  if (!id) return fail(id.error());
  auto step = net::parse_int_param(p.at(1), "step", 0, net::kMaxId);
  if (!step) return fail(step.error());
  if (!req.content_type.empty() && req.content_type.rfind("application/octet-stream", 0) != 0)
    return fail(make_error(ErrorCode::unsupported_media_type,
                           "a checkpoint must be sent with Content-Type: application/octet-stream",
                           "Content-Type"));
  jobs::CheckpointUpload up;
  up.job_id = *id;
  up.step = *step;
  bool have_crc = false;
  auto lease = upload_lease(req, [&](const std::string& key, const std::string& value) -> Status {
    if (key != "crc32c") return net::unknown_query_parameter(key);
    auto v = parse_crc(value);
    if (!v) return v.error();
    up.crc32c = *v;
    have_crc = true;
    return {};
  });
  if (!lease) return fail(lease.error());
  up.lease = *lease;
  if (!have_crc) return fail(make_error(ErrorCode::invalid_argument, "crc32c is required", "crc32c"));
  // The bytes: the file the server streamed them to, or (no server: tests, tools) in memory.
  auto body = staged_body(req, [&svc](std::string_view bytes) { return svc.stage(bytes); });
  if (!body) return fail(body.error());
  up.staged_file = std::move(body->path);
  up.bytes = body->bytes;
  auto row = svc.put(up);
  if (!row) return fail(row.error());
  respond(net::json_response(201, checkpoint_json(*row)));
}

void list(jobs::CheckpointService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  if (!req.query.empty())
    return respond(net::error_response(net::unknown_query_parameter(req.query[0].first)));
  auto id = net::parse_int_param(p.at(0), "id", 1, net::kMaxId);
  if (!id) return respond(net::error_response(id.error()));
  auto rows = svc.list(*id);
  if (!rows) return respond(net::error_response(rows.error()));
  json out = json::array();
  for (const auto& r : *rows) out.push_back(checkpoint_json(r));
  respond(net::json_response(200, json{{"job_id", *id}, {"checkpoints", std::move(out)}}));
}

void download(jobs::CheckpointService& svc, DownloadSlots& slots, const net::HttpRequest& req, const net::PathParams& p,
              const net::Responder& respond) {
  if (!req.query.empty())
    return respond(net::error_response(net::unknown_query_parameter(req.query[0].first)));
  auto id = net::parse_int_param(p.at(0), "id", 1, net::kMaxId);
  if (!id) return respond(net::error_response(id.error()));
  std::optional<int64_t> step;
  if (p.at(1) != "latest") {
    auto s = net::parse_int_param(p.at(1), "step", 0, net::kMaxId);
    if (!s) return respond(net::error_response(s.error()));
    step = *s;
  }
  auto got = svc.locate(*id, step);
  if (!got) return respond(net::error_response(got.error()));
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", got->first.crc32c);
  respond(slots.file_answer(std::move(got->second), {{"X-Checkpoint-Step", std::to_string(got->first.step)},
                                                      {"X-Checksum-CRC32C", crc}}));
}

// POST /v1/jobs/{id}/checkpoints/{step}/reject: the lease holder cannot resume from it.
void reject(jobs::CheckpointService& svc, const net::HttpRequest& req, const net::PathParams& p, const net::Responder& respond) {
  auto fail = [&](const Error& e) { respond(net::error_response(e)); };
  auto id = net::parse_int_param(p.at(0), "id", 1, net::kMaxId);
  if (!id) return fail(id.error());
  auto step = net::parse_int_param(p.at(1), "step", 0, net::kMaxId);
  if (!step) return fail(step.error());
  auto body = net::json_object_body(req, /*required=*/true);
  if (!body) return fail(body.error());
  auto rejection = protocol::checkpoint_rejection_from_json(*body);
  if (!rejection) return fail(rejection.error());
  if (auto st = check_acting_worker(req, rejection->lease.worker_id); !st) return fail(st.error());
  jobs::CheckpointRejection r;
  r.job_id = *id;
  r.step = *step;
  r.lease = rejection->lease;
  r.error = std::move(rejection->error);
  r.fallback_step = rejection->fallback_step;
  auto left = svc.reject(r);
  if (!left) return fail(left.error());
  json out = json::array();
  for (const auto& c : *left) out.push_back(checkpoint_json(c));
  respond(net::json_response(200, json{{"job_id", *id}, {"checkpoints", std::move(out)}}));
}

}  // namespace

void add_checkpoint_routes(net::Router& r, jobs::CheckpointService& svc, DownloadSlots& slots) {
  auto P = [&svc](auto fn) {
    return [&svc, fn](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) { fn(svc, req, p, respond); };
  };
  const RouteAccess worker{Access::worker}, reader{Access::checkpoint_reader, "id"};
  // An upload streams to a file (at most the server's upload limit: checkpoints.max_bytes), never
  // whole in memory.
  r.add(route("PUT", "/v1/jobs/{id}/checkpoints/{step}", worker, P(upload), net::Dispatch::pool,
              net::RequestBody::to_file()));
  r.add(route("GET", "/v1/jobs/{id}/checkpoints", reader, P(list)));
  r.add(route("GET", "/v1/jobs/{id}/checkpoints/{step}", reader,
              [&svc, &slots](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
                download(svc, slots, req, p, respond);
              }));
  r.add(route("POST", "/v1/jobs/{id}/checkpoints/{step}/reject", worker, P(reject)));
}

}  // namespace jobctl::daemon::http
