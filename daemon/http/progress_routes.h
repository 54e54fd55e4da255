// GET /v1/jobs/{id}/progress: a job's progress history for the dashboard's curves (docs/api.md).
//
// Ownership: the handler borrows the service and the history; both must outlive the router.
#pragma once

#include "daemon/http/router.h"
#include "daemon/service/job_service.h"
#include "daemon/service/progress_history.h"

namespace jobctl::daemon::http {

// Adds the route to `router`. 404 for an unknown job; `?limit=N` (2..10000, default 2000) thins
// a long series.
void add_progress_routes(Router& router, service::JobService& service, service::ProgressHistory& history);

}  // namespace jobctl::daemon::http
