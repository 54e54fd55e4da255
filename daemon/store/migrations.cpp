#include "daemon/store/migrations.h"

#include <algorithm>
#include <string>

#include "daemon/store/row_codecs.h"

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
  placement        TEXT                         -- JSON; since version 6 in job_placements
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

// Version 5 (auth): API tokens (only the SHA-256 of each secret is stored), the owner
// of every job (the submitting token's user; '' for jobs submitted without auth) and the
// client's idempotency key of its submit (a retried submit returns the first job).
constexpr std::string_view kV5 = R"sql(
CREATE TABLE api_tokens (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  user       TEXT    NOT NULL,
  role       TEXT    NOT NULL,                 -- admin | user | worker
  hash       TEXT    NOT NULL UNIQUE,          -- SHA-256 of the secret, lowercase hex
  prefix     TEXT    NOT NULL,                 -- first characters of the secret, for listings
  created_ms INTEGER NOT NULL,
  revoked_ms INTEGER
);
ALTER TABLE jobs ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN idempotency_key TEXT;
CREATE UNIQUE INDEX jobs_owner_idempotency ON jobs(owner, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_owner_state_id ON jobs(owner, state, id);
CREATE INDEX jobs_owner_id ON jobs(owner, id);
)sql";

// Version 3 (recovery): the checkpoints each job has in the blob store (the bytes are
// files under <data_dir>/checkpoints; these rows say which exist and their checksums).
constexpr std::string_view kV3 = R"sql(
CREATE TABLE checkpoints (
  job_id     INTEGER NOT NULL REFERENCES jobs(id),
  step       INTEGER NOT NULL,
  bytes      INTEGER NOT NULL,
  crc32c     INTEGER NOT NULL,                  -- CRC32C of the whole blob
  file       TEXT    NOT NULL,                  -- blob name in the job's folder
  worker_id  INTEGER NOT NULL,                  -- uploader and its lease epoch
  epoch      INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  PRIMARY KEY (job_id, step)
) WITHOUT ROWID;
CREATE INDEX jobs_lease_expiry ON jobs(lease_expires_ms) WHERE lease_expires_ms IS NOT NULL;
)sql";

// Version 2 (placement and cost): the cost ledger (one row per
// billed interval of a resource; (resource, start_ms) is the key so that an open interval is
// extended by re-accruing it) and the runtime-efficiency calibration per (GPU model, model kind).
constexpr std::string_view kV2 = R"sql(
CREATE TABLE ledger (
  resource               TEXT    NOT NULL,      -- "instance:<id>" or "local:<worker>:gpu<k>"
  start_ms               INTEGER NOT NULL,
  end_ms                 INTEGER NOT NULL,
  job_id                 INTEGER NOT NULL,      -- 0: no job
  kind                   TEXT    NOT NULL,      -- local | on_demand | spot
  usd_per_hour           REAL    NOT NULL,
  on_demand_usd_per_hour REAL    NOT NULL,      -- what the same time costs on demand
  user                   TEXT    NOT NULL,
  billed_seconds         INTEGER NOT NULL,      -- ceil((end_ms - start_ms) / 1000)
  usd                    REAL    NOT NULL,
  on_demand_usd          REAL    NOT NULL,
  PRIMARY KEY (resource, start_ms)
) WITHOUT ROWID;
CREATE INDEX ledger_start ON ledger(start_ms);
CREATE INDEX ledger_job ON ledger(job_id);

CREATE TABLE calibration (
  gpu_model      TEXT    NOT NULL,
  model_kind     TEXT    NOT NULL,
  log_efficiency REAL    NOT NULL,
  samples        INTEGER NOT NULL,
  updated_ms     INTEGER NOT NULL,
  PRIMARY KEY (gpu_model, model_kind)
) WITHOUT ROWID;
)sql";

