// jobctld's REST API (docs/api.md) as functions: each sends one request and returns the parsed
// JSON answer, or an Error. An error answer from the server becomes that same Error
// ({"error":{"code","message","field"}}), so callers print the server's own words; transport
// failures keep HttpClient's codes ("unavailable", "timeout", "cancelled", "io").
//
// Ownership and thread safety: owns one HttpClient; not thread-safe (one ApiClient per thread).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"
#include "client/http_client.h"

namespace jobctl::client {

// The Error an error answer carries: the server's own code, message and field
// ({"error":{...}}); a code this client does not know, or a body that is not that JSON, gives the
// code for the status (api_client.cpp, error_code_for_http_status).
Error error_from_answer(long status, std::string_view body);

// Turns an HTTP answer into JSON: 2xx with a JSON body (or 204: null) is a value; any other
// status becomes the server's Error (or a generic one naming the status when the body is not
// jobctld's error JSON).
Expected<nlohmann::json> json_from_response(const HttpResult& r);

class ApiClient {
 public:
  explicit ApiClient(std::string base_url, HttpClientOptions options = {});

  // Jobs (the user-facing API).
  Expected<nlohmann::json> submit_job(std::string_view spec_json);
  // A spec with `sweep`: one job per case (POST /v1/arrays): {"array_id", "jobs"}.
  Expected<nlohmann::json> submit_array(std::string_view spec_json);
  // `array`: only that job array's jobs.
  Expected<nlohmann::json> list_jobs(const std::optional<std::string>& state, int limit,
                                     const std::string& after, std::optional<int64_t> array = std::nullopt);
  Expected<nlohmann::json> cancel_array(int64_t array_id);
  Expected<nlohmann::json> get_job(int64_t id);
  Expected<nlohmann::json> cancel_job(int64_t id);
  // Asks a running job to checkpoint and be placed anew; `to` (local, on_demand, spot) and
  // `reason` are left out when empty.
  Expected<nlohmann::json> move_job(int64_t id, const std::string& to, const std::string& reason);
  // Every registered worker: {"workers": [...]}, following GET /v1/workers's pages.
  Expected<nlohmann::json> list_workers();
  Expected<nlohmann::json> list_instances();
  Expected<nlohmann::json> health();

  // The worker protocol. register_worker's answer carries the worker's secret; every other call
  // of the protocol must send it (set_worker_secret).
  Expected<nlohmann::json> register_worker(const nlohmann::json& body);
  void set_worker_secret(std::string secret) { http_.set_worker_secret(std::move(secret)); }
  // Long-polls for up to wait_s seconds; nullopt when no job was offered (HTTP 204).
  // `free_gpus`: the indices of the worker's GPUs free now (none given: all). `port`: a TCP port
  // free on the worker's address (a gang's master port if it becomes rank 0); 0: not sent.
  Expected<std::optional<nlohmann::json>> lease(int64_t worker_id, int wait_s,
                                                const std::optional<std::vector<int>>& free_gpus = std::nullopt,
                                                int port = 0);
  Expected<nlohmann::json> heartbeat(int64_t job_id, const nlohmann::json& body);
  Expected<nlohmann::json> complete(int64_t job_id, const nlohmann::json& body);
  Expected<nlohmann::json> fail(int64_t job_id, const nlohmann::json& body);
  Expected<nlohmann::json> preempt(int64_t job_id, const nlohmann::json& body);
  // POST /v1/jobs/{id}/image: the image a lease runs and its digest (protocol::ImageReport).
  Expected<nlohmann::json> report_image(int64_t job_id, const nlohmann::json& body);
  // The lease holder cannot resume from the job's checkpoint at `step` (docs/recovery.md).
  Expected<nlohmann::json> reject_checkpoint(int64_t job_id, int64_t step, const nlohmann::json& body);

  // A job's outputs (docs/api.md, "Outputs"): the list; one file's bytes written to `fd` (a piece
  // at a time); one file uploaded from `fd` (`bytes` long) by the lease holder.
  Expected<nlohmann::json> list_outputs(int64_t job_id);
  Status download_output(int64_t job_id, const std::string& path, int fd);
  Status upload_output(int64_t job_id, const std::string& path, int64_t worker_id, int64_t epoch, int fd,
                       uint64_t bytes);

  HttpClient& http() { return http_; }

 private:
  Expected<nlohmann::json> call(std::string_view method, const std::string& path,
                                std::string_view body = {}, long timeout_ms = 0);
  HttpClient http_;
};

}  // namespace jobctl::client
