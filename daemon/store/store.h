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
// Ownership and thread safety: a Store is safe to use from any number of threads. Changes,
// hooks and completion callbacks run on the writer thread and must not block on the store
// (write() from the writer thread returns an error instead of deadlocking); write_async is fine.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "daemon/store/records.h"
#include "daemon/store/sqlite.h"

namespace jobctl::daemon::store {

struct StoreOptions {
  std::string path;                  // the database file; created when absent
  std::string synchronous = "FULL";  // FULL (default) or NORMAL
  int max_batch = 512;               // most changes per COMMIT
  int max_readers = 8;               // most reader connections open at once
};

// The view a change has of the database, inside the writer's transaction. Only valid during the
// change's call, on the writer thread.
class WriteTxn {
 public:
  WriteTxn(Connection& db, std::vector<std::function<void()>>& hooks) : db_(db), hooks_(hooks) {}

  Expected<std::optional<JobRow>> job(int64_t id);
  Expected<int64_t> insert_job(const JobRow& row);  // returns the new id
  Status update_job(const JobRow& row);             // every mutable column, by id
  Expected<int64_t> append_event(const JobEventRow& ev);  // returns the event's seq

  Expected<std::optional<WorkerRow>> worker(int64_t id);
  Expected<int64_t> insert_worker(const WorkerRow& row);
  Status update_worker(const WorkerRow& row);

  // Runs `hook` on the writer thread after this change commits (never if it rolls back).
  void on_commit(std::function<void()> hook) { hooks_.push_back(std::move(hook)); }

 private:
  Connection& db_;
  std::vector<std::function<void()>>& hooks_;
};

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
  void write_async(Change change, Done done);
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
  Expected<std::vector<WorkerRow>> list_workers();
  Expected<std::optional<WorkerRow>> get_worker(int64_t id);
  // (job id, worker id) of every job in placed or running.
  Expected<std::vector<std::pair<int64_t, int64_t>>> active_leases();
  Expected<std::map<JobState, int64_t>> count_jobs_by_state();
  // Every row of every table, as text in a fixed order: tests compare dumps to prove that a
  // refused request changed nothing.
  Expected<std::string> dump();

  const StoreOptions& options() const { return options_; }

 private:
  struct Item {
    Change change;
    Done done;
  };
  class ReaderLease;

  Store(StoreOptions options, const Clock& clock, std::unique_ptr<Connection> writer);
  void writer_loop();
  void run_batch(std::vector<Item>& batch);
  Expected<ReaderLease> reader();
  void give_back(std::unique_ptr<Connection> c);

  StoreOptions options_;
  const Clock& clock_;
  std::unique_ptr<Connection> writer_conn_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool closing_ = false;
  std::thread writer_;
  std::atomic<std::thread::id> writer_id_{};  // set by the writer thread itself

  std::mutex readers_mu_;
  std::condition_variable readers_cv_;
  std::vector<std::unique_ptr<Connection>> idle_readers_;
  int open_readers_ = 0;
};

}  // namespace jobctl::daemon::store
