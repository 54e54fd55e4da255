// jobctld's durable state: one SQLite file (WAL mode) under --data-dir.
//
// Writes are group-committed. One writer thread owns the only write connection and drains a queue
// of changes: each batch is one BEGIN IMMEDIATE ... COMMIT, each change in it runs inside its own
// SAVEPOINT, so a change that fails rolls back alone while the others commit. A change's caller
// is completed only after the COMMIT that contains it (or with that COMMIT's error), so an
// acknowledged change is durable (synchronous=FULL by default: docs/configuration.md explains
// the choice). Batching makes one fsync serve many concurrent callers.
//
// A change is a function over a WriteTxn, run on the writer thread. It reads what it needs
// through the same WriteTxn (so check-then-write is atomic: there is one writer), writes, and may
// register on_commit hooks: they run on the writer thread, in commit order, only if the change
// committed — the place to update in-memory indexes that mirror the database.
//
// Reads use a small pool of separate connections (WAL readers never block the writer).
//
// WAL checkpoints: SQLite's autocheckpoint would copy the WAL into the database inside the COMMIT
// that crosses its threshold, with that batch's callers waiting for the copy and the database
// file's fsync (measured at 2,000 submits/s: 4-20 ms every 45-110 ms). Instead a WAL hook notes
// the WAL's length after each commit, and past StoreOptions::wal_checkpoint_frames the writer
// runs the same PASSIVE checkpoint after the batch's callbacks: those callers have their answer,
// and the checkpoint is timed apart (WriterObserver). It stays on the writer's thread: on a
// connection of its own, concurrent with the writer, a checkpoint never caught up with commits
// arriving every millisecond or two, so the WAL never restarted and grew without bound
// (bench/RESULTS.md, 2026-11-25).
//
// Ownership and thread safety: a Store is safe to use from any number of threads. Changes,
// hooks and completion callbacks run on the writer thread and must not block on the store
// (write() from the writer thread returns an error instead of deadlocking); write_async is fine.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "base/mutex.h"
#include "daemon/store/deflated_text.h"
#include "daemon/store/records.h"
#include "daemon/store/sqlite.h"

namespace jobctl::daemon::store {

struct StoreOptions {
  std::string path;                  // the database file; created when absent
  std::string synchronous = "FULL";  // FULL (default) or NORMAL
  int max_batch = 512;               // most changes per COMMIT
  int max_readers = 8;               // most reader connections open at once
  int relaxed_linger_us = 2000;      // how long a batch of relaxed changes waits for more
  // The writer checkpoints the WAL after a commit that leaves at least this many frames in it
  // (SQLite's own autocheckpoint default, run by the writer itself so that it can be timed).
  int wal_checkpoint_frames = 1000;
};

// What the writer measured of one write batch (steady clock), for /metrics: what drives the
// latency of a write when it grows.
struct CommitTiming {
  size_t changes = 0;       // changes in the batch (one COMMIT)
  bool durable = true;      // synced as configured; false: relaxed changes only, no fsync
  double queue_wait_s = 0;  // the longest any of them waited in the queue before the batch began
  double commit_s = 0;      // the COMMIT: writing the WAL frames and, when durable, the fsync
};
// One WAL checkpoint run by the writer (PASSIVE: it copies what no reader still needs).
struct CheckpointTiming {
  double seconds = 0;
  int64_t wal_frames = 0;           // frames in the WAL when it began
  int64_t checkpointed_frames = 0;  // frames it copied into the database
};
// Told of each commit and checkpoint on the writer thread: must be quick and must not use the
// store.
struct WriterObserver {
  std::function<void(const CommitTiming&)> committed;
  std::function<void(const CheckpointTiming&)> checkpointed;
};

// The view a change has of the database, inside the writer's transaction. Only valid during the
// change's call, on the writer thread.
class WriteTxn {
 public:
  WriteTxn(Connection& db, std::vector<std::function<void()>>& hooks) : db_(db), hooks_(hooks) {}

