// The store's part of auth and limits: API tokens, job owners, idempotency keys.
// Declared in store.h; the tables come from migration 5 (migrations.cpp).
#include "daemon/store/store.h"

#include <algorithm>

namespace jobctl::daemon::store {

namespace {

constexpr const char* kTokenColumns = "id, user, role, hash, prefix, created_ms, revoked_ms, permissions";

Expected<TokenRow> read_token(const Statement& s) {
  TokenRow t;
  t.id = s.column_int64(0);
  t.user = s.column_text(1);
  auto role = parse_token_role(s.column_text(2));
  if (!role)
    return make_error(ErrorCode::io, "token " + std::to_string(t.id) + ": the database holds an unknown role '" +
                                         s.column_text(2) + "'");
  t.role = *role;
  t.hash_hex = s.column_text(3);
  t.prefix = s.column_text(4);
  t.created_ms = s.column_int64(5);
  t.revoked_ms = s.column_opt_int64(6);
  t.permissions = s.column_text(7);
  return t;
}

Expected<std::optional<TokenRow>> query_token(Connection& db, const char* where, int64_t id,
                                              const std::string& text) {
  auto p = db.prepare(std::string("SELECT ") + kTokenColumns + " FROM api_tokens WHERE " + where);
  if (!p) return p.error();
  StatementUse s(*p);
  if (text.empty()) s->bind(1, id); else s->bind(1, text);
  return read_first_row<TokenRow>(*s, read_token);
}

}  // namespace

// ---------------------------------------------------------------- WriteTxn

Status WriteTxn::set_job_submitter(int64_t job_id, const std::string& owner,
                                   const std::string& idempotency_key) {
  auto p = db_.prepare("UPDATE jobs SET owner = ?2, idempotency_key = ?3 WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id).bind(2, owner);
  if (idempotency_key.empty()) s->bind_null(3); else s->bind(3, idempotency_key);
  if (auto st = s->run(); !st) return st;
  if (db_.changes() != 1) return make_error(ErrorCode::not_found, "job " + std::to_string(job_id) + " does not exist");
  return {};
}

Expected<std::optional<int64_t>> WriteTxn::job_by_idempotency_key(const std::string& owner,
                                                                  const std::string& key) {
  auto p = db_.prepare("SELECT id FROM jobs WHERE owner = ?1 AND idempotency_key = ?2");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, owner).bind(2, key);
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return std::optional<int64_t>{};
  return std::optional<int64_t>((*p)->column_int64(0));
}

Expected<std::optional<std::string>> WriteTxn::job_owner(int64_t job_id) {
  auto p = db_.prepare("SELECT COALESCE(owner, '') FROM jobs WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id);
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return std::optional<std::string>{};
  return std::optional<std::string>(s->column_text(0));
}

Expected<int64_t> WriteTxn::count_waiting_jobs(const std::string& owner) {
  auto p = db_.prepare("SELECT COUNT(*) FROM jobs WHERE owner = ?1 AND state IN ('queued', 'held')");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, owner);
  auto row = s->step();
  if (!row) return row.error();
  return *row ? (*p)->column_int64(0) : int64_t{0};
}

Expected<std::pair<double, int64_t>> WriteTxn::remaining_estimates_usd(const std::string& owner, int64_t except_job) {
  auto p = db_.prepare(
      "SELECT id, COALESCE(json_extract(chosen, '$.estimated_cost_usd'), 0), progress FROM jobs "
      "WHERE owner = ?1 AND state IN ('queued', 'placed', 'running') AND id != ?2");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, owner).bind(2, except_job);
  std::pair<double, int64_t> out{0.0, 0};
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    const int64_t id = (*p)->column_int64(0);
    double left = 1.0;
    if (auto progress = (*p)->column_opt_text(2)) {
      auto decoded = decode_progress(*progress, "job " + std::to_string(id));
      if (!decoded) return decoded.error();
      left = 1.0 - decoded->done_fraction();
    }
    out.first += (*p)->column_double(1) * std::max(left, 0.0);
    out.second += 1;
  }
  return out;
}

// ---------------------------------------------------------------- Store

