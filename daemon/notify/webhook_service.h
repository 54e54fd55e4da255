// A user's webhooks (docs/notifications.md): registered, listed and deleted through the API and
// `jobctl webhook`, each with the deliveries it made. The deliveries themselves are queued by the
// store with the job events they report and sent by WebhookDispatcher.
//
// Ownership: borrows the store and the clock (they must outlive it). Thread safety: every method
// is safe from any thread (the store serialises the writes).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "daemon/notify/webhook_options.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::notify {

class WebhookService {
 public:
  WebhookService(store::Store& store, const Clock& clock, WebhookOptions options)
      : store_(store), clock_(clock), options_(options) {}

  // Registers a webhook of `owner` for `events` (empty: every notifiable event). Returns the row,
  // whose secret the caller shows once. Errors name the field: "url" (not http(s), or a
  // loopback/private address when those are not allowed), "events" (an unknown type); code
  // limit_exceeded past max_webhooks_per_user.
  Expected<store::WebhookRow> create(const std::string& owner, const std::string& url, std::vector<std::string> events);
  // The webhooks of `owner` (nullopt: everyone's, for an admin), in id order.
  Expected<std::vector<store::WebhookRow>> list(const std::optional<std::string>& owner);
  // Deletes webhook `id` of `owner` (nullopt: anyone's, for an admin); not_found when there is
  // none such.
  Status remove(const std::optional<std::string>& owner, int64_t id);
  // Webhook `id`'s newest deliveries (not_found as remove()).
  Expected<std::vector<store::WebhookDeliveryRow>> deliveries(const std::optional<std::string>& owner, int64_t id,
                                                              int limit);

  const WebhookOptions& options() const { return options_; }

 private:
  Expected<store::WebhookRow> owned(const std::optional<std::string>& owner, int64_t id);

  store::Store& store_;
  const Clock& clock_;
  const WebhookOptions options_;
};

}  // namespace jobctl::daemon::notify
