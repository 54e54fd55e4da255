// Reads a job program's stdout under the job protocol (docs/job-protocol.md): the JSON lines a
// program prints to report progress, checkpoints and its result. jobctl-train speaks it like any
// user program; this is the worker's one reader of it.
//
// A line that is a JSON object with an "event" string is a protocol line:
//   progress   -> the heartbeat's progress (step, total_steps, loss and the optional fields)
//   checkpoint -> a file to upload as the job's newest checkpoint (path, optional step, reason)
//   result     -> its other fields become the job's result
//   start, epoch -> optional extra progress fields (device, total_steps, test_accuracy, ...)
//   error      -> the message explains a failure; resume_refused: true asks for an older checkpoint
//   done       -> jobctl-train's summary line, kept for tests and people
// Every other line (text, JSON that is not a protocol line, an unknown event) is the job's log.
//
// Thread safety: none; one reader per running job, used from the runner's thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace jobctl::worker {

class JobProtocol {
 public:
  enum class Kind { start, progress, checkpoint, epoch, result, done, error, log };

  // Takes one stdout line; returns what kind of line it was.
  Kind apply(std::string_view line);

  // The progress object for a heartbeat (docs/api.md): step, total_steps, epoch, epochs_done,
  // loss, lr, samples_per_s, step_ms, train_loss, test_loss, test_accuracy, device,
  // last_checkpoint_step. Only the fields seen so far.
  const nlohmann::json& progress() const { return progress_; }
  // The last `checkpoint` line, once seen.
  const std::optional<nlohmann::json>& last_checkpoint() const { return last_checkpoint_; }
  // The `result` line's fields (without "event"), once seen.
  const std::optional<nlohmann::json>& result() const { return result_; }
  // The `done` line, once seen.
  const std::optional<nlohmann::json>& done() const { return done_; }
  // The message of the last `error` line, if any.
  const std::optional<std::string>& error() const { return error_; }
  // An `error` line asked for an older checkpoint (the one given could not be resumed from).
  bool resume_refused() const { return resume_refused_; }
  int log_lines() const { return log_lines_; }
  // Whether a `start` or `progress` line came (the work began; a refused resume ends before).
  bool started() const { return started_; }

 private:
  nlohmann::json progress_ = nlohmann::json::object();
  std::optional<nlohmann::json> done_;
  std::optional<nlohmann::json> result_;
  std::optional<nlohmann::json> last_checkpoint_;
  std::optional<std::string> error_;
  bool resume_refused_ = false;
  int log_lines_ = 0;
  bool started_ = false;
};

}  // namespace jobctl::worker
