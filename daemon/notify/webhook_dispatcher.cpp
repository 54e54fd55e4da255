#include "daemon/notify/webhook_dispatcher.h"

#include <chrono>
#include <algorithm>
#include <cmath>
#include <string>

#include "client/http_client.h"
#include "daemon/notify/webhook_message.h"

namespace jobctl::daemon::notify {

namespace {

constexpr int kBatch = 64;
constexpr size_t kMaxErrorText = 300;

}  // namespace

void WebhookDispatcher::start() {
  if (ticker_) return;
  // A sent delivery wakes the reader at once, so a burst goes out at the senders' pace, not a
  // few per half second; woken reads are at least 20 ms apart.
  ticker_ = std::make_unique<Ticker>(std::chrono::milliseconds(500), [this] { enqueue_due(); },
                                     std::chrono::milliseconds(20));
  for (int i = 0; i < options_.max_concurrent; ++i) senders_.emplace_back([this] { sender_loop(); });
}

void WebhookDispatcher::stop() {
  // The senders first: they wake the ticker.
  queues_.stop();
  for (std::thread& t : senders_) t.join();
  senders_.clear();
  if (ticker_) ticker_->stop();
  ticker_.reset();
}

int WebhookDispatcher::enqueue_due() {
  // A few of each user's at a time: enough to keep their senders busy, never a backlog that
  // crowds out the others' in one read.
  const uint64_t snapshot = queues_.snapshot();
  auto due = store_.due_deliveries(clock_.now_ms(), kBatch, 4 * options_.max_concurrent_per_user);
  if (!due) {
    log_.write("webhooks: cannot read the pending deliveries: " + due.error().message);
    return 0;
  }
  return queues_.add(std::move(*due), snapshot);
}

int WebhookDispatcher::send_due() {
  enqueue_due();
  int sent = 0;
  while (auto item = queues_.take(/*wait=*/false)) {
    send(*item);
    queues_.done(*item);
    ++sent;
  }
  return sent;
}

void WebhookDispatcher::sender_loop() {
  while (auto item = queues_.take(/*wait=*/true)) {
    send(*item);
    queues_.done(*item);
    ticker_->wake();
  }
}

void WebhookDispatcher::send(const store::DueDelivery& item) {
  client::HttpClientOptions http;
  http.timeout_ms = static_cast<long>(std::llround(options_.timeout_s * 1000));
  http.connect_timeout_ms = std::min(http.timeout_ms, static_cast<long>(std::llround(options_.connect_timeout_s * 1000)));
  if (!options_.allow_private_addresses) http.allow_address = client::is_public_address;
  const std::string body = webhook_body(item);
  const int64_t now_s = clock_.now_ms() / 1000;
  client::HttpClient client(item.webhook.url, http);
  auto answer = client.request("POST", "", body, 0, webhook_headers(item, now_s, body));

  store::WebhookDeliveryRow d = item.delivery;
  d.attempts += 1;
  const int64_t after_ms = clock_.now_ms();
  if (answer && answer->status >= 200 && answer->status < 300) {
    d.state = store::DeliveryState::delivered;
    d.last_status = static_cast<int>(answer->status);
    d.last_error.clear();
    d.finished_ms = after_ms;
  } else {
    d.last_status = answer ? static_cast<int>(answer->status) : 0;
    d.last_error = answer ? "the receiver answered HTTP " + std::to_string(answer->status) : answer.error().message;
    if (d.last_error.size() > kMaxErrorText) d.last_error.resize(kMaxErrorText);
    if (d.attempts >= options_.max_attempts) {
      d.state = store::DeliveryState::failed;
      d.finished_ms = after_ms;
    } else {
      d.next_attempt_ms = after_ms + retry_delay_ms(options_, d.attempts);
    }
  }
  const int keep = options_.keep_deliveries;
  Status st = store_.write([&d, keep](store::WriteTxn& txn) -> Status {
    if (auto s = txn.update_delivery(d); !s) return s;
    if (d.state != store::DeliveryState::pending) return txn.trim_deliveries(d.webhook_id, keep);
    return {};
  });
  if (!st) log_.write("webhooks: cannot record delivery " + std::to_string(d.id) + ": " + st.error().message);
}

}  // namespace jobctl::daemon::notify
