#include "worker/heartbeat_sender.h"

#include <fcntl.h>
#include <unistd.h>

#include <ostream>

namespace jobctl::worker {

using Clock = std::chrono::steady_clock;

namespace {

client::HttpClientOptions with_cancel(client::HttpClientOptions http, const std::atomic<bool>* cancel) {
  http.cancel = cancel;
  return http;
}

}  // namespace

HeartbeatSender::HeartbeatSender(Options options, PendingLog& pending_log, std::ostream& log)
    : options_(std::move(options)),
      pending_log_(pending_log),
      log_(log),
      api_(options_.server, with_cancel(options_.http, &abort_)) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) {
    wake_read_ = fds[0];
    wake_write_ = fds[1];
  }
  thread_ = std::thread([this] { run(); });
}

HeartbeatSender::~HeartbeatSender() {
  finish(false, std::chrono::milliseconds(0));
  if (wake_read_ >= 0) ::close(wake_read_);
  if (wake_write_ >= 0) ::close(wake_write_);
}

void HeartbeatSender::set_progress(const nlohmann::json& progress) {
  // Stamped when the worker read it: `jobctl logs` shows each progress line at its own time.
  nlohmann::json stamped = progress;
  if (stamped.is_object())
    stamped["time_ms"] = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  std::string text = stamped.dump();  // outside the lock
  MutexLock lock(mu_);
  progress_json_ = std::move(text);
}

void HeartbeatSender::beat_now() {
  {
    MutexLock lock(mu_);
    beat_now_ = true;
  }
  cv_.signal_all();
}

void HeartbeatSender::quiet() {
  MutexLock lock(mu_);
  quiet_ = true;
}

void HeartbeatSender::keep_alive() {
  {
    MutexLock lock(mu_);
    if (verdict_ == Verdict::cancel || verdict_ == Verdict::lost) return;
    quiet_ = false;
  }
  cv_.signal_all();
}

HeartbeatSender::Verdict HeartbeatSender::verdict(std::string* why) {
  char drain[16];
  while (wake_read_ >= 0 && ::read(wake_read_, drain, sizeof drain) > 0) {
  }
  MutexLock lock(mu_);
  if (why != nullptr) *why = verdict_why_;
  return verdict_;
}

void HeartbeatSender::set_verdict(Verdict v, const std::string& why) {
  {
    MutexLock lock(mu_);
    if (verdict_ != Verdict::none) return;
    verdict_ = v;
    verdict_why_ = why;
    quiet_ = true;  // the job is stopping (or no longer ours): no more heartbeats
  }
  if (wake_write_ >= 0) {
    const char one = 1;
    [[maybe_unused]] const ssize_t n = ::write(wake_write_, &one, 1);  // full pipe: already readable
  }
}

bool HeartbeatSender::finish(bool flush_log, std::chrono::milliseconds wait) {
  bool flushed = false;
  {
    MutexLock lock(mu_);
    if (!finishing_) {
      finishing_ = true;
      flush_log_ = flush_log;
    }
    cv_.signal_all();
    const auto deadline = Clock::now() + wait;
    while (!done_ && Clock::now() < deadline) cv_.wait_until(mu_, deadline);
    flushed = flushed_;
  }
  abort_ = true;  // a heartbeat still in flight ends now
  if (thread_.joinable()) thread_.join();
  return flushed;
}

void HeartbeatSender::run() {
  auto next = Clock::now() + options_.interval;
  for (;;) {
    std::optional<std::string> progress;
    bool last = false;
    {
      MutexLock lock(mu_);
      for (;;) {
        if (finishing_) break;
        if (!quiet_ && (beat_now_ || Clock::now() >= next)) break;
        if (quiet_) cv_.wait(mu_);
        else cv_.wait_until(mu_, next);
      }
      if (finishing_) {
        if (!flush_log_ || pending_log_.empty()) {
          flushed_ = pending_log_.empty();
          done_ = true;
          cv_.signal_all();
          return;
        }
        last = true;
      }
      beat_now_ = false;
      progress = progress_json_;
    }
    const bool answered = send(progress);
    next = Clock::now() + options_.interval;
    if (last) {
      MutexLock lock(mu_);
      flushed_ = answered;
      done_ = true;
      cv_.signal_all();
      return;
    }
  }
}

bool HeartbeatSender::send(const std::optional<std::string>& progress_json) {
  const PendingLog::Taken taken = pending_log_.take();
  const protocol::HeartbeatReport report{options_.lease, progress_json, taken.lines};
  auto r = api_.heartbeat(options_.job_id, protocol::to_json(report));
  const std::string job = "job " + std::to_string(options_.job_id);
  if (r) {
    pending_log_.delivered(taken);
    auto reply = protocol::heartbeat_reply_from_json(*r);
    if (!reply) {
      log_ << "jobctl-worker: heartbeat for " + job + ": unreadable answer: " + reply.error().message + "\n";
    } else if (reply->cancel) {
      set_verdict(Verdict::cancel, "cancelled");
    } else if (reply->move) {
      set_verdict(Verdict::move, "to move");
    }
    return true;
  }
  const ErrorCode code = r.error().code;
  if (code == ErrorCode::stale_epoch || code == ErrorCode::not_found || code == ErrorCode::conflict) {
    set_verdict(Verdict::lost, r.error().message);
  } else if (!(code == ErrorCode::cancelled && abort_)) {
    log_ << "jobctl-worker: heartbeat for " + job + " failed: " + r.error().message + " (will retry)\n";
  }
  return false;
}

}  // namespace jobctl::worker