// Version 4 (clouds): the instances the provisioner launched or adopted. The provider
// is the truth about what runs; these rows are what the daemon bills and reconciles against.
constexpr std::string_view kV4 = R"sql(
CREATE TABLE instances (
  id                     TEXT    PRIMARY KEY,   -- the provider's id
  provider               TEXT    NOT NULL,      -- sim | exec
  instance_type          TEXT    NOT NULL,
  region                 TEXT    NOT NULL,
  zone                   TEXT    NOT NULL,
  spot                   INTEGER NOT NULL,      -- 0 | 1
  state                  TEXT    NOT NULL,      -- pending | running | shutting-down | terminated | ...
  job_id                 INTEGER NOT NULL,      -- the job it was launched for; 0: adopted
  usd_per_hour           REAL    NOT NULL,
  on_demand_usd_per_hour REAL    NOT NULL,
  launched_ms            INTEGER NOT NULL,
  ended_ms               INTEGER,
  idle_since_ms          INTEGER,
  notice_ms              INTEGER,
  reason                 TEXT    NOT NULL,
  segment_start_ms       INTEGER NOT NULL,      -- the ledger interval being accrued
  segment_job_id         INTEGER NOT NULL,
  segment_user           TEXT    NOT NULL
) WITHOUT ROWID;
)sql";

// Version 6 (scale): the placement document (kilobytes: the whole candidate table) moves
// out of the jobs row into job_placements, so that updating a job (every heartbeat) no longer
// rewrites it; the jobs row keeps only the chosen candidate, which matching, estimates and the
// ledger read.
constexpr std::string_view kV6 = R"sql(
CREATE TABLE job_placements (
  job_id    INTEGER PRIMARY KEY REFERENCES jobs(id),
  placement TEXT    NOT NULL                   -- JSON: chosen, candidates, reason, ...
);
INSERT INTO job_placements (job_id, placement) SELECT id, placement FROM jobs WHERE placement IS NOT NULL;
ALTER TABLE jobs ADD COLUMN chosen TEXT;       -- JSON: the placement's chosen candidate, or NULL
UPDATE jobs SET chosen = json_extract(placement, '$.chosen'), placement = NULL WHERE placement IS NOT NULL;
)sql";

// Version 7 (worker identity): the SHA-256 of each worker's secret, issued when it registers
// and sent with every call it makes (docs/security.md); NULL for workers registered before.
constexpr std::string_view kV7 = R"sql(
ALTER TABLE workers ADD COLUMN secret_hash TEXT;
CREATE UNIQUE INDEX workers_secret_hash ON workers(secret_hash) WHERE secret_hash IS NOT NULL;
)sql";

// Version 8 (billing per lease): an owned-GPU lease's ledger rows are written when the lease is
// granted, open (billed up to now when read), and closed at the lease's end in the transaction
// that ends it (daemon/ledger/lease_ledger.h).
constexpr std::string_view kV8 = R"sql(
ALTER TABLE ledger ADD COLUMN open INTEGER NOT NULL DEFAULT 0;  -- 1: the lease has not ended
CREATE INDEX ledger_open ON ledger(job_id) WHERE open = 1;
)sql";

// Version 9 (runtime calibration per finished run): what a run spends outside its steps (start-up,
// evaluation, checkpoints), learned beside the efficiency (cost/efficiency_calibrator.h).
constexpr std::string_view kV9 = R"sql(
ALTER TABLE calibration ADD COLUMN overhead_s REAL NOT NULL DEFAULT 0;
ALTER TABLE calibration ADD COLUMN overhead_samples INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 10 (Slurm): the batch jobs jobctld submitted for jobs placed on a Slurm partition, one
// row per submission (daemon/slurm/slurm_launcher.h), as the instances table records cloud
// instances. Ended rows stay: the job's history and what Slurm ran for it.
constexpr std::string_view kV10 = R"sql(
CREATE TABLE slurm_jobs (
  slurm_job_id       INTEGER PRIMARY KEY,           -- Slurm's job id
  job_id             INTEGER NOT NULL,              -- the jobctl job it runs (0: adopted, unknown)
  partition          TEXT    NOT NULL,
  gpus               INTEGER NOT NULL,
  state              TEXT    NOT NULL,              -- pending | running | ended
  submitted_ms       INTEGER NOT NULL,
  ended_ms           INTEGER,
  restarts_at_launch INTEGER NOT NULL DEFAULT 0,    -- Slurm's restart count when recorded
  event              TEXT    NOT NULL DEFAULT '',   -- how it ended (slurm/job_outcome.h)
  reason             TEXT    NOT NULL DEFAULT ''    -- why it was submitted, adopted or ended
);
CREATE INDEX slurm_jobs_live ON slurm_jobs(job_id) WHERE state != 'ended';
)sql";

