// jobctld's REST API: the jobs' and workers' route table (in api_routes.cpp, each route with who
// may call it: route_access.h) and its thin handlers. Each handler decodes the request, calls one
// JobService method and encodes the answer; docs/api.md documents every route.
//
// The worker protocol's handlers act for the worker whose secret the request carries (the gate
// sets the Caller's worker_id: caller.h, auth_gate.h); a body naming another worker is refused
// (403).
//
// Ownership: the router's handlers borrow the service, which must outlive the router.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "net/router.h"
#include "daemon/jobs/job_service.h"

namespace jobctl::daemon::http {

struct ApiInfo {
  std::string version = "0.1.0";
  // Told of every accepted heartbeat's progress (job id, the progress object as JSON text), after
  // the service took it: the dashboard's progress history (daemon/store/progress_history.h).
  std::function<void(int64_t job_id, const std::string& progress_json)> on_progress;
  // Why the store cannot write now, if it cannot (store::Store::write_problem): /healthz then
  // answers 503 "degraded" naming it. Unset: always healthy.
  std::function<std::optional<std::string>()> store_problem;
  // The largest heartbeat `progress` object accepted, as JSON text (413 past it).
  size_t max_progress_bytes = 16 << 10;
  // Given every accepted heartbeat's log lines (job id, the program's output since the last one)
  // before the heartbeat is answered: the jobs' logs on disk (daemon/store/job_log_store.h). An
  // error answers the heartbeat with it, so the worker keeps the lines and sends them again.
  std::function<Status(int64_t job_id, const std::vector<jobs::OutputLine>& lines)> on_log;
  // The largest heartbeat log accepted, in bytes of text (413 past it).
  size_t max_log_bytes = 256 << 10;
};

net::Router make_api_router(jobs::JobService& service, ApiInfo info = {});

}  // namespace jobctl::daemon::http
