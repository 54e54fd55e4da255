// Sends a running job's heartbeats (docs/api.md, POST /v1/jobs/{id}/heartbeat) on a thread of its
// own, with an HTTP client of its own, so that a slow or unreachable jobctld never holds up the
// runner's I/O loop: the child's output keeps being drained, and stop requests and the SIGKILL
// deadline keep being watched, whatever the daemon does.
//
// The I/O loop hands over the latest progress and the job's log (PendingLog) without blocking
// (a short mutex, never held across a call), and asks for an early beat on the program's `start`
// and at each epoch end. A heartbeat goes out every `interval`, or at once when asked; one that
// cannot be delivered is retried at the next interval. What an answer means for the job — cancel,
// move, or the lease lost (409 or 404) — becomes a Verdict, and wake_fd() turns readable so that
// the I/O loop's poll() learns of it at once.
//
// Ownership and thread safety: owns its thread, its client and its wake pipe; borrows `log`
// (written whole lines at a time) and the PendingLog. Every public method may be called from any
// thread; finish() (or the destructor) ends the thread, aborting a heartbeat still in flight.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "client/api_client.h"
#include "protocol/worker_messages.h"
#include "worker/pending_log.h"

namespace jobctl::worker {

class HeartbeatSender {
 public:
  enum class Verdict { none, cancel, move, lost };

  struct Options {
    std::string server;                 // jobctld's URL
    client::HttpClientOptions http;     // its credentials (the cancel flag is the sender's own)
    int64_t job_id = 0;
    protocol::LeaseRef lease;
    std::chrono::milliseconds interval{2000};
  };

  // Starts the thread; the first heartbeat goes out one interval from now (or when asked).
  HeartbeatSender(Options options, PendingLog& pending_log, std::ostream& log);
  ~HeartbeatSender();
  HeartbeatSender(const HeartbeatSender&) = delete;
  HeartbeatSender& operator=(const HeartbeatSender&) = delete;

  // The progress the next heartbeat carries (replaces the previous).
  void set_progress(const nlohmann::json& progress) JOBCTL_EXCLUDES(mu_);
  // Sends the next heartbeat now rather than at the interval.
  void beat_now() JOBCTL_EXCLUDES(mu_);
  // No more heartbeats are started (the job is stopping); one in flight finishes.
  void quiet() JOBCTL_EXCLUDES(mu_);
  // Heartbeats go on (after quiet()) while the worker uploads what the program left, so that a
  // slow upload never outlives the lease; not once the lease is cancelled or lost.
  void keep_alive() JOBCTL_EXCLUDES(mu_);

  // Readable while a verdict waits to be taken.
  int wake_fd() const { return wake_read_; }
  // The verdict of the answers so far (none until one says otherwise), and its message; the
  // first one other than none sticks. Empties wake_fd().
  Verdict verdict(std::string* why = nullptr) JOBCTL_EXCLUDES(mu_);

  // Ends the thread. With `flush_log`, a last heartbeat carries the log still pending, waited for
  // up to `wait` (it waits behind one in flight); whatever is still in flight after `wait` is
  // aborted. Returns whether the log was delivered whole.
  bool finish(bool flush_log, std::chrono::milliseconds wait) JOBCTL_EXCLUDES(mu_);

 private:
  void run() JOBCTL_EXCLUDES(mu_);
  // One heartbeat, sent outside the lock; returns whether it was answered.
  bool send(const std::optional<std::string>& progress_json) JOBCTL_EXCLUDES(mu_);
  void set_verdict(Verdict v, const std::string& why) JOBCTL_EXCLUDES(mu_);

  const Options options_;
  PendingLog& pending_log_;
  std::ostream& log_;
  std::atomic<bool> abort_{false};  // the client's cancel flag: aborts the call in flight
  client::ApiClient api_;           // used on the thread only

  Mutex mu_;
  CondVar cv_;
  std::optional<std::string> progress_json_ JOBCTL_GUARDED_BY(mu_);
  bool beat_now_ JOBCTL_GUARDED_BY(mu_) = false;
  bool quiet_ JOBCTL_GUARDED_BY(mu_) = false;
  bool finishing_ JOBCTL_GUARDED_BY(mu_) = false;
  bool flush_log_ JOBCTL_GUARDED_BY(mu_) = false;
  bool flushed_ JOBCTL_GUARDED_BY(mu_) = false;  // the last beat delivered the log
  bool done_ JOBCTL_GUARDED_BY(mu_) = false;     // the thread has nothing left to send
  Verdict verdict_ JOBCTL_GUARDED_BY(mu_) = Verdict::none;
  std::string verdict_why_ JOBCTL_GUARDED_BY(mu_);

  int wake_read_ = -1;
  int wake_write_ = -1;
  std::thread thread_;
};

}  // namespace jobctl::worker
