// The placement and cost routes of jobctld (docs/api.md): POST /v1/quote,
// GET /v1/reports/spend, GET /v1/reports/breakeven, GET /v1/catalog.
//
// Ownership: the handlers borrow the placement service, which must outlive the router.
#pragma once

#include "net/router.h"
#include "daemon/placement/placement_service.h"

namespace jobctl::daemon::http {

void add_placement_routes(net::Router& router, placement::PlacementService& placement);

}  // namespace jobctl::daemon::http