  Expected<std::optional<JobRow>> job(int64_t id);
  Expected<int64_t> insert_job(const JobRow& row);  // returns the new id
  Status update_job(const JobRow& row);             // every mutable column, by id (not placement_json)
  // Stores (or replaces) a job's placement document (JobRow::placement_json, deflated by the
  // caller: deflated_text.h), with the rejection key of a job the decision left unplaceable
  // (scheduler::rejection_key; nullopt otherwise).
  Status put_placement(int64_t job_id, const DeflatedText& placement,
                       const std::optional<std::string>& unplaceable_key = std::nullopt);
  // Returns the event's seq. An event a webhook of the job's owner subscribes to also queues its
  // delivery (store_webhooks.cpp), in this same transaction.
  Expected<int64_t> append_event(const JobEventRow& ev);

  Expected<std::optional<WorkerRow>> worker(int64_t id);
  Expected<int64_t> insert_worker(const WorkerRow& row);
  Status update_worker(const WorkerRow& row);

  // Runs `hook` on the writer thread after this change commits (never if it rolls back).
  void on_commit(std::function<void()> hook) { hooks_.push_back(std::move(hook)); }

  // ---- checkpoints and lease expiry (store_checkpoints.cpp)
  // A job's stored checkpoints, newest (highest step) first.
  Expected<std::vector<CheckpointRow>> checkpoints(int64_t job_id);
  // Inserts or replaces the row of (job_id, step).
  Status put_checkpoint(const CheckpointRow& row);
  Status delete_checkpoint(int64_t job_id, int64_t step);
  // Ids of jobs in placed or running whose lease expired before now_ms.
  Expected<std::vector<int64_t>> jobs_with_expired_leases(int64_t now_ms);
  // Ids of jobs in placed or running leased to this worker (as a gang's node too).
  Expected<std::vector<int64_t>> jobs_leased_to(int64_t worker_id);
  // Ids of jobs in a terminal state that still have checkpoint rows to sweep: every such job but
  // one that succeeded at or after keep_final_since_ms and keeps a single checkpoint (its final
  // one, kept with its outputs).
  Expected<std::vector<int64_t>> finished_jobs_with_checkpoints(int64_t keep_final_since_ms);
  // Sets every active lease's expiry (and every gang node's, a vacant rank's only when sooner)
  // to `expires_ms`: a restarted daemon gives its workers one lease timeout to reconnect, counted
  // from its start whatever the wall clock did while it was down (a deadline stored under a clock
  // stepped back since would otherwise keep a dead worker's job for as long). Returns how many
  // leases were re-based.
  Expected<int64_t> rebase_active_leases(int64_t expires_ms);

  // ---- gangs: the nodes of a job's current lease (store_gangs.cpp, migration 20)
  // The job's nodes, in rank order (none: not a gang, or not leased).
  Expected<std::vector<GangMemberRow>> gang_members(int64_t job_id);
  // Inserts or replaces the row of (job_id, rank).
  Status put_gang_member(const GangMemberRow& row);
  Status delete_gang_members(int64_t job_id);
  // The rank > 0 nodes whose own lease expired before now_ms.
  Expected<std::vector<GangMemberRow>> expired_gang_members(int64_t now_ms);

  // ---- webhooks (store_webhooks.cpp, migration 18)
  Expected<int64_t> insert_webhook(const WebhookRow& row);  // returns the new id
  Expected<int64_t> webhook_count(const std::string& owner);
  // Deletes `owner`'s webhook `id` and its deliveries; false when `owner` has no such webhook.
  Expected<bool> delete_webhook(const std::string& owner, int64_t id);
  // Records how an attempt at a delivery went (state, attempts, next attempt, status, error).
  Status update_delivery(const WebhookDeliveryRow& row);
  // Deletes a webhook's finished deliveries beyond its newest `keep`.
  Status trim_deliveries(int64_t webhook_id, int keep);

