#include "daemon/store/migrations.h"

#include <string>

namespace jobctl::daemon::store {

namespace {

// Version 1: jobs, their audit trail, workers.
// jobs_state_id serves `GET /v1/jobs?state=S&after=ID&limit=N` (keyset pagination in id order)
// and loading the queue at start; the primary key serves the unfiltered listing.
constexpr std::string_view kV1 = R"sql(
CREATE TABLE jobs (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  name             TEXT    NOT NULL,
  spec             TEXT    NOT NULL,            -- canonical JSON (train::to_json)
  state            TEXT    NOT NULL,            -- scheduler::to_string(JobState)
  priority         INTEGER NOT NULL,
  resource_gpu     TEXT    NOT NULL,            -- spec.resources.gpu, for matching without parsing
  resource_gpus    INTEGER NOT NULL,
  created_ms       INTEGER NOT NULL,
  updated_ms       INTEGER NOT NULL,
  worker_id        INTEGER,                     -- holder of the current or last lease
  lease_epoch      INTEGER NOT NULL DEFAULT 0,  -- fencing token, +1 per lease
  lease_expires_ms INTEGER,                     -- renewed by heartbeats
  progress         TEXT,                        -- JSON from the last heartbeat
  result           TEXT,                        -- JSON reported on success
  error            TEXT,                        -- reason of failure
  recoveries       INTEGER NOT NULL DEFAULT 0,
  placement        TEXT                         -- JSON, reserved for cost-based placement
);
CREATE INDEX jobs_state_id ON jobs(state, id);

CREATE TABLE job_events (
  job_id     INTEGER NOT NULL REFERENCES jobs(id),
  seq        INTEGER NOT NULL,                  -- 1, 2, 3, ... per job
  time_ms    INTEGER NOT NULL,
  type       TEXT    NOT NULL,
  from_state TEXT,
  to_state   TEXT,
  detail     TEXT,                              -- JSON object
  PRIMARY KEY (job_id, seq)
) WITHOUT ROWID;

CREATE TABLE workers (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  name          TEXT    NOT NULL,
  capabilities  TEXT    NOT NULL,               -- JSON
  registered_ms INTEGER NOT NULL,
  last_seen_ms  INTEGER NOT NULL,
  state         TEXT    NOT NULL                -- active | lost | gone
);
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list = {
      {1, "jobs, job_events, workers", kV1},
  };
  return list;
}

Expected<int> schema_version(Connection& db) {
  if (auto st = db.exec("CREATE TABLE IF NOT EXISTS schema_version ("
                        "version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
                        "applied_ms INTEGER NOT NULL)");
      !st)
    return st.error();
  auto stmt = db.prepare("SELECT COALESCE(MAX(version), 0) FROM schema_version");
  if (!stmt) return stmt.error();
  auto row = (*stmt)->step();
  if (!row) return row.error();
  const int v = static_cast<int>((*stmt)->column_int64(0));
  (*stmt)->reset();
  return v;
}

Expected<int> apply_migrations(Connection& db, int64_t now_ms, const std::vector<Migration>& list) {
  auto current = schema_version(db);
  if (!current) return current.error();
  int version = *current;
  const int newest = list.empty() ? 0 : list.back().version;
  if (version > newest)
    return make_error("io", "the database is at schema version " + std::to_string(version) +
                                " but this jobctld knows only up to " + std::to_string(newest) +
                                "; use a newer jobctld");
  for (const Migration& m : list) {
    if (m.version <= version) continue;
    if (auto st = db.exec("BEGIN IMMEDIATE"); !st) return st.error();
    Status st = db.exec(m.sql);
    if (st) {
      auto ins = db.prepare("INSERT INTO schema_version(version, name, applied_ms) VALUES (?1, ?2, ?3)");
      if (!ins) {
        st = ins.error();
      } else {
        st = (*ins)->bind(1, m.version).bind(2, m.name).bind(3, now_ms).run();
      }
    }
    if (st) st = db.exec("COMMIT");
    if (!st) {
      (void)db.exec("ROLLBACK");
      return make_error("io", "migration " + std::to_string(m.version) + " (" +
                                  std::string(m.name) + ") failed: " + st.error().message);
    }
    version = m.version;
  }
  return version;
}

}  // namespace jobctl::daemon::store
