#include "worker/job_outcome.h"

#include <ostream>

#include "worker/oom_kill.h"

namespace jobctl::worker {

using nlohmann::json;

namespace {

// jobctl-train's exit codes (docs/train-cli.md).
const char* exit_code_meaning(int code) {
  switch (code) {
    case 1: return "internal error";
    case 2: return "bad usage or invalid spec";
    case 3: return "training data could not be read";
    case 4: return "checkpoint problem";
    case 5: return "no usable GPU";
    case 6: return "not enough memory on this machine";
    default: return nullptr;
  }
}

RetryWait stop_wait(const StopSource& stop) {
  return [&stop](std::chrono::milliseconds pause) { return stop.wait_for(pause); };
}

// The job is given back: its emergency checkpoint must be stored first.
RunOutcome give_back(const AttemptEnd& end, std::ostream& log) {
  const Supervised& s = end.supervised;
  if (!end.uploader.drain(end.program.grace_ms))
    log << "jobctl-worker: job " << end.reporter.job_id() << ": checkpoint upload still pending; giving the job back\n";
  const int64_t last_uploaded_step = end.uploader.last_uploaded_step();
  end.upload_outputs();
  end.end_heartbeats();
  const std::string reason =
      (s.stop == StopReason::move ? std::string("moved by jobctld") : std::string(end.stop.reason()) + ": worker stopping") +
      "; trainer " + s.status.describe() +
      (last_uploaded_step >= 0 ? "; checkpoint at step " + std::to_string(last_uploaded_step) + " stored"
                               : "; no checkpoint stored");
  // The stop is why this report is sent: it must not end its retries.
  end.reporter.preempt(reason, sleep_wait);
  return RunOutcome::released;
}

}  // namespace

const char* to_string(RunOutcome o) {
  switch (o) {
    case RunOutcome::succeeded: return "succeeded";
    case RunOutcome::failed: return "failed";
    case RunOutcome::cancelled: return "cancelled";
    case RunOutcome::lease_lost: return "lease lost";
    case RunOutcome::released: return "released";
  }
  return "?";
}

RunOutcome finish_attempt(const AttemptEnd& end, std::string& resume_refused, std::ostream& log) {
  const Supervised& s = end.supervised;
  const JobProgram& program = end.program;
  const JobProtocol& protocol = end.protocol;
  const int64_t job_id = end.reporter.job_id();
  switch (s.stop) {
    case StopReason::cancel:
      end.end_heartbeats();
      log << "jobctl-worker: job " << job_id << " stopped after cancel (" << s.status.describe() << ")\n";
      return RunOutcome::cancelled;
    case StopReason::lost:
      end.end_heartbeats();
      return RunOutcome::lease_lost;
    case StopReason::release:
    case StopReason::move:
      return give_back(end, log);
    case StopReason::none:
      break;
  }

  // Exit 0 is success; anything else fails the job, with the exit status and the log's tail.
  if (!s.status.success()) {
    // A program resuming that refuses its checkpoint before starting: the caller falls back to an
    // older one.
    if (end.resuming && protocol.resume_refused() && !protocol.started()) {
      resume_refused = protocol.error().value_or(program.label + " " + s.status.describe());
      end.end_heartbeats();
      return RunOutcome::failed;
    }
    end.upload_outputs();
    end.end_heartbeats();
    std::string why = program.label + " " + s.status.describe();
    if (s.status.exited && !program.command)
      if (const char* meaning = exit_code_meaning(s.status.code)) why += std::string(" (") + meaning + ")";
    const std::string killed =
        s.worker_killed_it ? std::string()
                           : sigkill_explanation(s.status, end.oom_kills_before, oom_kill_count(), available_memory_mb());
    const std::string tail = s.log_tail.substr(s.log_tail.size() > 1500 ? s.log_tail.size() - 1500 : 0);
    if (!killed.empty()) why = killed;
    if (protocol.error()) why += ": " + *protocol.error();
    if (!tail.empty()) why += "; log tail:\n" + tail;
    end.reporter.fail(why, stop_wait(end.stop));
    return RunOutcome::failed;
  }

  end.upload_outputs();
  end.end_heartbeats();
  // jobctl-train's `done` line says whether the run was whole: one that stopped early (a signal
  // from elsewhere) exits 0 but did not finish.
  if (protocol.done() && protocol.done()->value("status", std::string()) != "succeeded") {
    end.reporter.fail(program.label + " " + s.status.describe() + ": it stopped early with status " +
                          protocol.done()->value("status", std::string("?")),
                      stop_wait(end.stop));
    return RunOutcome::failed;
  }
  json result = protocol.result().value_or(json::object());
  if (!result.is_object()) result = json::object();
  end.reporter.complete(result, stop_wait(end.stop));
  std::error_code ec;
  if (!end.keep_work_dir) std::filesystem::remove_all(end.job_dir, ec);
  return RunOutcome::succeeded;
}

}  // namespace jobctl::worker
