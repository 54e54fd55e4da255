// Sends the webhook deliveries the store has queued (docs/notifications.md): every half second,
// and again after each delivery sent, the pending deliveries that are due (a few of each user's)
// are read into per-user queues (delivery_queues.h), and
// webhooks.max_concurrent sender threads POST them, signed (webhook_message.h), at most
// webhooks.max_concurrent_per_user of one user's at once, and record each outcome: a 2xx answer
// delivers it; anything else (another status, no connection, a timeout, a refused address)
// counts an attempt and schedules the next one with backoff (retry_delay_ms), until
// max_attempts, when it is given up as failed. Deliveries are at least once: one sent when
// jobctld stops before recording it is sent again after a restart, with the same Jobctl-Delivery.
//
// One user's receivers that never answer hold at most max_concurrent_per_user senders for
// timeout_s each (connect_timeout_s where they do not even accept the connection); the others'
// deliveries go out on the remaining senders meanwhile.
//
// Ownership: borrows the store, the clock and the log; owns its threads (stop() or the
// destructor joins them). Thread safety: start/stop from the thread that owns it; lag_s() from
// any thread.
#pragma once

#include <memory>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/log.h"
#include "base/ticker.h"
#include "daemon/notify/delivery_queues.h"
#include "daemon/notify/webhook_options.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::notify {

class WebhookDispatcher {
 public:
  WebhookDispatcher(store::Store& store, const Clock& clock, WebhookOptions options, Log& log = stderr_log())
      : store_(store), clock_(clock), options_(options), log_(log), queues_(options.max_concurrent_per_user) {}
  ~WebhookDispatcher() { stop(); }
  WebhookDispatcher(const WebhookDispatcher&) = delete;
  WebhookDispatcher& operator=(const WebhookDispatcher&) = delete;

  void start();
  // Joins the threads; a delivery in flight finishes first (webhooks.timeout_s at most).
  void stop();
  // Reads the deliveries due now into the queues; returns how many were new there. The ticker
  // calls it.
  int enqueue_due();
  // Without start() (tests): enqueue_due(), then every queued delivery sent on the calling
  // thread, one after another in the queues' order; returns how many were attempted.
  int send_due();
  // How long the queued delivery longest past its due time has waited for a sender, in seconds
  // (0: none waits): /metrics' jobctl_webhook_delivery_lag_seconds.
  double lag_s() const { return queues_.lag_s(clock_.now_ms()); }

 private:
  void send(const store::DueDelivery& item);
  void sender_loop();

  store::Store& store_;
  const Clock& clock_;
  const WebhookOptions options_;
  Log& log_;
  DeliveryQueues queues_;
  std::vector<std::thread> senders_;
  std::unique_ptr<Ticker> ticker_;
};

}  // namespace jobctl::daemon::notify
