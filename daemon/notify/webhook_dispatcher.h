// Sends the webhook deliveries the store has queued (docs/notifications.md): every half second,
// each pending delivery that is due is POSTed, signed (webhook_message.h), and its outcome
// recorded: a 2xx answer delivers it; anything else (another status, no connection, a timeout, a
// refused address) counts an attempt and schedules the next one with backoff (retry_delay_ms),
// until max_attempts, when it is given up as failed. Deliveries are at least once: one sent when
// jobctld stops before recording it is sent again after a restart, with the same Jobctl-Delivery.
//
// One delivery at a time on the dispatcher's own thread: webhooks.timeout_s bounds how long a
// slow receiver holds up the others.
//
// Ownership: borrows the store, the clock and the log; owns its thread (stop() or the destructor joins it).
// Thread safety: start/stop from the thread that owns it.
#pragma once

#include <memory>

#include "base/clock.h"
#include "base/log.h"
#include "base/ticker.h"
#include "daemon/notify/webhook_options.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::notify {

class WebhookDispatcher {
 public:
  WebhookDispatcher(store::Store& store, const Clock& clock, WebhookOptions options, Log& log = stderr_log())
      : store_(store), clock_(clock), options_(options), log_(log) {}
  ~WebhookDispatcher() { stop(); }
  WebhookDispatcher(const WebhookDispatcher&) = delete;
  WebhookDispatcher& operator=(const WebhookDispatcher&) = delete;

  void start();
  void stop();
  // Sends every delivery due now, one after another; returns how many were attempted. The
  // dispatcher's thread calls it; tests call it directly.
  int send_due();

 private:
  store::Store& store_;
  const Clock& clock_;
  const WebhookOptions options_;
  Log& log_;
  std::unique_ptr<Ticker> ticker_;
};

}  // namespace jobctl::daemon::notify