Expected<int64_t> Store::insert_token(const TokenRow& row) {
  return write_value<int64_t>([row](WriteTxn& txn) -> Expected<int64_t> {
    auto p = txn.db_.prepare(
        "INSERT INTO api_tokens (user, role, hash, prefix, created_ms, revoked_ms, permissions) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)");
    if (!p) return p.error();
    StatementUse s(*p);
    s->bind(1, row.user).bind(2, to_string(row.role)).bind(3, row.hash_hex).bind(4, row.prefix)
        .bind(5, row.created_ms).bind(6, row.revoked_ms).bind(7, row.permissions);
    if (auto st = s->run(); !st) return st.error();
    return txn.db_.last_insert_rowid();
  });
}

Expected<std::optional<TokenRow>> Store::token_by_hash(const std::string& hash_hex) {
  std::optional<TokenRow> out;
  Status st = with_reader([&](Connection& db) -> Status {
    auto t = query_token(db, "hash = ?1", 0, hash_hex);
    if (!t) return t.error();
    out = std::move(*t);
    return {};
  });
  if (!st) return st.error();
  return out;
}

Expected<std::vector<TokenRow>> Store::list_tokens() {
  Expected<std::vector<TokenRow>> out = std::vector<TokenRow>{};
  Status st = with_reader([&](Connection& db) -> Status {
    auto p = db.prepare(std::string("SELECT ") + kTokenColumns + " FROM api_tokens ORDER BY id");
    if (!p) return p.error();
    StatementUse s(*p);
    out = read_rows<TokenRow>(*s, read_token);
    return {};
  });
  if (!st) return st.error();
  return out;
}

Expected<std::optional<TokenRow>> Store::revoke_token(int64_t id, int64_t now_ms) {
  return write_value<std::optional<TokenRow>>(
      [id, now_ms](WriteTxn& txn) -> Expected<std::optional<TokenRow>> {
        auto found = query_token(txn.db_, "id = ?1", id, "");
        if (!found || !*found) return found;
        if ((*found)->revoked_ms) return found;  // already revoked: keep the first time
        auto p = txn.db_.prepare("UPDATE api_tokens SET revoked_ms = ?2 WHERE id = ?1");
        if (!p) return p.error();
        StatementUse s(*p);
        s->bind(1, id).bind(2, now_ms);
        if (auto st = s->run(); !st) return st.error();
        (*found)->revoked_ms = now_ms;
        return found;
      });
}

Expected<std::vector<OwnedJob>> Store::owned_open_jobs() {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(
      "SELECT id, owner, state, worker_id IS NOT NULL FROM jobs "
      "WHERE state IN ('queued', 'placed', 'running') AND owner IS NOT NULL AND owner != '' ORDER BY id");
  if (!p) return p.error();
  StatementUse s(*p);
  return read_rows<OwnedJob>(*s, [](const Statement& row) -> Expected<OwnedJob> {
    const std::string state = row.column_text(2);
    auto parsed = scheduler::parse_job_state(state);
    if (!parsed)
      return make_error(ErrorCode::io, "job " + std::to_string(row.column_int64(0)) + ": unknown state '" + state + "'");
    return OwnedJob{row.column_int64(0), row.column_text(1), *parsed, row.column_int64(3) != 0};
  });
}

Expected<std::optional<std::string>> Store::job_owner(int64_t job_id) {
  std::optional<std::string> out;
  Status st = with_reader([&](Connection& db) -> Status {
    auto p = db.prepare("SELECT owner FROM jobs WHERE id = ?1");
    if (!p) return p.error();
    StatementUse s(*p);
    s->bind(1, job_id);
    auto row = s->step();
    if (!row) return row.error();
    if (*row) out = (*p)->column_text(0);
    return {};
  });
  if (!st) return st.error();
  return out;
}

Expected<std::optional<int64_t>> Store::worker_by_secret_hash(const std::string& hash_hex) {
  std::optional<int64_t> out;
  Status st = with_reader([&](Connection& db) -> Status {
    auto p = db.prepare("SELECT id FROM workers WHERE secret_hash = ?1");
    if (!p) return p.error();
    StatementUse s(*p);
    s->bind(1, hash_hex);
    auto row = s->step();
    if (!row) return row.error();
    if (*row) out = (*p)->column_int64(0);
    return {};
  });
  if (!st) return st.error();
  return out;
}

}  // namespace jobctl::daemon::store
