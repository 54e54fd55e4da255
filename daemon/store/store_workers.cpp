// The workers table's queries (rows decoded by row_codecs.h). Declared in store.h; the secret
// hash lookup is with the tokens (store_tokens.cpp).
#include "daemon/store/store.h"

#include "daemon/store/row_codecs.h"

namespace jobctl::daemon::store {

namespace {

Expected<std::optional<WorkerRow>> query_worker(Connection& db, int64_t id) {
  auto p = db.prepare(std::string("SELECT ") + kWorkerColumns + " FROM workers WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, id);
  return read_first_row<WorkerRow>(*s, read_worker);
}

}  // namespace

// ---------------------------------------------------------------- WriteTxn

Expected<std::optional<WorkerRow>> WriteTxn::worker(int64_t id) { return query_worker(db_, id); }

Expected<int64_t> WriteTxn::insert_worker(const WorkerRow& row) {
  auto p = db_.prepare(
      "INSERT INTO workers (name, capabilities, registered_ms, last_seen_ms, state, secret_hash) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, row.name).bind(2, capabilities_text(row.capabilities)).bind(3, row.registered_ms)
      .bind(4, row.last_seen_ms).bind(5, to_string(row.state));
  if (row.secret_hash.empty()) s->bind_null(6);
  else s->bind(6, row.secret_hash);
  if (auto st = s->run(); !st) return st.error();
  return db_.last_insert_rowid();
}

Status WriteTxn::update_worker(const WorkerRow& row) {
  auto p = db_.prepare(
      "UPDATE workers SET name = ?2, capabilities = ?3, registered_ms = ?4, last_seen_ms = ?5, "
      "state = ?6 WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, row.id).bind(2, row.name).bind(3, capabilities_text(row.capabilities)).bind(4, row.registered_ms)
      .bind(5, row.last_seen_ms).bind(6, to_string(row.state));
  if (auto st = s->run(); !st) return st;
  if (db_.changes() != 1)
    return make_error(ErrorCode::not_found, "worker " + std::to_string(row.id) + " does not exist");
  return {};
}

// ---------------------------------------------------------------- Store: reads

Expected<std::vector<WorkerRow>> Store::list_workers(int64_t after_id, int64_t limit) {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(std::string("SELECT ") + kWorkerColumns + " FROM workers WHERE id > ?1 ORDER BY id LIMIT ?2");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, after_id).bind(2, limit);  // SQLite: a negative LIMIT is none
  return read_rows<WorkerRow>(*s, read_worker);
}

Expected<std::optional<WorkerRow>> Store::get_worker(int64_t id) {
  auto r = reader();
  if (!r) return r.error();
  return query_worker(**r, id);
}

}  // namespace jobctl::daemon::store
