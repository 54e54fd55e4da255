// The cloud instance endpoint (docs/api.md, "Instances"), added to the API router:
//   GET /v1/instances      every instance the provisioner launched or adopted, live ones first,
//                          with its worker, the job it runs and what the ledger billed for it.
// Without a configured provider it answers an empty list with "provider": null.
//
// Thread safety: as Router; the Provisioner (when given) must outlive the router.
#pragma once

#include "net/router.h"
#include "daemon/provisioning/provisioner.h"

namespace jobctl::daemon::http {

// `provisioner` may be null (no cloud provider configured).
void add_instance_routes(net::Router& router, provisioning::Provisioner* provisioner);

// The JSON of one instance, as GET /v1/instances lists it.
nlohmann::json instance_json(const provisioning::InstanceView& view);

}  // namespace jobctl::daemon::http
