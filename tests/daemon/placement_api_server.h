// The job, worker and placement routes over a store, served over real HTTP on 127.0.0.1 (a free
// port): what tests of the placement endpoints (quotes, reports) talk to.
//
// Ownership: borrows the store and the clock (they outlive it); owns the services and the server,
// which stops when it is destroyed.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "base/clock.h"
#include "daemon/http/api_routes.h"
#include "daemon/http/placement_routes.h"
#include "daemon/jobs/job_service.h"
#include "daemon/ledger/ledger.h"
#include "daemon/placement/placement_matcher.h"
#include "daemon/placement/placement_service.h"
#include "net/server.h"

namespace jobctl::daemon::testing {

struct PlacementApiServer {
  PlacementApiServer(store::Store& db, const Clock& clock)
      : svc(db, clock, std::make_unique<placement::PlacementMatcher>()),
        placement(db, clock, svc, placement::PlacementSettings{}),
        ledger(db) {
    EXPECT_TRUE(svc.start());
    EXPECT_TRUE(placement.start());
    router = http::make_api_router(svc);
    http::add_placement_routes(router, placement, ledger);
    net::ServerOptions so;
    so.host = "127.0.0.1";
    so.port = 0;
    server = std::make_unique<net::HttpServer>(so, router);
    auto started = server->start();
    EXPECT_TRUE(started);
    if (started) url = "http://127.0.0.1:" + std::to_string(*started);
  }

  jobs::JobService svc;
  placement::PlacementService placement;
  ledger::Ledger ledger;
  net::Router router;
  std::unique_ptr<net::HttpServer> server;
  std::string url;  // empty when the server did not start
};

}  // namespace jobctl::daemon::testing
