// The task-file route of jobctld (docs/api.md, "Task files"): POST /v1/tasks/resolve turns a task
// file sent as text (task/task_file.h) into the JSON job spec it stands for, validated as `jobctl
// launch` validates it, for the clients that hold no YAML parser of jobctl's rules (the dashboard,
// the Python client). Nothing is stored: the client packs the task's workdir itself, then submits
// the spec (POST /v1/jobs, or POST /v1/arrays for a sweep).
//
// Ownership: the handler holds nothing. Thread safety: it is a pure function of the request.
#pragma once

#include "net/router.h"

namespace jobctl::daemon::http {

// The most bytes of task-file text a request may carry (a task file is a page of YAML).
inline constexpr size_t kMaxTaskTextBytes = 256 * 1024;

void add_task_routes(net::Router& router);

}  // namespace jobctl::daemon::http
