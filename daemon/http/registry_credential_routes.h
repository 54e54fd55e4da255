// The registry credential routes (docs/api.md "Registry credentials", docs/security.md), the
// caller's own logins ("" without auth):
//   PUT    /v1/registry-credentials/{registry}  store {"username", "password"} for host[:port]
//   GET    /v1/registry-credentials             the caller's registries and usernames, never a password
//   DELETE /v1/registry-credentials/{registry}  forget one
//
// Ownership: the handlers borrow the credentials (they must outlive the router).
#pragma once

#include "daemon/auth/registry_credentials.h"
#include "net/router.h"

namespace jobctl::daemon::http {

void add_registry_credential_routes(net::Router& router, auth::RegistryCredentials& credentials);

}  // namespace jobctl::daemon::http
