// jobctl-cloudsim's HTTP API (docs/clouds.md, "jobctl-cloudsim API") over a SimCloud, on the
// net/'s Router (net/router.h): thin handlers that decode, call one SimCloud method
// and encode. The server itself is net/'s HttpServer (cloudsim_main.cpp).
//
// Ownership: the handlers borrow the SimCloud, which must outlive the router.
#pragma once

#include "cloud/sim/sim_cloud.h"
#include "net/router.h"

namespace jobctl::cloud::sim {

net::Router make_sim_router(SimCloud& cloud);

}  // namespace jobctl::cloud::sim