  // ---- auth and limits (store_tokens.cpp)
  // Records who submitted a job and its idempotency key (empty: none).
  Status set_job_submitter(int64_t job_id, const std::string& owner, const std::string& idempotency_key);
  // Makes the job a member of the job array `array_id` (store_jobs.cpp).
  Status set_job_array(int64_t job_id, int64_t array_id);
  // Records the digest of the image the job's lease runs (JobRow::image_digest; store_jobs.cpp).
  Status set_job_image_digest(int64_t job_id, const std::string& digest);
  // The job an earlier submit with this (owner, key) created, if any.
  Expected<std::optional<int64_t>> job_by_idempotency_key(const std::string& owner, const std::string& key);
  // Jobs of `owner` waiting to run (queued or held).
  Expected<int64_t> count_waiting_jobs(const std::string& owner);
  // What `owner`'s queued, placed and running jobs other than `except_job` are still expected to
  // cost: each one's chosen option's estimated cost times the work left (its stored progress);
  // a job not placed yet counts 0. Returns the sum and the jobs counted.
  Expected<std::pair<double, int64_t>> remaining_estimates_usd(const std::string& owner, int64_t except_job);
  // The user who submitted the job ("" without auth); nullopt when there is no such job.
  Expected<std::optional<std::string>> job_owner(int64_t job_id);

  // ---- placement and cost (store_placement.cpp, store_ledger.cpp, migration 2)
  // Inserts or replaces the ledger row with the same (resource, start_ms).
  Status upsert_ledger(const LedgerRecord& row);
  // A job's open ledger rows (LedgerRecord::open), as stored.
  Expected<std::vector<LedgerRecord>> open_ledger_rows(int64_t job_id);
  Status put_calibration(const CalibrationRecord& row);

  // ---- code bundles (store_bundles.cpp, migration 14)
  // Bytes of the bundles stored by `user` (each bundle counted once per user).
  Expected<int64_t> bundle_bytes_of(const std::string& user);
  // Adds (sha256, user) unless that user already stored it; true when added.
  Expected<bool> put_bundle(const BundleRow& row);
  // Every stored bundle's SHA-256.
  Expected<std::vector<std::string>> bundle_shas();
  // The bundles no unfinished job names, last stored and last named by a job before cutoff_ms.
  Expected<std::vector<std::string>> bundles_unused_since(int64_t cutoff_ms);
  // Removes a bundle's rows: every user's, or only `user`'s.
  Status delete_bundle(const std::string& sha256, const std::optional<std::string>& user = std::nullopt);

  // ---- job outputs (store_outputs.cpp, migration 16)
  // A job's output files, by path.
  Expected<std::vector<OutputRow>> outputs(int64_t job_id);
  // Inserts or replaces the row of (job_id, path).
  Status put_output(const OutputRow& row);
  // Bytes of every output stored for `user`'s jobs.
  Expected<int64_t> output_bytes_of_user(const std::string& user);
  // Ids of the jobs that have output rows and finished (a terminal state) before cutoff_ms.
  Expected<std::vector<int64_t>> jobs_with_outputs_finished_before(int64_t cutoff_ms);
  // Ids of every job that has output rows.
  Expected<std::vector<int64_t>> jobs_with_outputs();
  // Removes a job's output rows: all of them, or the one at `path`.
  Status delete_outputs(int64_t job_id, const std::optional<std::string>& path = std::nullopt);

  // ---- registry credentials (store_registry_credentials.cpp, migration 24)
  // Inserts or replaces the row of (owner, registry).
  Status put_registry_credential(const RegistryCredentialRow& row);
  // false when `owner` has none for `registry`.
  Expected<bool> delete_registry_credential(const std::string& owner, const std::string& registry);
  Expected<std::optional<RegistryCredentialRow>> registry_credential(const std::string& owner,
                                                                     const std::string& registry);
  Expected<int64_t> registry_credentials_count(const std::string& owner);

  // ---- cloud instances (store_instances.cpp, migration 4)
  Expected<std::optional<InstanceRow>> instance(const std::string& id);
  // Inserts or replaces the row with this id.
  Status put_instance(const InstanceRow& row);

  // ---- Slurm batch jobs (store_slurm_jobs.cpp, migration 10)
  // Inserts or replaces the row with this Slurm job id.
  Status put_slurm_job(const SlurmJobRow& row);

