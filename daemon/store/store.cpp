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
Expected<std::string> Store::dump() {
  auto r = reader();
  if (!r) return r.error();
  Connection& db = **r;
  if (auto st = db.exec("BEGIN"); !st) return st.error();
  std::ostringstream out;
  Status dumped;  // the first error, which stops the dump
  for (const char* sql :
       {"SELECT * FROM jobs ORDER BY id", "SELECT * FROM job_events ORDER BY job_id, seq",
        "SELECT * FROM workers ORDER BY id", "SELECT * FROM schema_version ORDER BY version",
        "SELECT * FROM checkpoints ORDER BY job_id, step", "SELECT * FROM api_tokens ORDER BY id",
        "SELECT * FROM job_placements ORDER BY job_id", "SELECT * FROM ledger ORDER BY resource, start_ms",
        "SELECT * FROM calibration ORDER BY gpu_model, model_kind", "SELECT * FROM instances ORDER BY id",
        "SELECT * FROM slurm_jobs ORDER BY slurm_job_id", "SELECT * FROM bundles ORDER BY sha256, user",
        "SELECT * FROM job_outputs ORDER BY job_id, path",
        "SELECT * FROM registry_credentials ORDER BY owner, registry"}) {
    auto p = db.prepare(sql);
    if (!p) {
      dumped = p.error();
      break;
    }
    StatementUse s(*p);
    out << sql << "\n";
    dumped = for_each_row(*s, [&out](const Statement& row) {
      for (int c = 0; c < row.column_count(); ++c) out << (row.is_null(c) ? "NULL" : row.column_text(c)) << '|';
      out << '\n';
    });
    if (!dumped) break;
  }
  db.reset_all();
  (void)db.exec("COMMIT");
  if (!dumped) return std::move(dumped).error();
  return out.str();
}

}  // namespace jobctl::daemon::store
