// jobctld's REST API: the route table (in one place, in api_routes.cpp) and its thin handlers.
// Each handler decodes the request, calls one JobService method and encodes the answer;
// docs/api.md documents every route.
//
// Ownership: the router's handlers borrow the service, which must outlive the router.
#pragma once

#include <string>

#include "daemon/http/router.h"
#include "daemon/service/job_service.h"

namespace jobctl::daemon::http {

struct ApiInfo {
  std::string version = "0.1.0";
};

Router make_api_router(service::JobService& service, ApiInfo info = {});

}  // namespace jobctl::daemon::http