 private:
  friend class Store;  // Store's own writes (store_tokens.cpp) run plain SQL in the transaction
  // append_event's part in store_webhooks.cpp.
  Status queue_webhook_deliveries(const JobEventRow& ev, int64_t seq);
  Connection& db_;
  std::vector<std::function<void()>>& hooks_;
};

// How a change's commit must reach the disk. `durable` (the default): the commit that contains it
// is synced as store.synchronous says (FULL: the WAL is fsynced) before `done` runs, so an
// acknowledged change survives a power cut. `relaxed`: for changes whose loss in a power cut is
// harmless because they are repeated anyway — heartbeats (progress, lease renewals: a restarted
// daemon extends every lease regardless). A batch of relaxed changes only is committed without
// the fsync; it is never reordered against durable changes, and the next durable commit syncs it
// too. A crash of the process (not the machine) loses nothing either way: the WAL is written.
// `deferred`: relaxed, and in no hurry — state a pass derives again if it is lost (placement
// decisions: each change checks that its job is unchanged since the pass read it). Deferred
// changes wait in a queue of their own and may commit after changes queued later: the writer
// takes the other queue first and, after each batch of it, at most kDeferredBatch deferred
// changes, so a submit waits behind a few of them, never behind a backlog of thousands, and
// they still progress under any load.
enum class Durability { durable, relaxed, deferred };

class Store {
 public:
  using Change = std::function<Status(WriteTxn&)>;
  using Done = std::function<void(Status)>;

  // Opens the file, sets WAL and the durability mode, applies migrations, starts the writer.
  static Expected<std::unique_ptr<Store>> open(StoreOptions options, const Clock& clock);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Queues a change; `done` runs on the writer thread once its batch has committed (or failed).
  // After close(), `done` runs at once on the caller's thread with code "unavailable".
  void write_async(Change change, Done done, Durability durability = Durability::durable);
  // Queues a change and waits for its outcome.
  Status write(Change change);
  // Runs a change that produces a value.
  template <class T>
  Expected<T> write_value(const std::function<Expected<T>(WriteTxn&)>& fn) {
    std::optional<T> out;
    Status st = write([&](WriteTxn& txn) -> Status {
      auto r = fn(txn);
      if (!r) return std::move(r).error();
      out = std::move(*r);
      return {};
    });
    if (!st) return std::move(st).error();
    return std::move(*out);
  }
  // The same without waiting: `done` runs on the writer thread (as write_async's does) with the
  // value once its batch has committed, or with the error.
  template <class T>
  void write_value_async(std::function<Expected<T>(WriteTxn&)> fn, std::function<void(Expected<T>)> done,
                         Durability durability = Durability::durable) {
    auto out = std::make_shared<std::optional<T>>();
    write_async(
        [fn = std::move(fn), out](WriteTxn& txn) -> Status {
          auto r = fn(txn);
          if (!r) return std::move(r).error();
          *out = std::move(*r);
          return {};
        },
        [out, done = std::move(done)](Status st) {
          if (!st) return done(std::move(st).error());
          done(std::move(**out));
        },
        durability);
  }

  // Sets (or with an empty one, clears) who is told of the writer's timings; any thread.
  void set_writer_observer(WriterObserver observer);

  // Finishes every queued change, then stops the writer. Idempotent.
  void close();

