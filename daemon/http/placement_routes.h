// The placement and cost routes of jobctld (docs/api.md): POST /v1/quote,
// GET /v1/reports/spend, GET /v1/reports/breakeven, GET /v1/reports/plan, GET /v1/catalog.
//
// Ownership: the handlers borrow the placement service and the ledger, which must outlive the
// router.
#pragma once

#include "daemon/ledger/ledger.h"
#include "daemon/placement/placement_service.h"
#include "net/router.h"

namespace jobctl::daemon::http {

void add_placement_routes(net::Router& router, placement::PlacementService& placement, ledger::Ledger& ledger);

}  // namespace jobctl::daemon::http
