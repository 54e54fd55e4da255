#include "worker/job_supervisor.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <ostream>
#include <string_view>

namespace jobctl::worker {

namespace {

constexpr size_t kLogTail = 4096;

}  // namespace

std::string rank_log_prefix(int rank) { return rank > 0 ? "[rank " + std::to_string(rank) + "] " : std::string(); }

JobSupervisor::JobSupervisor(Parts parts, int64_t job_id, bool resuming, int rank, std::ostream& log)
    : p_(parts),
      stopper_(*parts.job.child, std::chrono::milliseconds(parts.program.grace_ms)),
      job_id_(job_id),
      resuming_(resuming),
      rank_(rank),
      log_prefix_(rank_log_prefix(rank)),
      log_(log) {}

void JobSupervisor::append_log(const std::string& line) {
  const std::string sent = log_prefix_ + line;
  log_ << "[job " << job_id_ << "] " << sent << "\n";
  log_tail_ += sent;
  log_tail_ += '\n';
  if (log_tail_.size() > kLogTail) log_tail_.erase(0, log_tail_.size() - kLogTail);
  p_.pending_log.append(sent);
}

void JobSupervisor::on_stdout_line(const std::string& line) {
  const JobProtocol::Kind kind = p_.protocol.apply(line);
  if (kind == JobProtocol::Kind::checkpoint && (rank_ > 0 || stopper_.reason() == StopReason::lost)) {
    // Rank 0 stores the job's checkpoints; a lost lease stores nothing more.
    log_ << "jobctl-worker: job " << job_id_ << ": checkpoint " << p_.protocol.last_checkpoint()->at("path").dump()
         << " not uploaded: "
         << (rank_ > 0 ? "rank " + std::to_string(rank_) + " leaves the job's checkpoints to rank 0"
                       : std::string("the lease is lost"))
         << "\n";
    return;
  }
  if (rank_ > 0) {
    // The job's progress is rank 0's: this node's progress is only its log.
    switch (kind) {
      case JobProtocol::Kind::start:
      case JobProtocol::Kind::epoch:
      case JobProtocol::Kind::progress:
      case JobProtocol::Kind::done:
        append_log(line);
        return;
      default:
        break;
    }
  }
  switch (kind) {
    case JobProtocol::Kind::start:
    case JobProtocol::Kind::epoch:
      p_.heartbeats.set_progress(p_.protocol.progress());
      p_.heartbeats.beat_now();
      break;
    case JobProtocol::Kind::checkpoint:
      p_.heartbeats.set_progress(p_.protocol.progress());
      if (p_.protocol.last_checkpoint()) p_.checkpoints.take(*p_.protocol.last_checkpoint(), p_.protocol.progress());
      break;
    case JobProtocol::Kind::log:
      append_log(line);
      break;
    case JobProtocol::Kind::progress:
      p_.heartbeats.set_progress(p_.protocol.progress());
      if (resuming_ && !first_step_logged_) {  // how long a recovery took (bench/recovery)
        first_step_logged_ = true;
        log_ << "jobctl-worker: job " << job_id_ << ": first resumed step "
             << p_.protocol.progress().value("step", int64_t{0}) << "\n";
      }
      break;
    case JobProtocol::Kind::done:
      p_.heartbeats.set_progress(p_.protocol.progress());
      break;
    default:
      break;
  }
}

void JobSupervisor::drain(int which) {
  process::Child& child = *p_.job.child;
  const int fd = which == 0 ? child.stdout_fd() : child.stderr_fd();
  char buf[65536];
  const ssize_t got = ::read(fd, buf, sizeof buf);
  process::LineSplitter& lines = which == 0 ? out_lines_ : err_lines_;
  auto on_line = [&](const std::string& line) { which == 0 ? on_stdout_line(line) : append_log(line); };
  if (got > 0) {
    for (auto& line : lines.feed(std::string_view(buf, static_cast<size_t>(got)))) on_line(line);
  } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
    if (auto rest = lines.finish()) on_line(*rest);
    which == 0 ? child.close_stdout() : child.close_stderr();
  }
}