  // ---- reads (each a consistent snapshot) ----
  Expected<std::optional<JobRow>> get_job(int64_t id);
  // A job and its events from one snapshot.
  Expected<std::optional<std::pair<JobRow, std::vector<JobEventRow>>>> get_job_with_events(
      int64_t id);
  // Jobs in id order after q.after_id; rows carry no spec_json (listing stays light).
  Expected<std::vector<JobRow>> list_jobs(const JobQuery& q);
  Expected<std::vector<QueuedJobRow>> queued_jobs();
  // A gang's nodes in rank order (store_gangs.cpp); none for a job on one machine or not leased.
  Expected<std::vector<GangMemberRow>> gang_members(int64_t job_id);
  // The vacant ranks of current gang leases (a lost node awaiting its replacement), job order.
  Expected<std::vector<GangMemberRow>> gang_vacancies();
  // The ids of the queued jobs, in id order: read from the index jobs(state, id) alone, so a
  // long queue costs no row reads and no spec parsing (placement's periodic pass).
  Expected<std::vector<int64_t>> queued_job_ids();
  // Every queued job, in id order, with the rejection key its last placement decision stored
  // when that decision found nothing to run it (nullopt: never decided, or not unplaceable).
  // What placement needs at start to know the queue without reading a spec.
  Expected<std::vector<std::pair<int64_t, std::optional<std::string>>>> queued_unplaceable_keys();
  // The workers with id > after_id in id order, at most `limit` of them (negative: all).
  Expected<std::vector<WorkerRow>> list_workers(int64_t after_id = 0, int64_t limit = -1);
  Expected<std::optional<WorkerRow>> get_worker(int64_t id);
  // Every job in placed or running with a worker: the lease and what placement chose, no spec.
  Expected<std::vector<LeaseSummary>> lease_summaries();
  // (job id, worker id) of every job in placed or running, every node of a gang included (of one
  // owner's jobs when `owner` is given: a user sees only their own jobs on the workers).
  Expected<std::vector<std::pair<int64_t, int64_t>>> active_leases(const std::optional<std::string>& owner = std::nullopt);
  // The last `limit` succeeded command jobs with the job key of `name` and the command of
  // `spec_json` (a canonical spec, train::to_json) — newest first, with their last run (index
  // jobs_key_state, migration 16: no scan of the jobs table).
  Expected<std::vector<FinishedRun>> finished_runs_keyed(const std::string& name, const std::string& spec_json,
                                                         int limit);
  Expected<std::map<JobState, int64_t>> count_jobs_by_state();
  // The reason a job's last `held` event gives ("" when it has none).
  Expected<std::string> held_reason(int64_t job_id);
  // `owner`'s registry credentials in registry order (store_registry_credentials.cpp).
  Expected<std::vector<RegistryCredentialRow>> registry_credentials(const std::string& owner);
  // A code bundle's size (store_bundles.cpp); nullopt when it is not stored.
  Expected<std::optional<int64_t>> bundle_size(const std::string& sha256);
  // Every row of every table, as text in a fixed order: tests compare dumps to prove that a
  // refused request changed nothing.
  Expected<std::string> dump();
  // Whether the store can write now: nullopt when it can; else why not (the last commit failed
  // because the disk refused it — full, read-only, failing — until a commit succeeds again; or
  // the file system holding the database is read-only or has no space left). /healthz reports it.
  std::optional<std::string> write_problem() const;

  // ---- webhooks (store_webhooks.cpp, migration 18)
  // `owner`'s webhooks in id order (owner nullopt: everyone's).
  Expected<std::vector<WebhookRow>> webhooks(const std::optional<std::string>& owner);
  Expected<std::optional<WebhookRow>> webhook(int64_t id);
  // A webhook's deliveries, newest first, at most `limit`.
  Expected<std::vector<WebhookDeliveryRow>> webhook_deliveries(int64_t webhook_id, int limit);
  // Pending deliveries whose next attempt is due at `now_ms`, oldest first, at most `limit`, and
  // at most `per_owner` of each webhook owner's (the oldest of theirs).
  Expected<std::vector<DueDelivery>> due_deliveries(int64_t now_ms, int limit, int per_owner = 1 << 30);

  // ---- API tokens and job owners (store_tokens.cpp)
  Expected<int64_t> insert_token(const TokenRow& row);
  Expected<std::optional<TokenRow>> token_by_hash(const std::string& hash_hex);
  Expected<std::vector<TokenRow>> list_tokens();
  // Marks the token revoked (idempotent); nullopt when there is no such token.
  Expected<std::optional<TokenRow>> revoke_token(int64_t id, int64_t now_ms);
  // The owner of a job ("" when submitted without auth); nullopt when there is no such job.
  Expected<std::optional<std::string>> job_owner(int64_t job_id);
  // The jobs with an owner that are queued, placed or running, in id order (budgets).
  Expected<std::vector<OwnedJob>> owned_open_jobs();
  // The worker whose secret has this SHA-256 (auth/worker_credentials.h); nullopt when none.
  Expected<std::optional<int64_t>> worker_by_secret_hash(const std::string& hash_hex);

