#include "daemon/store/store.h"

#include <sqlite3.h>
#include <sys/statvfs.h>

#include <chrono>
#include <exception>
#include <filesystem>
#include <future>
#include <sstream>

#include "daemon/store/deflated_text.h"
#include "daemon/store/migrations.h"

namespace jobctl::daemon::store {

namespace {

std::string state_name(JobState s) { return std::string(scheduler::to_string(s)); }

Expected<JobState> state_from(const std::string& name) {
  auto s = scheduler::parse_job_state(name);
  if (!s) return make_error(ErrorCode::io, "the database holds an unknown job state '" + name + "'");
  return *s;
}

// The columns written by insert_job / update_job, in bind order (?2.. after the id).
constexpr const char* kJobColumns =
    "id, name, spec, state, priority, resource_gpu, resource_gpus, created_ms, updated_ms, "
    "worker_id, lease_epoch, lease_expires_ms, progress, result, error, recoveries, chosen";
// A single job read: every column and the placement document of job_placements.
constexpr const char* kJobReadColumns =
    "id, name, spec, state, priority, resource_gpu, resource_gpus, created_ms, updated_ms, "
    "worker_id, lease_epoch, lease_expires_ms, progress, result, error, recoveries, chosen, "
    "(SELECT placement FROM job_placements WHERE job_id = jobs.id)";
// A listing: no spec, no placement document.
constexpr const char* kJobListColumns =
    "id, name, '', state, priority, resource_gpu, resource_gpus, created_ms, updated_ms, "
    "worker_id, lease_epoch, lease_expires_ms, progress, result, error, recoveries, chosen, NULL";

Expected<JobRow> read_job(const Statement& s) {
  JobRow r;
  r.id = s.column_int64(0);
  r.name = s.column_text(1);
  r.spec_json = s.column_text(2);
  auto st = state_from(s.column_text(3));
  if (!st) return st.error();
  r.state = *st;
  r.priority = static_cast<int>(s.column_int64(4));
  r.resource_gpu = s.column_text(5);
  r.resource_gpus = static_cast<int>(s.column_int64(6));
  r.created_ms = s.column_int64(7);
  r.updated_ms = s.column_int64(8);
  r.worker_id = s.column_opt_int64(9);
  r.lease_epoch = s.column_int64(10);
  r.lease_expires_ms = s.column_opt_int64(11);
  r.progress_json = s.column_opt_text(12);
  r.result_json = s.column_opt_text(13);
  r.error = s.column_opt_text(14);
  r.recoveries = static_cast<int>(s.column_int64(15));
  r.chosen_json = s.column_opt_text(16);
  if (s.is_blob(17)) {  // deflated (deflated_text.h); TEXT: written before documents were
    auto text = inflate_text(s.column_text(17));
    if (!text) return make_error(text.error().code, "job " + std::to_string(r.id) + ": " + text.error().message);
    r.placement_json = std::move(*text);
  } else {
    r.placement_json = s.column_opt_text(17);
  }
  return r;
}

Expected<JobEventRow> read_event(const Statement& s) {
  JobEventRow e;
  e.job_id = s.column_int64(0);
  e.seq = s.column_int64(1);
  e.time_ms = s.column_int64(2);
  e.type = s.column_text(3);
  if (auto f = s.column_opt_text(4)) {
    auto st = state_from(*f);
    if (!st) return st.error();
    e.from_state = *st;
  }
  if (auto t = s.column_opt_text(5)) {
    auto st = state_from(*t);
    if (!st) return st.error();
    e.to_state = *st;
  }
  e.detail_json = s.column_opt_text(6).value_or("{}");
  return e;
}

WorkerRow read_worker(const Statement& s) {
  WorkerRow w;
  w.id = s.column_int64(0);
  w.name = s.column_text(1);
  w.capabilities_json = s.column_text(2);
  w.registered_ms = s.column_int64(3);
  w.last_seen_ms = s.column_int64(4);
  w.state = s.column_text(5);
  return w;
}

Expected<std::optional<JobRow>> query_job(Connection& db, int64_t id) {
  auto p = db.prepare(std::string("SELECT ") + kJobReadColumns + " FROM jobs WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, id);
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return std::optional<JobRow>{};
  auto j = read_job(*s);
  if (!j) return j.error();
  return std::optional<JobRow>(std::move(*j));
}

Expected<std::vector<JobEventRow>> query_events(Connection& db, int64_t id) {
  auto p = db.prepare(
      "SELECT job_id, seq, time_ms, type, from_state, to_state, detail FROM job_events "
      "WHERE job_id = ?1 ORDER BY seq");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, id);
  std::vector<JobEventRow> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    auto e = read_event(*s);
    if (!e) return e.error();
    out.push_back(std::move(*e));
  }
  return out;
}

Expected<std::optional<WorkerRow>> query_worker(Connection& db, int64_t id) {
  auto p = db.prepare(
      "SELECT id, name, capabilities, registered_ms, last_seen_ms, state FROM workers WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, id);
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return std::optional<WorkerRow>{};
  return std::optional<WorkerRow>(read_worker(*s));
}

void bind_job_columns(Statement& s, const JobRow& r) {
  // ?2.. in kJobColumns order (?1 is the id where one is bound).
  s.bind(2, r.name)
      .bind(3, r.spec_json)
      .bind(4, state_name(r.state))
      .bind(5, r.priority)
      .bind(6, r.resource_gpu)
      .bind(7, r.resource_gpus)
      .bind(8, r.created_ms)
      .bind(9, r.updated_ms)
      .bind(10, r.worker_id)
      .bind(11, r.lease_epoch)
      .bind(12, r.lease_expires_ms)
      .bind(13, r.progress_json)
      .bind(14, r.result_json)
      .bind(15, r.error)
      .bind(16, r.recoveries)
      .bind(17, r.chosen_json);
}

}  // namespace

// ---------------------------------------------------------------- WriteTxn

Expected<std::optional<JobRow>> WriteTxn::job(int64_t id) { return query_job(db_, id); }

Expected<int64_t> WriteTxn::insert_job(const JobRow& row) {
  auto p = db_.prepare(std::string("INSERT INTO jobs (") + kJobColumns +
                       ") VALUES (NULL, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
                       "?15, ?16, ?17)");
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
      "chosen = ?17 WHERE id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, row.id);
  bind_job_columns(*s, row);
  if (auto st = s->run(); !st) return st;
  if (db_.changes() != 1)
    return make_error(ErrorCode::not_found, "job " + std::to_string(row.id) + " does not exist");
  return {};
}

Status WriteTxn::put_placement(int64_t job_id, const DeflatedText& placement,
                               const std::optional<std::string>& unplaceable_key) {
  auto p = db_.prepare(
      "INSERT OR REPLACE INTO job_placements (job_id, placement, unplaceable_key) VALUES (?1, ?2, ?3)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id).bind_blob(2, placement.bytes).bind(3, unplaceable_key);
  return s->run();
}

Expected<int64_t> WriteTxn::append_event(const JobEventRow& ev) {
  auto p = db_.prepare(
      "INSERT INTO job_events (job_id, seq, time_ms, type, from_state, to_state, detail) "
      "VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM job_events WHERE job_id = ?1), ?2, ?3, "
      "?4, ?5, ?6) RETURNING seq");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, ev.job_id).bind(2, ev.time_ms).bind(3, ev.type);
  if (ev.from_state) s->bind(4, state_name(*ev.from_state)); else s->bind_null(4);
  if (ev.to_state) s->bind(5, state_name(*ev.to_state)); else s->bind_null(5);
  s->bind(6, ev.detail_json);
  auto row = s->step();
  if (!row) return row.error();
  if (!*row) return make_error(ErrorCode::io, "inserting an event returned no sequence number");
  const int64_t seq = s->column_int64(0);
  if (auto st = s->run(); !st) return st.error();  // finish the statement
  return seq;
}

Expected<std::optional<WorkerRow>> WriteTxn::worker(int64_t id) { return query_worker(db_, id); }

Expected<int64_t> WriteTxn::insert_worker(const WorkerRow& row) {
  auto p = db_.prepare(
      "INSERT INTO workers (name, capabilities, registered_ms, last_seen_ms, state, secret_hash) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, row.name).bind(2, row.capabilities_json).bind(3, row.registered_ms)
      .bind(4, row.last_seen_ms).bind(5, row.state);
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
  s->bind(1, row.id).bind(2, row.name).bind(3, row.capabilities_json).bind(4, row.registered_ms)
      .bind(5, row.last_seen_ms).bind(6, row.state);
  if (auto st = s->run(); !st) return st;
  if (db_.changes() != 1)
    return make_error(ErrorCode::not_found, "worker " + std::to_string(row.id) + " does not exist");
  return {};
}

// ---------------------------------------------------------------- Store: life cycle

Expected<std::unique_ptr<Store>> Store::open(StoreOptions options, const Clock& clock) {
  if (options.synchronous != "FULL" && options.synchronous != "NORMAL")
    return make_error(ErrorCode::invalid_argument, "synchronous must be FULL or NORMAL", "store.synchronous");
  if (options.max_batch < 1) options.max_batch = 1;
  if (options.max_readers < 1) options.max_readers = 1;
  auto conn = Connection::open(options.path, /*read_only=*/false);
  if (!conn) return conn.error();
  Connection& db = **conn;
  auto mode = db.prepare("PRAGMA journal_mode=WAL");
  if (!mode) return mode.error();
  {
    StatementUse s(*mode);
    auto row = s->step();
    if (!row) return row.error();
    if (!*row || s->column_text(0) != "wal")
      return make_error(ErrorCode::io, "could not switch " + options.path + " to WAL mode");
  }
  // The writer's page cache at 32 MB, not SQLite's 2 MB: every change reads the rows it updates
  // first, and with thousands of workers heartbeating the default cache let those pages go,
  // so the writer re-read them from the file (6% of jobctld's CPU under 2,000 heartbeats/s in
  // bench/daemon; 0.6% with this). Readers keep the default: their caches are invalidated by
  // every commit anyway.
  for (const std::string& pragma : {std::string("PRAGMA synchronous=") + options.synchronous,
                                    std::string("PRAGMA foreign_keys=ON"), std::string("PRAGMA cache_size=-32768")}) {
    if (auto st = db.exec(pragma); !st) return st.error();
  }
  auto version = apply_migrations(db, clock.now_ms());
  if (!version) return version.error();
  return std::unique_ptr<Store>(new Store(std::move(options), clock, std::move(*conn)));
}

Store::Store(StoreOptions options, const Clock& clock, std::unique_ptr<Connection> writer)
    : options_(std::move(options)), clock_(clock), writer_conn_(std::move(writer)) {
  // Replaces SQLite's autocheckpoint (itself a WAL hook) on the writer: the hook only notes the
  // WAL's length after each commit, and the writer checkpoints when it is due, timed apart from
  // the COMMIT and after the batch's callers have their answer (checkpoint_wal()).
  sqlite3_wal_hook(
      writer_conn_->handle(),
      [](void* self, sqlite3*, const char*, int frames) -> int {
        static_cast<Store*>(self)->wal_frames_ = frames;
        return SQLITE_OK;
      },
      this);
  writer_ = std::thread([this] { writer_loop(); });
}

void Store::set_writer_observer(WriterObserver observer) {
  MutexLock lock(observer_mu_);
  observer_ = std::move(observer);
}

void Store::checkpoint_wal() {
  const auto started = std::chrono::steady_clock::now();
  int log_frames = 0, copied = 0;
  const int rc = sqlite3_wal_checkpoint_v2(writer_conn_->handle(), "main", SQLITE_CHECKPOINT_PASSIVE, &log_frames, &copied);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // A failed checkpoint loses nothing (the WAL keeps the frames); the next commit tries again.
  wal_frames_ = rc == SQLITE_OK && log_frames == copied ? 0 : wal_frames_;
  MutexLock lock(observer_mu_);
  if (observer_.checkpointed) observer_.checkpointed(CheckpointTiming{took, log_frames, copied});
}

Store::~Store() { close(); }

void Store::close() {
  {
    MutexLock lock(mu_);
    if (closing_ && !writer_.joinable()) return;
    closing_ = true;
  }
  cv_.signal_all();
  if (writer_.joinable() && std::this_thread::get_id() != writer_id_.load()) writer_.join();
}

// ---------------------------------------------------------------- Store: writes

void Store::write_async(Change change, Done done, Durability durability) {
  bool queued = false;
  {
    MutexLock lock(mu_);
    // While closing, the writer drains its queue to the end: changes queued from its own thread
    // (by hooks and completions) are still run.
    if (!closing_ || std::this_thread::get_id() == writer_id_.load()) {
      (durability == Durability::deferred ? deferred_ : queue_)
          .push_back(Item{std::move(change), std::move(done), durability, std::chrono::steady_clock::now()});
      queued = true;
    }
  }
  if (queued) {
    cv_.signal();
  } else if (done) {
    done(make_error(ErrorCode::unavailable, "the store is closed"));
  }
}

Status Store::write(Change change) {
  if (std::this_thread::get_id() == writer_id_.load())
    return make_error(ErrorCode::internal, "a blocking write from the writer thread would deadlock");
  std::promise<Status> promise;
  auto future = promise.get_future();
  write_async(std::move(change), [&promise](Status st) { promise.set_value(std::move(st)); });
  return future.get();
}

void Store::writer_loop() {
  writer_id_.store(std::this_thread::get_id());
  std::vector<Item> batch;
  bool deferred_turn = false;  // the last batch came from queue_: deferred changes may go next
  for (;;) {
    {
      MutexLock lock(mu_);
      while (!closing_ && queue_.empty() && deferred_.empty()) cv_.wait(mu_);
      if (queue_.empty() && deferred_.empty()) return;  // closing and drained
      // A few deferred changes after every batch of the others, or whenever nothing else waits.
      if (!deferred_.empty() && (queue_.empty() || deferred_turn)) {
        deferred_turn = false;
        const size_t n = std::min(deferred_.size(), kDeferredBatch);
        for (size_t i = 0; i < n; ++i) {
          batch.push_back(std::move(deferred_.front()));
          deferred_.pop_front();
        }
      } else {
        deferred_turn = true;
        // Relaxed changes (heartbeats) arrive in thousands a second, a few at a time: a moment's
        // wait gathers many into one commit (fewer WAL pages, fewer wake-ups of this thread).
        // Durable changes never wait: they pay an fsync, which batches them by itself.
        bool relaxed_only = true;
        for (const auto& item : queue_) relaxed_only = relaxed_only && item.durability == Durability::relaxed;
        if (relaxed_only && !closing_ && queue_.size() < static_cast<size_t>(options_.max_batch) &&
            options_.relaxed_linger_us > 0) {
          mu_.unlock();
          std::this_thread::sleep_for(std::chrono::microseconds(options_.relaxed_linger_us));
          mu_.lock();
        }
        const size_t n = std::min<size_t>(queue_.size(), static_cast<size_t>(options_.max_batch));
        for (size_t i = 0; i < n; ++i) {
          batch.push_back(std::move(queue_.front()));
          queue_.pop_front();
        }
      }
    }
    run_batch(batch);
    batch.clear();
  }
}

void Store::run_batch(std::vector<Item>& batch) {
  Connection& db = *writer_conn_;
  const auto batch_began = std::chrono::steady_clock::now();
  std::vector<Status> results(batch.size());
  std::vector<std::vector<std::function<void()>>> hooks(batch.size());

  // A batch of relaxed changes only commits without the fsync (store.h, Durability); a batch
  // with any durable change syncs as configured, which also makes every earlier frame durable.
  bool durable = false;
  for (const auto& item : batch) durable = durable || item.durability == Durability::durable;
  if (durable != batch_synced_) {
    const std::string mode = durable ? options_.synchronous : std::string("OFF");
    if (auto st = db.exec("PRAGMA synchronous=" + mode); st) batch_synced_ = durable;
  }
  Status begin = db.exec("BEGIN IMMEDIATE");
  if (!begin) {
    note_write_outcome(begin);
    for (auto& item : batch)
      if (item.done) item.done(begin);
    return;
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    Status st = db.exec("SAVEPOINT change");
    if (st) {
      WriteTxn txn(db, hooks[i]);
      try {
        st = batch[i].change(txn);
      } catch (const std::exception& e) {
        st = make_error(ErrorCode::internal, std::string("a change threw: ") + e.what());
      }
      if (!st) {
        hooks[i].clear();
        db.reset_all();
        (void)db.exec("ROLLBACK TO change");
      }
      Status rel = db.exec("RELEASE change");
      if (st && !rel) st = rel;
    }
    results[i] = std::move(st);
  }
  db.reset_all();
  const auto commit_began = std::chrono::steady_clock::now();
  Status commit = db.exec("COMMIT");
  const auto committed = std::chrono::steady_clock::now();
  {
    MutexLock lock(observer_mu_);
    if (observer_.committed) {
      auto oldest = batch_began;
      for (const auto& item : batch) oldest = std::min(oldest, item.queued_at);
      observer_.committed(CommitTiming{batch.size(), durable, std::chrono::duration<double>(batch_began - oldest).count(),
                                       std::chrono::duration<double>(committed - commit_began).count()});
    }
  }
  if (!commit) {
    (void)db.exec("ROLLBACK");
    for (size_t i = 0; i < batch.size(); ++i)
      if (results[i]) results[i] = commit;
  }
  Status outcome = commit;
  for (const auto& r : results)
    if (outcome && !r && is_storage_failure(r.error())) outcome = r;
  note_write_outcome(outcome);
  for (size_t i = 0; i < batch.size(); ++i) {
    if (commit && results[i])
      for (auto& hook : hooks[i]) hook();
    if (batch[i].done) batch[i].done(std::move(results[i]));
  }
  // The checkpoint SQLite would have run inside that COMMIT, with its callers waiting.
  if (commit && wal_frames_ >= options_.wal_checkpoint_frames) checkpoint_wal();
}

void Store::note_write_outcome(const Status& st) {
  MutexLock lock(health_mu_);
  if (st)
    last_write_failure_.reset();
  else if (is_storage_failure(st.error()))
    last_write_failure_ = st.error().message;
}

std::optional<std::string> Store::write_problem() const {
  {
    MutexLock lock(health_mu_);
    if (last_write_failure_) return last_write_failure_;
  }
  const std::string dir = std::filesystem::path(options_.path).parent_path().string();
  struct statvfs fs {};
  if (::statvfs(dir.empty() ? "." : dir.c_str(), &fs) != 0) return std::nullopt;
  if ((fs.f_flag & ST_RDONLY) != 0) return "the file system of " + options_.path + " is read-only";
  if (fs.f_bavail == 0) return "the file system of " + options_.path + " has no space left";
  return std::nullopt;
}

// ---------------------------------------------------------------- Store: reads

Expected<Store::ReaderLease> Store::reader() {
  {
    MutexLock lock(readers_mu_);
    while (idle_readers_.empty() && open_readers_ >= options_.max_readers) readers_cv_.wait(readers_mu_);
    if (!idle_readers_.empty()) {
      auto c = std::move(idle_readers_.back());
      idle_readers_.pop_back();
      return ReaderLease(this, std::move(c));
    }
    ++open_readers_;
  }
  auto c = Connection::open(options_.path, /*read_only=*/false);
  if (c) {
    if (auto st = (*c)->exec("PRAGMA query_only=ON"); !st) c = st.error();
  }
  if (!c) {
    {
      MutexLock relock(readers_mu_);
      --open_readers_;
    }
    readers_cv_.signal();
    return c.error();
  }
  return ReaderLease(this, std::move(*c));
}

void Store::give_back(std::unique_ptr<Connection> c) {
  c->reset_all();
  {
    MutexLock lock(readers_mu_);
    idle_readers_.push_back(std::move(c));
  }
  readers_cv_.signal();
}

Status Store::with_reader(const std::function<Status(Connection&)>& fn) {
  auto r = reader();
  if (!r) return r.error();
  return fn(**r);
}

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
  const char* owner_cond = q.owner ? "owner = ?4 AND " : "";
  auto p = q.state ? db.prepare(std::string("SELECT ") + kJobListColumns + " FROM jobs WHERE " +
                                owner_cond + "state = ?1 AND id > ?2 ORDER BY id LIMIT ?3")
                   : db.prepare(std::string("SELECT ") + kJobListColumns + " FROM jobs WHERE " +
                                owner_cond + "id > ?2 ORDER BY id LIMIT ?3");
  if (!p) return p.error();
  StatementUse s(*p);
  if (q.state) s->bind(1, state_name(*q.state));
  if (q.owner) s->bind(4, *q.owner);
  s->bind(2, q.after_id).bind(3, q.limit);
  std::vector<JobRow> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    auto j = read_job(*s);
    if (!j) return j.error();
    out.push_back(std::move(*j));
  }
  return out;
}

