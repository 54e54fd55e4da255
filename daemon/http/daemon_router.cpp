#include "daemon/http/daemon_router.h"

#include "daemon/http/bundle_routes.h"
#include "daemon/http/checkpoint_routes.h"
#include "daemon/http/instance_routes.h"
#include "daemon/http/openapi_route.h"
#include "daemon/http/output_routes.h"
#include "daemon/http/placement_routes.h"
#include "daemon/http/task_routes.h"
#include "daemon/http/progress_routes.h"
#include "daemon/http/registry_credential_routes.h"
#include "daemon/http/webhook_routes.h"

namespace jobctl::daemon::http {

net::Router make_daemon_router(const RouteServices& s, ApiInfo info) {
  net::Router router = make_api_router(s.jobs, std::move(info));
  add_progress_routes(router, s.jobs, s.progress);
  add_log_routes(router, s.jobs, s.logs, s.downloads);
  add_checkpoint_routes(router, s.checkpoints, s.downloads);
  add_bundle_routes(router, s.bundles, s.downloads);
  if (s.outputs != nullptr) add_output_routes(router, *s.outputs, s.downloads);
  add_placement_routes(router, s.placement, s.ledger);
  add_task_routes(router);
  add_instance_routes(router, s.provisioner);
  if (s.webhooks != nullptr) add_webhook_routes(router, *s.webhooks);
  if (s.registry_credentials != nullptr) add_registry_credential_routes(router, *s.registry_credentials);
  add_openapi_route(router);
  return router;
}

}  // namespace jobctl::daemon::http
