// How jobctld delivers webhooks (the `webhooks` section of its configuration,
// docs/configuration.md; docs/notifications.md).
//
// Thread safety: a plain value; apply_webhook_config is a pure function.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include "base/expected.h"

namespace jobctl::daemon::notify {

struct WebhookOptions {
  int max_attempts = 6;             // a delivery is given up after this many failed attempts
  double retry_initial_s = 10;      // the wait after the first failed attempt; then 3x each time
  double retry_max_s = 3600;        // the longest wait between two attempts
  double timeout_s = 10;            // one attempt, connecting included
  double connect_timeout_s = 3;     // connecting (at most timeout_s)
  int max_concurrent = 8;           // deliveries sent at once, over all users
  int max_concurrent_per_user = 2;  // of one user's (their receivers' slowness stays theirs)
  bool allow_private_addresses = false;  // receivers on loopback, private or link-local addresses
  int max_webhooks_per_user = 20;
  int keep_deliveries = 200;        // finished deliveries kept per webhook (the newest)
};

// Applies `root`'s "webhooks" section, if any, on top of `options`; unknown keys and bad values are
// refused naming the field ("webhooks.max_attempts").
Status apply_webhook_config(const nlohmann::json& root, WebhookOptions& options);

// How long to wait after the `attempts`-th failed attempt (1-based): retry_initial_s times 3 to
// the power attempts-1, at most retry_max_s, in milliseconds.
int64_t retry_delay_ms(const WebhookOptions& options, int attempts);

}  // namespace jobctl::daemon::notify