Expected<std::vector<WorkerRow>> Store::list_workers(int64_t after_id, int64_t limit) {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(
      "SELECT id, name, capabilities, registered_ms, last_seen_ms, state FROM workers WHERE id > ?1 ORDER BY id "
      "LIMIT ?2");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, after_id).bind(2, limit);  // SQLite: a negative LIMIT is none
  std::vector<WorkerRow> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(read_worker(*s));
  }
  return out;
}

Expected<std::optional<WorkerRow>> Store::get_worker(int64_t id) {
  auto r = reader();
  if (!r) return r.error();
  return query_worker(**r, id);
}

Expected<std::vector<LeaseSummary>> Store::lease_summaries() {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(
      "SELECT id, worker_id, lease_epoch, chosen, progress FROM jobs WHERE state IN ('placed', 'running') "
      "AND worker_id IS NOT NULL ORDER BY id");
  if (!p) return p.error();
  StatementUse s(*p);
  std::vector<LeaseSummary> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(LeaseSummary{s->column_int64(0), s->column_int64(1), s->column_int64(2), s->column_opt_text(3),
                               s->column_opt_text(4)});
  }
  return out;
}

Expected<std::vector<FinishedRun>> Store::finished_runs_named(const std::string& name, int limit) {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(
      "SELECT j.id, j.worker_id, "
      "(SELECT MAX(time_ms) FROM job_events e WHERE e.job_id = j.id AND e.type = 'started'), "
      "(SELECT MAX(time_ms) FROM job_events e WHERE e.job_id = j.id AND e.type = 'succeeded'), "
      "(SELECT COUNT(*) FROM job_events e WHERE e.job_id = j.id AND e.type = 'started') "
      "FROM jobs j WHERE j.name = ?1 AND j.state = 'succeeded' AND j.worker_id IS NOT NULL "
      "ORDER BY j.id DESC LIMIT ?2");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, name);
  s->bind(2, static_cast<int64_t>(limit));
  std::vector<FinishedRun> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out.push_back(FinishedRun{s->column_int64(0), s->column_int64(1), s->column_int64(2), s->column_int64(3),
                              s->column_int64(4)});
  }
  return out;
}

