// The webhook routes (docs/api.md "Webhooks", docs/notifications.md), a user's own:
//   POST /v1/webhooks                  register {"url": ..., "events": [...]} -> 201 with the secret (shown once)
//   GET  /v1/webhooks                  the caller's webhooks (an admin: everyone's), never the secrets
//   POST /v1/webhooks/{id}/delete      delete one and its delivery records
//   GET  /v1/webhooks/{id}/deliveries  its newest deliveries (?limit=N, default 50)
// A user's token reaches only that user's webhooks (another's answers 404).
//
// Ownership: the handlers borrow the service (it must outlive the router).
#pragma once

#include "daemon/notify/webhook_service.h"
#include "net/router.h"

namespace jobctl::daemon::http {

void add_webhook_routes(net::Router& router, notify::WebhookService& webhooks);

}  // namespace jobctl::daemon::http
