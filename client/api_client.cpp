#include "client/api_client.h"

namespace jobctl::client {

using nlohmann::json;

namespace {

// The kind a client assumes for an error answer whose body names no code it knows.
ErrorCode error_code_for_http_status(long status) {
  switch (status) {
    case 400: return ErrorCode::invalid_argument;
    case 401: return ErrorCode::unauthenticated;
    case 403: return ErrorCode::permission_denied;
    case 404: return ErrorCode::not_found;
    case 405: return ErrorCode::method_not_allowed;
    case 409: return ErrorCode::conflict;
    case 413: return ErrorCode::payload_too_large;
    case 415: return ErrorCode::unsupported_media_type;
    case 429: return ErrorCode::rate_limited;
    case 431: return ErrorCode::header_too_large;
    case 504: return ErrorCode::timeout;
    default: return status >= 500 ? ErrorCode::unavailable : ErrorCode::invalid_argument;
  }
}

}  // namespace

Error error_from_answer(long status, std::string_view body_text) {
  const json body = json::parse(body_text, nullptr, /*allow_exceptions=*/false);
  const std::string http = "HTTP " + std::to_string(status);
  if (!body.is_discarded() && body.is_object() && body.contains("error") && body["error"].is_object()) {
    const json& e = body["error"];
    Error err;
    const auto named = e.contains("code") && e["code"].is_string()
                           ? error_code_from_string(e["code"].get<std::string>())
                           : std::nullopt;
    err.code = named.value_or(error_code_for_http_status(status));
    err.message = e.contains("message") && e["message"].is_string() ? e["message"].get<std::string>() : http;
    if (e.contains("field") && e["field"].is_string()) err.field = e["field"].get<std::string>();
    return err;
  }
  const std::string snippet(body_text.substr(0, 200));
  return make_error(error_code_for_http_status(status),
                    "the server answered " + http + (snippet.empty() ? "" : ": " + snippet));
}

Expected<json> json_from_response(const HttpResult& r) {
  if (r.status == 204) return json(nullptr);
  if (r.status >= 200 && r.status < 300) {
    json body = json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (body.is_discarded())
      return make_error(ErrorCode::io, "the server answered " + std::to_string(r.status) +
                                  " with a body that is not JSON");
    return body;
  }
  return error_from_answer(r.status, r.body);
}

ApiClient::ApiClient(std::string base_url, HttpClientOptions options)
    : http_(std::move(base_url), std::move(options)) {}

Expected<json> ApiClient::call(std::string_view method, const std::string& path,
                               std::string_view body, long timeout_ms) {
  auto r = http_.request(method, path, body, timeout_ms);
  if (!r) return r.error();
  return json_from_response(*r);
}

Expected<json> ApiClient::submit_job(std::string_view spec_json) {
  return call("POST", "/v1/jobs", spec_json);
}

Expected<json> ApiClient::submit_array(std::string_view spec_json) {
  return call("POST", "/v1/arrays", spec_json);
}

Expected<json> ApiClient::cancel_array(int64_t array_id) {
  return call("POST", "/v1/arrays/" + std::to_string(array_id) + "/cancel", "{}");
}

Expected<json> ApiClient::list_jobs(const std::optional<std::string>& state, int limit,
                                    const std::string& after, std::optional<int64_t> array) {
  std::string path = "/v1/jobs?limit=" + std::to_string(limit);
  if (array) path += "&array=" + std::to_string(*array);
  if (state) path += "&state=" + url_encode(*state);
  if (!after.empty()) path += "&after=" + url_encode(after);
  return call("GET", path);
}

Expected<json> ApiClient::get_job(int64_t id) {
  return call("GET", "/v1/jobs/" + std::to_string(id));
}

Expected<json> ApiClient::cancel_job(int64_t id) {
  return call("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", "{}");
}

Expected<json> ApiClient::move_job(int64_t id, const std::string& to, const std::string& reason) {
  json body = json::object();
  if (!to.empty()) body["to"] = to;
  if (!reason.empty()) body["reason"] = reason;
  return call("POST", "/v1/jobs/" + std::to_string(id) + "/move", body.dump());
}

Expected<json> ApiClient::list_workers() {
  // Every page, the way `next` chains them (GET /v1/workers is paginated).
  json all = json::array();
  std::string after;
  for (;;) {
    auto page = call("GET", "/v1/workers" + (after.empty() ? std::string() : "?after=" + after));
    if (!page) return page;
    if (!page->is_object() || !(*page)["workers"].is_array())
      return make_error(ErrorCode::internal, "GET /v1/workers answered without a workers list");
    for (auto& w : (*page)["workers"]) all.push_back(std::move(w));
    const json& next = (*page)["next"];
    if (!next.is_string() || next.get<std::string>() == after) break;
    after = next.get<std::string>();
  }
  return json{{"workers", std::move(all)}};
}

Expected<json> ApiClient::list_instances() { return call("GET", "/v1/instances"); }

Expected<json> ApiClient::health() { return call("GET", "/healthz"); }

Expected<json> ApiClient::register_worker(const json& body) {
  return call("POST", "/v1/workers/register", body.dump());
}

Expected<std::optional<json>> ApiClient::lease(int64_t worker_id, int wait_s,
                                               const std::optional<std::vector<int>>& free_gpus, int port) {
  // The server holds the request for up to wait_s; allow that plus a margin.
  const long timeout_ms = static_cast<long>(wait_s) * 1000 + 15000;
  std::string path = "/v1/workers/" + std::to_string(worker_id) + "/lease?wait_s=" + std::to_string(wait_s);
  if (free_gpus) {
    path += "&free_gpus=";
    for (size_t i = 0; i < free_gpus->size(); ++i) path += (i ? "," : "") + std::to_string((*free_gpus)[i]);
  }
  if (port > 0) path += "&port=" + std::to_string(port);
  auto r = http_.request("POST", path, "{}", timeout_ms);
  if (!r) return r.error();
  if (r->status == 204) return std::optional<json>{};
  auto j = json_from_response(*r);
  if (!j) return j.error();
  return std::optional<json>(std::move(*j));
}

Expected<json> ApiClient::heartbeat(int64_t job_id, const json& body) {
  return call("POST", "/v1/jobs/" + std::to_string(job_id) + "/heartbeat", body.dump());
}

Expected<json> ApiClient::complete(int64_t job_id, const json& body) {
  return call("POST", "/v1/jobs/" + std::to_string(job_id) + "/complete", body.dump());
}

Expected<json> ApiClient::fail(int64_t job_id, const json& body) {
  return call("POST", "/v1/jobs/" + std::to_string(job_id) + "/fail", body.dump());
}

Expected<json> ApiClient::preempt(int64_t job_id, const json& body) {
  return call("POST", "/v1/jobs/" + std::to_string(job_id) + "/preempt", body.dump());
}

Expected<json> ApiClient::report_image(int64_t job_id, const json& body) {
  return call("POST", "/v1/jobs/" + std::to_string(job_id) + "/image", body.dump());
}

Expected<json> ApiClient::reject_checkpoint(int64_t job_id, int64_t step, const json& body) {
  return call("POST", "/v1/jobs/" + std::to_string(job_id) + "/checkpoints/" + std::to_string(step) + "/reject",
              body.dump());
}

Expected<json> ApiClient::list_outputs(int64_t job_id) {
  return call("GET", "/v1/jobs/" + std::to_string(job_id) + "/outputs");
}

Status ApiClient::download_output(int64_t job_id, const std::string& path, int fd) {
  // Long enough for a large file over a slow link; the server sends it a piece at a time.
  constexpr long kTransferTimeoutMs = 30 * 60 * 1000;
  auto r = http_.request_streaming("GET", "/v1/jobs/" + std::to_string(job_id) + "/outputs/file?path=" + url_encode(path),
                                   FileStreams{.download_fd = fd}, kTransferTimeoutMs);
  if (!r) return r.error();
  if (r->status != 200) return error_from_answer(r->status, r->body);
  return {};
}

Status ApiClient::upload_output(int64_t job_id, const std::string& path, int64_t worker_id, int64_t epoch, int fd,
                                uint64_t bytes) {
  constexpr long kTransferTimeoutMs = 30 * 60 * 1000;
  auto r = http_.request_streaming("PUT",
                                   "/v1/jobs/" + std::to_string(job_id) + "/outputs?path=" + url_encode(path) +
                                       "&worker_id=" + std::to_string(worker_id) + "&epoch=" + std::to_string(epoch),
                                   FileStreams{.upload_fd = fd, .upload_bytes = bytes}, kTransferTimeoutMs);
  if (!r) return r.error();
  if (r->status != 201) return error_from_answer(r->status, r->body);
  return {};
}

}  // namespace jobctl::client