// Version 11 (command jobs): a token's permissions beyond its role, granted by an admin: "commands"
// lets a user's token submit command jobs (docs/security.md).
constexpr std::string_view kV11 = R"sql(
ALTER TABLE api_tokens ADD COLUMN permissions TEXT NOT NULL DEFAULT '';
)sql";

// Version 12 (command job runtimes): placement prices a command job with no runtime hint from
// the earlier runs of jobs with its name, read at every decision (by job key since version 16).
constexpr std::string_view kV12 = R"sql(
CREATE INDEX jobs_name_state ON jobs(name, state, id);
)sql";

// Version 13 (placement at scale): the rejection key (scheduler::rejection_key) of a queued job
// whose last decision found nothing to run it, so that placement knows after a restart which
// jobs wait for what without reading their specs, and tries one job of each key
// (daemon/placement/placement_passes.h). NULL: placed, held for spot, or decided before. From this
// version placement documents are written deflated (a BLOB, daemon/store/deflated_text.h); rows
// written before stay TEXT and read as they are. The keys
// are read at start through their own (partial) index, not from the rows: a row holds kilobytes of
// placement document before the key.
constexpr std::string_view kV13 = R"sql(
ALTER TABLE job_placements ADD COLUMN unplaceable_key TEXT;
CREATE INDEX job_placements_unplaceable_key ON job_placements(unplaceable_key) WHERE unplaceable_key IS NOT NULL;
)sql";

// Version 14 (blobs): who stored which code bundle, and how many bytes (per-user quotas, deletion
// after a retention period); the calibration's recent runs, so that its robust estimate (a
// weighted median over a window, cost/efficiency_calibrator.h) survives a restart.
constexpr std::string_view kV14 = R"sql(
CREATE TABLE bundles (
  sha256    TEXT    NOT NULL,
  user      TEXT    NOT NULL,            -- who uploaded it ('' with auth off, or found on disk)
  bytes     INTEGER NOT NULL,
  stored_ms INTEGER NOT NULL,
  PRIMARY KEY (sha256, user)
);
CREATE INDEX bundles_user ON bundles(user);
ALTER TABLE calibration ADD COLUMN window TEXT NOT NULL DEFAULT '';
)sql";

// An instance launched for one command job runs that job alone (cloud/provider.h, for_job).
constexpr std::string_view kV15 = R"sql(
ALTER TABLE instances ADD COLUMN dedicated INTEGER NOT NULL DEFAULT 0;  -- 1: runs job_id alone
)sql";

// Version 16 (job keys): a command job's runtime history is read by its job key, its name and
// its command together (Store::finished_runs_keyed), not its name alone: `train.py --steps 300`
// and `train.py --steps 30000` share a name. Computed from the row (a virtual column: nothing to
// write, rows stored before have one too); NULL for a job that is not a command job.
constexpr std::string_view kV16 = R"sql(
ALTER TABLE jobs ADD COLUMN job_key TEXT GENERATED ALWAYS AS (
  CASE WHEN json_valid(spec) AND json_type(spec, '$.command') = 'array'
       THEN json_array(name, json_extract(spec, '$.command')) END) VIRTUAL;
CREATE INDEX jobs_key_state ON jobs(job_key, state, id) WHERE job_key IS NOT NULL;
)sql";

// Version 17 (job outputs): a job's outputs, the files its program left in JOBCTL_OUTPUT_DIR:
// one row per file, its bytes a blob under <data_dir>/outputs/job-<id>/<blob>.
constexpr std::string_view kV17 = R"sql(
CREATE TABLE job_outputs (
  job_id      INTEGER NOT NULL,
  path        TEXT    NOT NULL,          -- relative, '/'-separated (bundle/'s path rules)
  user        TEXT    NOT NULL,          -- the job's owner ('' with auth off): the per-user quota
  bytes       INTEGER NOT NULL,
  blob        TEXT    NOT NULL,
  uploaded_ms INTEGER NOT NULL,
  PRIMARY KEY (job_id, path)
);
CREATE INDEX job_outputs_user ON job_outputs(user);
)sql";

