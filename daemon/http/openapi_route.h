// The API described: docs/openapi.json (OpenAPI 3.1), embedded in jobctld at build time
// (cmake/embed_file.cmake), so the document served is the repository's file byte for byte.
//   GET /v1/openapi.json   the document; anyone may read it (it describes the public API and is
//                          the repository's own file: it holds nothing about this daemon's state)
// tests/daemon/route_table_test.cpp checks that its paths are the route table's, route for route.
//
// Thread safety: the document is immutable; the route is as Router.
#pragma once

#include <string_view>

#include "net/router.h"

namespace jobctl::daemon::http {

// docs/openapi.json as built in.
std::string_view openapi_document();

void add_openapi_route(net::Router& router);

}  // namespace jobctl::daemon::http