void JobSupervisor::watch_stops(bool stop_requested) {
  if (stopper_.stopping()) return;
  std::string why;
  if (stop_requested || p_.stop.requested()) {
    log_ << "jobctl-worker: stopping; interrupting job " << job_id_ << "\n";
    stopper_.stop(StopReason::release);
  } else {
    switch (p_.heartbeats.verdict(&why)) {
      case HeartbeatSender::Verdict::cancel:
        log_ << "jobctl-worker: job " << job_id_ << " was cancelled by its owner (or an admin); stopping it\n";
        stopper_.stop(StopReason::cancel);
        break;
      case HeartbeatSender::Verdict::move:
        // The same path as a spot notice: the program checkpoints at once, then the job is given back.
        log_ << "jobctl-worker: job " << job_id_ << " is to move; checkpointing and giving it back\n";
        stopper_.stop(StopReason::move);
        break;
      case HeartbeatSender::Verdict::lost:
        log_ << "jobctl-worker: job " << job_id_ << ": lease lost (" << why << "); stopping it\n";
        stopper_.stop(StopReason::lost);
        break;
      case HeartbeatSender::Verdict::none:
        watch_fence();
        break;
    }
  }
  // A stopping job sends no more heartbeats (the outcome's report follows).
  if (stopper_.stopping()) p_.heartbeats.quiet();
}

void JobSupervisor::watch_fence() {
  if (!p_.uploader.fenced()) return;
  // A refused upload says the lease ended, not why; most often the job was cancelled, which a
  // heartbeat's answer says. One is asked for now, and has a few seconds before the lease counts
  // as lost.
  constexpr auto kVerdictWait = std::chrono::seconds(5);
  const auto now = JobStopper::Clock::now();
  if (!fenced_since_) {
    fenced_since_ = now;
    p_.heartbeats.beat_now();
  } else if (now - *fenced_since_ >= kVerdictWait) {
    log_ << "jobctl-worker: job " << job_id_ << ": lease lost (checkpoint upload refused); stopping it\n";
    stopper_.stop(StopReason::lost);
  }
}

Supervised JobSupervisor::run() {
  process::Child& child = *p_.job.child;
  bool program_ended = false;
  while (child.stdout_fd() >= 0 || child.stderr_fd() >= 0) {
    // Woken by output, the worker's stop, a heartbeat's verdict; at the latest by the SIGKILL
    // deadline or once a second (the upload fence and a stop request that raced the poll).
    const int timeout = stopper_.ms_until_kill(1000);
    pollfd fds[4] = {{child.stdout_fd(), POLLIN, 0},
                     {child.stderr_fd(), POLLIN, 0},
                     {stopper_.stopping() ? -1 : p_.stop.fd(), POLLIN, 0},
                     {stopper_.stopping() ? -1 : p_.heartbeats.wake_fd(), POLLIN, 0}};
    const int n = ::poll(fds, 4, timeout);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && n > 0; ++i)
      if (fds[i].fd >= 0 && fds[i].revents != 0) drain(i);
    if (!program_ended && child.try_wait()) {
      // The job ends with its program: what it left running (which may hold the pipes open)
      // ends too.
      program_ended = true;
      p_.job.containment->end_all();
    }
    watch_stops(n > 0 && fds[2].revents != 0);
    if (stopper_.kill_if_due(JobStopper::Clock::now()))
      log_ << "jobctl-worker: job " << job_id_ << " did not stop in time; killing it\n";
  }
  // Both pipes are closed; the process ends now, within the grace (still) armed or a fresh one,
  // or is killed.
  std::optional<process::ExitStatus> status = child.wait_for(stopper_.time_to_exit());
  if (!status) {
    stopper_.kill();
    status = child.wait();
  }
  p_.job.containment->end_all();
  return Supervised{stopper_.reason(), *status, stopper_.worker_killed_it(), std::move(log_tail_)};
}

}  // namespace jobctl::worker
