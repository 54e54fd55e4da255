// jobctld's whole route table but the operator routes (auth_setup.h adds those): the API, the
// progress and log reads, checkpoints, code bundles, placement, instances and the API's OpenAPI
// document — every route with who may call it (route_access.h). main.cpp serves it; the
// route-table listing test lists it.
//
// Ownership: the handlers borrow the services, which must outlive the router. Thread safety: as
// net::Router.
#pragma once

#include "daemon/http/api_routes.h"
#include "daemon/auth/registry_credentials.h"
#include "daemon/http/blob_download.h"
#include "daemon/jobs/bundle_service.h"
#include "daemon/jobs/output_service.h"
#include "daemon/jobs/checkpoint_service.h"
#include "daemon/jobs/job_service.h"
#include "daemon/store/job_log_store.h"
#include "daemon/store/progress_history.h"
#include "daemon/ledger/ledger.h"
#include "daemon/notify/webhook_service.h"
#include "daemon/placement/placement_service.h"
#include "daemon/provisioning/provisioner.h"
#include "net/router.h"

namespace jobctl::daemon::http {

// What the routes call (borrowed). provisioner may be null (no cloud configured).
struct RouteServices {
  jobs::JobService& jobs;
  store::ProgressHistory& progress;
  store::JobLogStore& logs;
  jobs::CheckpointService& checkpoints;
  jobs::BundleService& bundles;
  DownloadSlots& downloads;
  placement::PlacementService& placement;
  ledger::Ledger& ledger;
  provisioning::Provisioner* provisioner = nullptr;
  jobs::OutputService* outputs = nullptr;  // null: no output routes (tests of other routes)
  notify::WebhookService* webhooks = nullptr;  // null: no webhook routes (tests of other routes)
  auth::RegistryCredentials* registry_credentials = nullptr;  // null: no registry credential routes
};

net::Router make_daemon_router(const RouteServices& services, ApiInfo info);

}  // namespace jobctl::daemon::http
