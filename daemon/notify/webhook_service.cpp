#include "daemon/notify/webhook_service.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include <algorithm>

#include "client/http_client.h"
#include "daemon/auth/secret.h"

namespace jobctl::daemon::notify {

namespace {

// A host written as an address literal that is not public: refused at once, so that the mistake
// is reported to the user rather than to the delivery log. Names are checked when each delivery
// connects (WebhookDispatcher), since what they resolve to can change.
bool literal_private_address(std::string host) {
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  sockaddr_in v4{};
  v4.sin_family = AF_INET;
  if (::inet_pton(AF_INET, host.c_str(), &v4.sin_addr) == 1)
    return !client::is_public_address(reinterpret_cast<const sockaddr*>(&v4));
  sockaddr_in6 v6{};
  v6.sin6_family = AF_INET6;
  if (::inet_pton(AF_INET6, host.c_str(), &v6.sin6_addr) == 1)
    return !client::is_public_address(reinterpret_cast<const sockaddr*>(&v6));
  return host == "localhost" || host.ends_with(".localhost");
}

}  // namespace

Expected<store::WebhookRow> WebhookService::create(const std::string& owner, const std::string& url,
                                                   std::vector<std::string> events) {
  if (url.size() > 2048) return make_error(ErrorCode::invalid_argument, "url is longer than 2048 characters", "url");
  auto parsed = client::parse_http_url(url, "url");
  if (!parsed) return parsed.error();
  if (!options_.allow_private_addresses && literal_private_address(parsed->host))
    return make_error(ErrorCode::invalid_argument,
                      "url points at a loopback, private or link-local address, which this jobctld does not "
                      "deliver to (webhooks.allow_private_addresses is false)",
                      "url");
  std::string known;
  for (auto e : store::notifiable_events()) known += (known.empty() ? "" : ", ") + std::string(e);
  if (events.empty())
    for (auto e : store::notifiable_events()) events.emplace_back(e);
  for (const auto& e : events)
    if (!store::is_notifiable_event(e))
      return make_error(ErrorCode::invalid_argument, "events: unknown event '" + e + "' (known: " + known + ")", "events");
  std::sort(events.begin(), events.end());
  events.erase(std::unique(events.begin(), events.end()), events.end());
  auto secret = auth::random_secret("whsec_");
  if (!secret) return secret.error();
  store::WebhookRow row;
  row.owner = owner;
  row.url = url;
  row.events = std::move(events);
  row.secret = *secret;
  row.created_ms = clock_.now_ms();
  const int max_hooks = options_.max_webhooks_per_user;
  auto id = store_.write_value<int64_t>([&](store::WriteTxn& txn) -> Expected<int64_t> {
    auto mine = txn.webhook_count(owner);
    if (!mine) return mine.error();
    if (*mine >= max_hooks)
      return make_error(ErrorCode::limit_exceeded,
                        "you have " + std::to_string(*mine) + " webhooks, the most allowed " +
                            "(webhooks.max_webhooks_per_user); delete one first");
    return txn.insert_webhook(row);
  });
  if (!id) return id.error();
  row.id = *id;
  return row;
}

Expected<std::vector<store::WebhookRow>> WebhookService::list(const std::optional<std::string>& owner) {
  return store_.webhooks(owner);
}

Expected<store::WebhookRow> WebhookService::owned(const std::optional<std::string>& owner, int64_t id) {
  auto row = store_.webhook(id);
  if (!row) return row.error();
  if (!*row || (owner && (*row)->owner != *owner))
    return make_error(ErrorCode::not_found, "webhook " + std::to_string(id) + " does not exist", "id");
  return std::move(**row);
}

Status WebhookService::remove(const std::optional<std::string>& owner, int64_t id) {
  auto row = owned(owner, id);
  if (!row) return row.error();
  auto deleted = store_.write_value<bool>(
      [&](store::WriteTxn& txn) -> Expected<bool> { return txn.delete_webhook(row->owner, id); });
  if (!deleted) return deleted.error();
  if (!*deleted) return make_error(ErrorCode::not_found, "webhook " + std::to_string(id) + " does not exist", "id");
  return {};
}

Expected<std::vector<store::WebhookDeliveryRow>> WebhookService::deliveries(const std::optional<std::string>& owner,
                                                                            int64_t id, int limit) {
  auto row = owned(owner, id);
  if (!row) return row.error();
  return store_.webhook_deliveries(id, limit);
}

}  // namespace jobctl::daemon::notify