// Version 18 (notifications): a user's webhooks, and the outbox of their deliveries. A delivery
// row is written in the same transaction as the job event it reports (WriteTxn::append_event),
// so an event that committed is delivered even across a restart (at least once).
constexpr std::string_view kV18 = R"sql(
CREATE TABLE webhooks (
  id          INTEGER PRIMARY KEY,
  owner       TEXT    NOT NULL,          -- the user whose jobs it reports ('' with auth off)
  url         TEXT    NOT NULL,
  events      TEXT    NOT NULL,          -- job event types, comma-separated: "succeeded,failed"
  secret      TEXT    NOT NULL,          -- the HMAC-SHA256 key (hex); kept to sign every delivery
  created_ms  INTEGER NOT NULL
);
CREATE INDEX webhooks_owner ON webhooks(owner);
CREATE TABLE webhook_deliveries (
  id               INTEGER PRIMARY KEY,
  webhook_id       INTEGER NOT NULL,
  job_id           INTEGER NOT NULL,
  event_seq        INTEGER NOT NULL,     -- job_events(job_id, seq): what is reported
  event            TEXT    NOT NULL,
  state            TEXT    NOT NULL,     -- pending | delivered | failed
  attempts         INTEGER NOT NULL DEFAULT 0,
  next_attempt_ms  INTEGER NOT NULL,
  last_status      INTEGER NOT NULL DEFAULT 0,  -- the receiver's HTTP status (0: none)
  last_error       TEXT    NOT NULL DEFAULT '',
  created_ms       INTEGER NOT NULL,
  finished_ms      INTEGER                -- delivered or given up
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_ms) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_hook ON webhook_deliveries(webhook_id, id);
)sql";

// Version 19 (job arrays): a sweep's jobs share array_id, the id of its first job; NULL for a job
// submitted alone. The index serves `GET /v1/jobs?array=ID` and cancelling an array.
constexpr std::string_view kV19 = R"sql(
ALTER TABLE jobs ADD COLUMN array_id INTEGER;
CREATE INDEX jobs_array ON jobs(array_id, id) WHERE array_id IS NOT NULL;
)sql";

constexpr std::string_view kV20 = R"sql(
CREATE TABLE gang_members (
  job_id     INTEGER NOT NULL REFERENCES jobs(id),
  rank       INTEGER NOT NULL,
  worker_id  INTEGER NOT NULL,
  epoch      INTEGER NOT NULL,
  gpus       TEXT NOT NULL,
  address    TEXT NOT NULL,
  expires_ms INTEGER NOT NULL,
  PRIMARY KEY (job_id, rank)
);
CREATE INDEX gang_members_expiry ON gang_members(expires_ms) WHERE rank > 0;
)sql";

// The gang's rendezvous port on every node's row: a node leased later (the replacement of a lost
// one) is told the same master. A row of worker 0 is a vacant rank awaiting its replacement.
constexpr const char* kV21 = R"sql(
ALTER TABLE gang_members ADD COLUMN master_port INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 22: every stored document's checksum beside it (row_codecs.h: CRC32C of its bytes,
// verified on every read; NULL with an absent document), computed here for the rows written
// before by SQL's crc32c(), the same function (sqlite.cpp).
constexpr const char* kV22 = R"sql(
ALTER TABLE jobs ADD COLUMN spec_crc INTEGER;
ALTER TABLE jobs ADD COLUMN progress_crc INTEGER;
ALTER TABLE jobs ADD COLUMN result_crc INTEGER;
ALTER TABLE jobs ADD COLUMN chosen_crc INTEGER;
UPDATE jobs SET spec_crc = crc32c(spec), progress_crc = crc32c(progress), result_crc = crc32c(result),
  chosen_crc = crc32c(chosen);
