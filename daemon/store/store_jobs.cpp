// The jobs table family's queries: jobs, their events and their placement documents (rows
// decoded by row_codecs.h). Declared in store.h.
#include "daemon/store/store.h"

#include "daemon/store/row_codecs.h"

namespace jobctl::daemon::store {

namespace {

Expected<std::optional<JobRow>> query_job(Connection& db, int64_t id) {
  auto p = db.prepare(std::string("SELECT ") + kJobReadColumns + " FROM jobs WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, id);
  return read_first_row<JobRow>(*s, read_job);
}

Expected<std::vector<JobEventRow>> query_events(Connection& db, int64_t id) {
  auto p = db.prepare(std::string("SELECT ") + kEventColumns + " FROM job_events WHERE job_id = ?1 ORDER BY seq");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, id);
  return read_rows<JobEventRow>(*s, read_event);
}

}  // namespace

// ---------------------------------------------------------------- WriteTxn

Expected<std::optional<JobRow>> WriteTxn::job(int64_t id) { return query_job(db_, id); }

Expected<int64_t> WriteTxn::insert_job(const JobRow& row) {
  auto p = db_.prepare(std::string("INSERT INTO jobs (") + kJobColumns +
                       ") VALUES (NULL, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
                       "?15, ?16, ?17, ?18, ?19, ?20, ?21)");
  if (!p) return p.error();
  StatementUse s(*p);
  bind_job_columns(*s, row);
  if (auto st = s->run(); !st) return st.error();
  return db_.last_insert_rowid();
}

Status WriteTxn::update_job(const JobRow& row) {
  auto p = db_.prepare(
      "UPDATE jobs SET name = ?2, spec = ?3, state = ?4, priority = ?5, resource_gpu = ?6, "
      "resource_gpus = ?7, created_ms = ?8, updated_ms = ?9, worker_id = ?10, lease_epoch = ?11, "
      "lease_expires_ms = ?12, progress = ?13, result = ?14, error = ?15, recoveries = ?16, "
      "chosen = ?17, spec_crc = ?18, progress_crc = ?19, result_crc = ?20, chosen_crc = ?21 WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, row.id);
  bind_job_columns(*s, row);
  if (auto st = s->run(); !st) return st;
  if (db_.changes() != 1)
    return make_error(ErrorCode::not_found, "job " + std::to_string(row.id) + " does not exist");
  return {};
}

Status WriteTxn::set_job_array(int64_t job_id, int64_t array_id) {
  auto p = db_.prepare("UPDATE jobs SET array_id = ?2 WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id).bind(2, array_id);
  if (auto st = s->run(); !st) return st;
  if (db_.changes() != 1) return make_error(ErrorCode::not_found, "job " + std::to_string(job_id) + " does not exist");
  return {};
}

Status WriteTxn::set_job_image_digest(int64_t job_id, const std::string& digest) {
  auto p = db_.prepare("UPDATE jobs SET image_digest = ?2 WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id).bind(2, digest);
  if (auto st = s->run(); !st) return st;
  if (db_.changes() != 1) return make_error(ErrorCode::not_found, "job " + std::to_string(job_id) + " does not exist");
  return {};
}

Status WriteTxn::put_placement(int64_t job_id, const DeflatedText& placement,
                               const std::optional<std::string>& unplaceable_key) {
  auto p = db_.prepare(
      "INSERT OR REPLACE INTO job_placements (job_id, placement, unplaceable_key, placement_crc) "
      "VALUES (?1, ?2, ?3, ?4)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id).bind_blob(2, placement.bytes).bind(3, unplaceable_key).bind(4, document_checksum(std::string_view(placement.bytes)));
  return s->run();
}

Expected<int64_t> WriteTxn::append_event(const JobEventRow& ev) {
  auto p = db_.prepare(
      "INSERT INTO job_events (job_id, seq, time_ms, type, from_state, to_state, detail, detail_crc) "
      "VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM job_events WHERE job_id = ?1), ?2, ?3, "
      "?4, ?5, ?6, ?7) RETURNING seq");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, ev.job_id).bind(2, ev.time_ms).bind(3, ev.type);
  if (ev.from_state) s->bind(4, job_state_name(*ev.from_state)); else s->bind_null(4);
  if (ev.to_state) s->bind(5, job_state_name(*ev.to_state)); else s->bind_null(5);
  s->bind(6, ev.detail_json).bind(7, document_checksum(std::string_view(ev.detail_json)));
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return make_error(ErrorCode::io, "inserting an event returned no sequence number");
  const int64_t seq = s->column_int64(0);
  if (auto st = s->run(); !st) return st.error();  // finish the statement
  if (auto st = queue_webhook_deliveries(ev, seq); !st) return st.error();
  return seq;
}

// ---------------------------------------------------------------- Store: reads

Expected<std::optional<JobRow>> Store::get_job(int64_t id) {
  auto r = reader();
  if (!r) return r.error();
  return query_job(**r, id);
}

Expected<std::optional<std::pair<JobRow, std::vector<JobEventRow>>>> Store::get_job_with_events(
    int64_t id) {
  auto r = reader();
  if (!r) return r.error();
  Connection& db = **r;
  if (auto st = db.exec("BEGIN"); !st) return st.error();
  auto job = query_job(db, id);
  Expected<std::vector<JobEventRow>> events = std::vector<JobEventRow>{};
  if (job && *job) events = query_events(db, id);
  db.reset_all();
  (void)db.exec("COMMIT");
  if (!job) return job.error();
  if (!*job) return std::optional<std::pair<JobRow, std::vector<JobEventRow>>>{};
  if (!events) return events.error();
  return std::optional<std::pair<JobRow, std::vector<JobEventRow>>>(
      std::make_pair(std::move(**job), std::move(*events)));
}

Expected<std::vector<JobRow>> Store::list_jobs(const JobQuery& q) {
  auto r = reader();
  if (!r) return r.error();
  Connection& db = **r;
  // q.owner (auth): one user's jobs, served by the index jobs(owner, state, id).
  // q.array_id: one job array's jobs, served by the index jobs(array_id, id).
  const std::string conds = std::string(q.owner ? "owner = ?4 AND " : "") + (q.array_id ? "array_id = ?5 AND " : "");
  auto p = q.state ? db.prepare(std::string("SELECT ") + kJobListColumns + " FROM jobs WHERE " +
                                conds + "state = ?1 AND id > ?2 ORDER BY id LIMIT ?3")
                   : db.prepare(std::string("SELECT ") + kJobListColumns + " FROM jobs WHERE " +
                                conds + "id > ?2 ORDER BY id LIMIT ?3");
  if (!p) return p.error();
  StatementUse s(*p);
  if (q.state) s->bind(1, job_state_name(*q.state));
  if (q.owner) s->bind(4, *q.owner);
  if (q.array_id) s->bind(5, *q.array_id);
  s->bind(2, q.after_id).bind(3, q.limit);
  // One damaged row is listed as damaged, never the whole listing's failure.
  std::vector<JobRow> out;
  Status read = for_each_row(*s, [&out](const Statement& row) {
    auto job = read_job(row);
    if (job) {
      out.push_back(std::move(*job));
      return;
    }
    JobRow damaged;
    damaged.id = row.column_int64(0);
    damaged.name = row.column_text(1);
    if (auto state = stored_job_state(row.column_text(3))) damaged.state = *state;
    damaged.damaged = job.error().message;
    out.push_back(std::move(damaged));
  });
  if (!read) return std::move(read).error();
  return out;
}
Expected<std::vector<LeaseSummary>> Store::lease_summaries() {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(
      "SELECT id, worker_id, lease_epoch, chosen, progress, resource_gpus, "
      "COALESCE((SELECT MAX(time_ms) FROM job_events e WHERE e.job_id = jobs.id AND e.type = 'leased'), updated_ms) "
      "FROM jobs WHERE state IN ('placed', 'running') AND worker_id IS NOT NULL ORDER BY id");
  if (!p) return p.error();
  StatementUse s(*p);
  return read_rows<LeaseSummary>(*s, [](const Statement& r) -> Expected<LeaseSummary> {
    auto chosen = stored_choice(r.column_opt_text(3), r.column_int64(0));
    if (!chosen) return chosen.error();
    return LeaseSummary{r.column_int64(0), r.column_int64(1), r.column_int64(2), std::move(*chosen),
                        r.column_opt_text(4), r.column_int64(6), static_cast<int>(r.column_int64(5))};
  });
}

Expected<std::vector<FinishedRun>> Store::finished_runs_keyed(const std::string& name, const std::string& spec_json,
                                                              int limit) {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(
      "SELECT j.id, j.worker_id, "
      "(SELECT MAX(time_ms) FROM job_events e WHERE e.job_id = j.id AND e.type = 'started'), "
      "(SELECT MAX(time_ms) FROM job_events e WHERE e.job_id = j.id AND e.type = 'succeeded'), "
      "(SELECT COUNT(*) FROM job_events e WHERE e.job_id = j.id AND e.type = 'started') "
      "FROM jobs j WHERE j.job_key = json_array(?1, json_extract(?3, '$.command')) AND j.state = 'succeeded' "
      "AND j.worker_id IS NOT NULL ORDER BY j.id DESC LIMIT ?2");
  if (!p) return p.error();
  StatementUse s(*p);
  // The key is made by SQLite from the same canonical text the row stores, so both sides of = are
  // written by one encoder.
  s->bind(1, name);
  s->bind(2, static_cast<int64_t>(limit));
  s->bind(3, spec_json);
  return read_rows<FinishedRun>(*s, [](const Statement& r) {
    return FinishedRun{r.column_int64(0), r.column_int64(1), r.column_int64(2), r.column_int64(3), r.column_int64(4)};
  });
}

Expected<std::vector<std::pair<int64_t, int64_t>>> Store::active_leases(const std::optional<std::string>& owner) {
  auto r = reader();
  if (!r) return r.error();
  // A gang's other nodes hold the job too (gang_members; rank 0 is the job's own worker; a vacant
  // rank, worker 0, holds nothing).
  const std::string owned = owner ? " AND j.owner = ?1" : "";
  auto p = (**r).prepare("SELECT j.id, j.worker_id FROM jobs j WHERE j.state IN ('placed', 'running') "
                         "AND j.worker_id IS NOT NULL" + owned +
                         " UNION SELECT g.job_id, g.worker_id FROM gang_members g JOIN jobs j "
                         "ON j.id = g.job_id AND j.lease_epoch = g.epoch WHERE j.state IN ('placed', 'running') "
                         "AND g.worker_id > 0" + owned + " ORDER BY 1, 2");
  if (!p) return p.error();
  StatementUse s(*p);
  if (owner) s->bind(1, *owner);
  return read_rows<std::pair<int64_t, int64_t>>(
      *s, [](const Statement& r) { return std::make_pair(r.column_int64(0), r.column_int64(1)); });
}

Expected<std::string> Store::held_reason(int64_t job_id) {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(
      "SELECT COALESCE(CASE WHEN json_valid(detail) THEN json_extract(detail, '$.reason') END, '') "
      "FROM job_events WHERE job_id = ?1 AND type = 'held' ORDER BY seq DESC LIMIT 1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id);
  auto reason = read_first_row<std::string>(*s, [](const Statement& row) { return row.column_text(0); });
  if (!reason) return reason.error();
  return reason->value_or("");
}

Expected<std::map<JobState, int64_t>> Store::count_jobs_by_state() {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state");
  if (!p) return p.error();
  StatementUse s(*p);
  std::map<JobState, int64_t> out;
  Status read = for_each_row(*s, [&out](const Statement& r) -> Status {
    auto st = stored_job_state(r.column_text(0));
    if (!st) return st.error();
    out[*st] = r.column_int64(1);
    return {};
  });
  if (!read) return std::move(read).error();
  return out;
}

}  // namespace jobctl::daemon::store
