#include "daemon/http/checkpoint_routes.h"

#include <cstdio>
#include <limits>

#include "daemon/http/api_json.h"
#include "daemon/http/json_body.h"

namespace jobctl::daemon::http {

using nlohmann::json;
using service::CheckpointService;

namespace {

Expected<uint32_t> parse_crc(const std::string& text) {
  if (text.empty() || text.size() > 8 ||
      text.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    return make_error("invalid_argument", "crc32c must be 1 to 8 hexadecimal digits", "crc32c");
  return static_cast<uint32_t>(std::stoul(text, nullptr, 16));
}

void upload(CheckpointService& svc, const HttpRequest& req, const PathParams& p, const Responder& respond) {
  auto fail = [&](const Error& e) { respond(error_response(e)); };
  auto id = parse_int_param(p.at(0), "id", 1, kMaxId);
  if (!id) return fail(id.error());
  auto step = parse_int_param(p.at(1), "step", 0, kMaxId);
  if (!step) return fail(step.error());
  if (!req.content_type.empty() && req.content_type.rfind("application/octet-stream", 0) != 0)
    return fail(make_error("unsupported_media_type",
                           "a checkpoint must be sent with Content-Type: application/octet-stream",
                           "Content-Type"));
  service::CheckpointUpload up;
  up.job_id = *id;
  up.step = *step;
  bool have_worker = false, have_epoch = false, have_crc = false;
  for (const auto& [key, value] : req.query) {
    if (key == "worker_id") {
      auto v = parse_int_param(value, "worker_id", 1, kMaxId);
      if (!v) return fail(v.error());
      up.lease.worker_id = *v;
      have_worker = true;
    } else if (key == "epoch") {
      auto v = parse_int_param(value, "epoch", 1, kMaxId);
      if (!v) return fail(v.error());
      up.lease.epoch = *v;
      have_epoch = true;
    } else if (key == "crc32c") {
      auto v = parse_crc(value);
      if (!v) return fail(v.error());
      up.crc32c = *v;
      have_crc = true;
    } else {
      return fail(make_error("invalid_argument", "unknown query parameter " + key.substr(0, 40), key.substr(0, 40)));
    }
  }
  if (!have_worker) return fail(make_error("invalid_argument", "worker_id is required", "worker_id"));
  if (!have_epoch) return fail(make_error("invalid_argument", "epoch is required", "epoch"));
  if (!have_crc) return fail(make_error("invalid_argument", "crc32c is required", "crc32c"));
  up.bytes = req.body;
  auto row = svc.put(up);
  if (!row) return fail(row.error());
  respond(json_response(201, checkpoint_json(*row)));
}

void list(CheckpointService& svc, const HttpRequest& req, const PathParams& p, const Responder& respond) {
  if (!req.query.empty())
    return respond(error_response(make_error("invalid_argument", "unknown query parameter " + req.query[0].first.substr(0, 40), req.query[0].first.substr(0, 40))));
  auto id = parse_int_param(p.at(0), "id", 1, kMaxId);
  if (!id) return respond(error_response(id.error()));
  auto rows = svc.list(*id);
  if (!rows) return respond(error_response(rows.error()));
  json out = json::array();
  for (const auto& r : *rows) out.push_back(checkpoint_json(r));
  respond(json_response(200, json{{"job_id", *id}, {"checkpoints", std::move(out)}}));
}

void download(CheckpointService& svc, const HttpRequest& req, const PathParams& p, const Responder& respond) {
  if (!req.query.empty())
    return respond(error_response(make_error("invalid_argument", "unknown query parameter " + req.query[0].first.substr(0, 40), req.query[0].first.substr(0, 40))));
  auto id = parse_int_param(p.at(0), "id", 1, kMaxId);
  if (!id) return respond(error_response(id.error()));
  std::optional<int64_t> step;
  if (p.at(1) != "latest") {
    auto s = parse_int_param(p.at(1), "step", 0, kMaxId);
    if (!s) return respond(error_response(s.error()));
    step = *s;
  }
  auto got = svc.get(*id, step);
  if (!got) return respond(error_response(got.error()));
  char crc[9];
  std::snprintf(crc, sizeof crc, "%08x", got->first.crc32c);
  HttpResponse res;
  res.status = 200;
  res.content_type = "application/octet-stream";
  res.body = std::move(got->second);
  res.headers.emplace_back("X-Checkpoint-Step", std::to_string(got->first.step));
  res.headers.emplace_back("X-Checksum-CRC32C", crc);
  respond(std::move(res));
}

}  // namespace

bool is_checkpoint_upload(std::string_view method, std::string_view target) {
  if (method != "PUT") return false;
  const size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  return path.rfind("/v1/jobs/", 0) == 0 && path.find("/checkpoints/") != std::string_view::npos;
}

void add_checkpoint_routes(Router& r, CheckpointService& svc) {
  auto P = [&svc](auto fn) {
    return [&svc, fn](const HttpRequest& req, const PathParams& p, Responder respond) { fn(svc, req, p, respond); };
  };
  r.add("PUT", "/v1/jobs/{id}/checkpoints/{step}", P(upload));
  r.add("GET", "/v1/jobs/{id}/checkpoints", P(list));
  r.add("GET", "/v1/jobs/{id}/checkpoints/{step}", P(download));
}

}  // namespace jobctl::daemon::http