  // ---- placement and cost (store_placement.cpp, store_ledger.cpp, migration 2)
  // Jobs placed but not leased yet, with their chosen option (the matcher's queue at start).
  Expected<std::vector<QueuedJobRow>> placed_waiting_jobs();
  // Ledger rows overlapping [from_ms, to_ms), in start order. An open row (a lease not ended yet)
  // is read as ending at the clock's now, billed as a closed one would be.
  Expected<std::vector<LedgerRecord>> ledger_rows(int64_t from_ms, int64_t to_ms);
  // One job's ledger rows in start order, open rows billed up to now (its segments: where it ran).
  Expected<std::vector<LedgerRecord>> ledger_rows_of_job(int64_t job_id);
  // The total billed for one job, open rows up to now.
  Expected<double> ledger_job_total_usd(int64_t job_id);
  // What each job with ids in [first_id, last_id] was billed so far (open rows up to now), and
  // the same time at on-demand prices; jobs with no ledger rows are absent. One query for a page
  // of the job list.
  Expected<std::map<int64_t, LedgerJobTotal>> ledger_job_totals(int64_t first_id, int64_t last_id);
  // Total billed per resource, for resources whose name starts with `prefix` ("instance:"), open
  // rows up to now.
  Expected<std::map<std::string, double>> ledger_totals_by_resource(std::string_view prefix);
  Expected<std::vector<CalibrationRecord>> calibrations();

  // ---- cloud instances (store_instances.cpp, migration 4)
  // Every instance row, live ones first, then by launch time.
  Expected<std::vector<InstanceRow>> list_instances();

  // ---- Slurm batch jobs (store_slurm_jobs.cpp, migration 10)
  // Every row, live ones first, then by Slurm job id; `live_only`: only those not ended.
  Expected<std::vector<SlurmJobRow>> list_slurm_jobs(bool live_only = false);

  const StoreOptions& options() const { return options_; }

 private:
  struct Item {
    Change change;
    Done done;
    Durability durability = Durability::durable;
    std::chrono::steady_clock::time_point queued_at;
  };
  // A pooled reader connection, given back when destroyed (defined here so that Store methods in
  // other files, e.g. store_ledger.cpp, can use reader()).
  class ReaderLease {
   public:
    ReaderLease(Store* store, std::unique_ptr<Connection> c) : store_(store), c_(std::move(c)) {}
    ReaderLease(ReaderLease&& o) noexcept = default;
    ReaderLease& operator=(ReaderLease&&) = delete;
    ~ReaderLease() {
      if (c_) store_->give_back(std::move(c_));
    }
    Connection& operator*() { return *c_; }

   private:
    Store* store_;
    std::unique_ptr<Connection> c_;
  };

  Store(StoreOptions options, const Clock& clock, std::unique_ptr<Connection> writer);
  void writer_loop();
  void run_batch(std::vector<Item>& batch);
  // After a commit that left wal_frames_ at or over options_.wal_checkpoint_frames.
  void checkpoint_wal();
  // Remembers whether the disk refused the last commit (write_problem()).
  void note_write_outcome(const Status& st);
  Expected<ReaderLease> reader();
  // Runs `fn` on a pooled reader connection (for reads defined outside store.cpp).
  Status with_reader(const std::function<Status(Connection&)>& fn);
  void give_back(std::unique_ptr<Connection> c);

  StoreOptions options_;
  const Clock& clock_;
  std::unique_ptr<Connection> writer_conn_;
  bool batch_synced_ = true;  // the writer connection's synchronous mode is the configured one
  int64_t wal_frames_ = 0;    // frames in the WAL after the last commit (the writer thread only)

  Mutex observer_mu_;
  WriterObserver observer_ JOBCTL_GUARDED_BY(observer_mu_);

  Mutex mu_;
  CondVar cv_;
  std::deque<Item> queue_ JOBCTL_GUARDED_BY(mu_);
  std::deque<Item> deferred_ JOBCTL_GUARDED_BY(mu_);  // Durability::deferred, taken after queue_
  static constexpr size_t kDeferredBatch = 16;
  bool closing_ JOBCTL_GUARDED_BY(mu_) = false;
  std::thread writer_;
  std::atomic<std::thread::id> writer_id_{};  // set by the writer thread itself

  mutable Mutex health_mu_;
  std::optional<std::string> last_write_failure_ JOBCTL_GUARDED_BY(health_mu_);

  Mutex readers_mu_;
  CondVar readers_cv_;
  std::vector<std::unique_ptr<Connection>> idle_readers_ JOBCTL_GUARDED_BY(readers_mu_);
  int open_readers_ JOBCTL_GUARDED_BY(readers_mu_) = 0;
};

}  // namespace jobctl::daemon::store