Expected<std::vector<std::pair<int64_t, int64_t>>> Store::active_leases(const std::optional<std::string>& owner) {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(owner ? "SELECT id, worker_id FROM jobs WHERE state IN ('placed', 'running') "
                                 "AND worker_id IS NOT NULL AND owner = ?1 ORDER BY id"
                               : "SELECT id, worker_id FROM jobs WHERE state IN ('placed', 'running') "
                                 "AND worker_id IS NOT NULL ORDER BY id");
  if (!p) return p.error();
  StatementUse s(*p);
  if (owner) s->bind(1, *owner);
  std::vector<std::pair<int64_t, int64_t>> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out.emplace_back(s->column_int64(0), s->column_int64(1));
  }
  return out;
}

Expected<std::map<JobState, int64_t>> Store::count_jobs_by_state() {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare("SELECT state, COUNT(*) FROM jobs GROUP BY state");
  if (!p) return p.error();
  StatementUse s(*p);
  std::map<JobState, int64_t> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    auto st = state_from(s->column_text(0));
    if (!st) return st.error();
    out[*st] = s->column_int64(1);
  }
  return out;
}

Expected<std::string> Store::dump() {
  auto r = reader();
  if (!r) return r.error();
  Connection& db = **r;
  if (auto st = db.exec("BEGIN"); !st) return st.error();
  std::ostringstream out;
  Status failed;
  for (const char* sql :
       {"SELECT * FROM jobs ORDER BY id", "SELECT * FROM job_events ORDER BY job_id, seq",
        "SELECT * FROM workers ORDER BY id", "SELECT * FROM schema_version ORDER BY version",
        "SELECT * FROM checkpoints ORDER BY job_id, step",
        "SELECT * FROM api_tokens ORDER BY id", "SELECT * FROM job_placements ORDER BY job_id", "SELECT * FROM ledger ORDER BY resource, start_ms",
        "SELECT * FROM calibration ORDER BY gpu_model, model_kind",
        "SELECT * FROM instances ORDER BY id", "SELECT * FROM slurm_jobs ORDER BY slurm_job_id"}) {
    auto p = db.prepare(sql);
    if (!p) { failed = p.error(); break; }
    StatementUse s(*p);
    out << sql << "\n";
    for (;;) {
      auto row = s->step();
      if (!row) { failed = row.error(); break; }
      if (!*row) break;
      for (int c = 0; c < s->column_count(); ++c) out << (s->is_null(c) ? "NULL" : s->column_text(c)) << '|';
      out << '\n';
    }
    if (!failed) break;
  }
  db.reset_all();
  (void)db.exec("COMMIT");
  if (!failed) return failed.error();
  return out.str();
}

}  // namespace jobctl::daemon::store