ALTER TABLE job_placements ADD COLUMN placement_crc INTEGER;
UPDATE job_placements SET placement_crc = crc32c(placement);
ALTER TABLE job_events ADD COLUMN detail_crc INTEGER;
UPDATE job_events SET detail_crc = crc32c(detail);
)sql";

// Version 23: the blobs' metadata rows get their checksum (row_codecs.h: JOBCTL_*_ROW_CRC, the
// expression their writes and reads use), computed here for the rows stored before.
constexpr const char* kV23 =
    "ALTER TABLE checkpoints ADD COLUMN row_crc INTEGER;\n"
    "UPDATE checkpoints SET row_crc = " JOBCTL_CHECKPOINT_ROW_CRC ";\n"
    "ALTER TABLE job_outputs ADD COLUMN row_crc INTEGER;\n"
    "UPDATE job_outputs SET row_crc = " JOBCTL_OUTPUT_ROW_CRC ";\n"
    "ALTER TABLE bundles ADD COLUMN row_crc INTEGER;\n"
    "UPDATE bundles SET row_crc = " JOBCTL_BUNDLE_ROW_CRC ";\n";

// Version 24 (container images): the digest of the image a job's newest lease runs, as its worker
// reported it; and each user's registry logins, the password sealed under the data directory's
// key file (auth/credential_seal.h), bound to its owner, registry and username. row_crc as the
// blobs' rows (row_codecs.h).
constexpr const char* kV24 = R"sql(
ALTER TABLE jobs ADD COLUMN image_digest TEXT;
CREATE TABLE registry_credentials (
  owner      TEXT    NOT NULL,          -- the user ('' with auth off)
  registry   TEXT    NOT NULL,          -- host[:port]
  username   TEXT    NOT NULL,
  sealed     BLOB    NOT NULL,          -- AES-256-GCM: nonce, ciphertext, tag
  updated_ms INTEGER NOT NULL,
  row_crc    INTEGER,
  PRIMARY KEY (owner, registry)
);
)sql";

}  // namespace

const std::vector<Migration>& migrations() {
  static const std::vector<Migration> list = {
      {1, "jobs, job_events, workers", kV1},
      {2, "ledger, calibration", kV2},
      {3, "checkpoints", kV3},
      {4, "instances", kV4},
      {5, "api_tokens, jobs.owner, jobs.idempotency_key", kV5},
      {6, "job_placements, jobs.chosen", kV6},
      {7, "workers.secret_hash", kV7},
      {8, "ledger.open", kV8},
      {9, "calibration.overhead_s", kV9},
      {10, "slurm_jobs", kV10},
      {11, "api_tokens.permissions", kV11},
      {12, "jobs_name_state", kV12},
      {13, "job_placements.unplaceable_key", kV13},
      {14, "bundles, calibration.window", kV14},
      {15, "instances.dedicated", kV15},
      {16, "jobs.job_key", kV16},
      {17, "job_outputs", kV17},
      {18, "webhooks, webhook_deliveries", kV18},
      {19, "jobs.array_id", kV19},
      {20, "gang_members", kV20},
      {21, "gang_members.master_port", kV21},
      {22, "jobs.*_crc, job_placements.placement_crc, job_events.detail_crc", kV22},
      {23, "checkpoints.row_crc, job_outputs.row_crc, bundles.row_crc", kV23},
      {24, "jobs.image_digest, registry_credentials", kV24},
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

Expected<int> apply_migrations(Connection& db, int64_t now_ms, const std::vector<Migration>& given) {
  // Applied in version order, whatever order the list declares them in.
  std::vector<Migration> list = given;
  std::sort(list.begin(), list.end(),
            [](const Migration& a, const Migration& b) { return a.version < b.version; });
  auto current = schema_version(db);
  if (!current) return current.error();
  int version = *current;
  const int newest = list.empty() ? 0 : list.back().version;
  if (version > newest)
    return make_error(ErrorCode::io, "the database is at schema version " + std::to_string(version) +
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
      return make_error(ErrorCode::io, "migration " + std::to_string(m.version) + " (" +
                                  std::string(m.name) + ") failed: " + st.error().message);
    }
    version = m.version;
  }
  return version;
}

}  // namespace jobctl::daemon::store
