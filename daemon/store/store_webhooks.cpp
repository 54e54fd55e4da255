// The webhooks and webhook_deliveries tables (migration 18): a user's webhooks, and the outbox of
// their deliveries. Declared in store.h.
#include <string>

#include "daemon/store/row_codecs.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::store {

namespace {

constexpr const char* kWebhookColumns = "id, owner, url, events, secret, created_ms";
constexpr const char* kDeliveryColumns =
    "id, webhook_id, job_id, event_seq, event, state, attempts, next_attempt_ms, last_status, last_error, "
    "created_ms, finished_ms";

std::string join_events(const std::vector<std::string>& events) {
  std::string out;
  for (const auto& e : events) out += (out.empty() ? "" : ",") + e;
  return out;
}

std::vector<std::string> split_events(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const size_t end = comma == std::string::npos ? text.size() : comma;
    if (end > start) out.push_back(text.substr(start, end - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

WebhookRow read_webhook(const Statement& s) {
  WebhookRow w;
  w.id = s.column_int64(0);
  w.owner = s.column_text(1);
  w.url = s.column_text(2);
  w.events = split_events(s.column_text(3));
  w.secret = s.column_text(4);
  w.created_ms = s.column_int64(5);
  return w;
}

Expected<WebhookDeliveryRow> read_delivery(const Statement& s) {
  WebhookDeliveryRow d;
  d.id = s.column_int64(0);
  d.webhook_id = s.column_int64(1);
  d.job_id = s.column_int64(2);
  d.event_seq = s.column_int64(3);
  d.event = s.column_text(4);
  auto state = parse_delivery_state(s.column_text(5));
  if (!state)
    return make_error(ErrorCode::io, "webhook delivery " + std::to_string(d.id) + ": the database holds an unknown state '" +
                                         s.column_text(5) + "'");
  d.state = *state;
  d.attempts = static_cast<int>(s.column_int64(6));
  d.next_attempt_ms = s.column_int64(7);
  d.last_status = static_cast<int>(s.column_int64(8));
  d.last_error = s.column_text(9);
  d.created_ms = s.column_int64(10);
  d.finished_ms = s.column_opt_int64(11);
  return d;
}

}  // namespace

// ---------------------------------------------------------------- WriteTxn

// Called by append_event: one pending delivery per webhook of the job's owner that subscribes to
// this event type.
Status WriteTxn::queue_webhook_deliveries(const JobEventRow& ev, int64_t seq) {
  if (!is_notifiable_event(ev.type)) return {};
  auto p = db_.prepare(
      "INSERT INTO webhook_deliveries (webhook_id, job_id, event_seq, event, state, next_attempt_ms, created_ms) "
      "SELECT w.id, j.id, ?2, ?3, 'pending', ?4, ?4 FROM jobs j CROSS JOIN webhooks w "
      "ON w.owner = COALESCE(j.owner, '') WHERE j.id = ?1 AND instr(',' || w.events || ',', ',' || ?3 || ',') > 0");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, ev.job_id).bind(2, seq).bind(3, ev.type).bind(4, ev.time_ms);
  return s->run();
}

Expected<int64_t> WriteTxn::insert_webhook(const WebhookRow& w) {
  auto p = db_.prepare(
      "INSERT INTO webhooks (owner, url, events, secret, created_ms) VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, w.owner).bind(2, w.url).bind(3, join_events(w.events)).bind(4, w.secret).bind(5, w.created_ms);
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return make_error(ErrorCode::io, "inserting a webhook returned no id");
  const int64_t id = s->column_int64(0);
  if (auto st = s->run(); !st) return st.error();
  return id;
}

Expected<int64_t> WriteTxn::webhook_count(const std::string& owner) {
  auto p = db_.prepare("SELECT COUNT(*) FROM webhooks WHERE owner = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, owner);
  auto row = s->step();
  if (!row) return row.error();
  return *row ? s->column_int64(0) : int64_t{0};
}

Expected<bool> WriteTxn::delete_webhook(const std::string& owner, int64_t id) {
  auto p = db_.prepare("DELETE FROM webhooks WHERE id = ?1 AND owner = ?2");
  if (!p) return p.error();
  {
    StatementUse s(*p);
    s->bind(1, id).bind(2, owner);
    if (auto st = s->run(); !st) return st.error();
  }
  if (db_.changes() == 0) return false;
  auto d = db_.prepare("DELETE FROM webhook_deliveries WHERE webhook_id = ?1");
  if (!d) return d.error();
  StatementUse s(*d);
  s->bind(1, id);
  if (auto st = s->run(); !st) return st.error();
  return true;
}

Status WriteTxn::update_delivery(const WebhookDeliveryRow& d) {
  auto p = db_.prepare(
      "UPDATE webhook_deliveries SET state = ?2, attempts = ?3, next_attempt_ms = ?4, last_status = ?5, "
      "last_error = ?6, finished_ms = ?7 WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, d.id)
      .bind(2, delivery_state_name(d.state))
      .bind(3, int64_t{d.attempts})
      .bind(4, d.next_attempt_ms)
      .bind(5, int64_t{d.last_status})
      .bind(6, d.last_error);
  if (d.finished_ms) s->bind(7, *d.finished_ms); else s->bind_null(7);
  return s->run();
}

Status WriteTxn::trim_deliveries(int64_t webhook_id, int keep) {
  auto p = db_.prepare(
      "DELETE FROM webhook_deliveries WHERE webhook_id = ?1 AND state != 'pending' AND id < "
      "(SELECT COALESCE(MIN(id), 0) FROM (SELECT id FROM webhook_deliveries WHERE webhook_id = ?1 "
      "ORDER BY id DESC LIMIT ?2))");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, webhook_id).bind(2, int64_t{keep});
  return s->run();
}

// ---------------------------------------------------------------- Store: reads

Expected<std::vector<WebhookRow>> Store::webhooks(const std::optional<std::string>& owner) {
  std::vector<WebhookRow> out;
  Status st = with_reader([&](Connection& db) -> Status {
    auto p = db.prepare(std::string("SELECT ") + kWebhookColumns + " FROM webhooks WHERE ?1 IS NULL OR owner = ?1 ORDER BY id");
    if (!p) return p.error();
    StatementUse s(*p);
    if (owner) s->bind(1, *owner); else s->bind_null(1);
    auto rows = read_rows<WebhookRow>(*s, read_webhook);
    if (!rows) return rows.error();
    out = std::move(*rows);
    return {};
  });
  if (!st) return st.error();
  return out;
}

Expected<std::optional<WebhookRow>> Store::webhook(int64_t id) {
  std::optional<WebhookRow> out;
  Status st = with_reader([&](Connection& db) -> Status {
    auto p = db.prepare(std::string("SELECT ") + kWebhookColumns + " FROM webhooks WHERE id = ?1");
    if (!p) return p.error();
    StatementUse s(*p);
    s->bind(1, id);
    auto row = read_first_row<WebhookRow>(*s, read_webhook);
    if (!row) return row.error();
    out = std::move(*row);
    return {};
  });
  if (!st) return st.error();
  return out;
}

Expected<std::vector<WebhookDeliveryRow>> Store::webhook_deliveries(int64_t webhook_id, int limit) {
  std::vector<WebhookDeliveryRow> out;
  Status st = with_reader([&](Connection& db) -> Status {
    auto p = db.prepare(std::string("SELECT ") + kDeliveryColumns +
                        " FROM webhook_deliveries WHERE webhook_id = ?1 ORDER BY id DESC LIMIT ?2");
    if (!p) return p.error();
    StatementUse s(*p);
    s->bind(1, webhook_id).bind(2, int64_t{limit});
    auto rows = read_rows<WebhookDeliveryRow>(*s, read_delivery);
    if (!rows) return rows.error();
    out = std::move(*rows);
    return {};
  });
  if (!st) return st.error();
  return out;
}

Expected<std::vector<DueDelivery>> Store::due_deliveries(int64_t now_ms, int limit, int per_owner) {
  std::vector<DueDelivery> out;
  Status st = with_reader([&](Connection& db) -> Status {
    // Each owner's oldest `per_owner`: one user's backlog never hides another's deliveries.
    auto p = db.prepare(std::string("SELECT ") + kDeliveryColumns +
                        " FROM (SELECT d.*, ROW_NUMBER() OVER (PARTITION BY w.owner ORDER BY d.next_attempt_ms, d.id)"
                        " AS owner_rank FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id"
                        " WHERE d.state = 'pending' AND d.next_attempt_ms <= ?1)"
                        " WHERE owner_rank <= ?3 ORDER BY next_attempt_ms, id LIMIT ?2");
    if (!p) return p.error();
    std::vector<WebhookDeliveryRow> due;
    {
      StatementUse s(*p);
      s->bind(1, now_ms).bind(2, int64_t{limit}).bind(3, int64_t{per_owner});
      auto rows = read_rows<WebhookDeliveryRow>(*s, read_delivery);
      if (!rows) return rows.error();
      due = std::move(*rows);
    }
    auto hook = db.prepare(std::string("SELECT ") + kWebhookColumns + " FROM webhooks WHERE id = ?1");
    if (!hook) return hook.error();
    auto event = db.prepare(std::string("SELECT ") + kEventColumns + " FROM job_events WHERE job_id = ?1 AND seq = ?2");
    if (!event) return event.error();
    auto name = db.prepare("SELECT name FROM jobs WHERE id = ?1");
    if (!name) return name.error();
    for (auto& d : due) {
      DueDelivery item;
      {
        StatementUse s(*hook);
        s->bind(1, d.webhook_id);
        auto w = read_first_row<WebhookRow>(*s, read_webhook);
        if (!w) return w.error();
        if (!*w) continue;  // deleted since: its deliveries go with it
        item.webhook = std::move(**w);
      }
      {
        StatementUse s(*event);
        s->bind(1, d.job_id).bind(2, d.event_seq);
        auto e = read_first_row<JobEventRow>(*s, read_event);
        if (!e) return e.error();
        if (!*e) continue;
        item.event = std::move(**e);
      }
      {
        StatementUse s(*name);
        s->bind(1, d.job_id);
        auto row = s->step();
        if (!row) return row.error();
        if (*row) item.job_name = s->column_text(0);
      }
      item.delivery = std::move(d);
      out.push_back(std::move(item));
    }
    return {};
  });
  if (!st) return st.error();
  return out;
}

}  // namespace jobctl::daemon::store
