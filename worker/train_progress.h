// Reads jobctl-train's JSON-lines output (docs/train-cli.md) and keeps what the worker reports:
// the progress sent in heartbeats, the final `done` line and the last `error` message.
//
// Thread safety: none; one tracker per running job, used from the runner's thread.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace jobctl::worker {

class TrainProgress {
 public:
  enum class Kind { start, step, checkpoint, epoch, done, error, other, not_json };

  // Takes one stdout line; returns what kind of line it was. Lines that are not JSON objects
  // with an "event" string are ignored (Kind::not_json) but counted.
  Kind apply(std::string_view line);

  // The progress object for a heartbeat (docs/api.md): step, total_steps, epoch, epochs_done,
  // loss, lr, samples_per_s, step_ms, train_loss, test_loss, test_accuracy, device,
  // last_checkpoint_step. Only the fields seen so far.
  const nlohmann::json& progress() const { return progress_; }
  // The last `checkpoint` line (step, path, bytes, write_ms, reason), once seen.
  const std::optional<nlohmann::json>& last_checkpoint() const { return last_checkpoint_; }
  // The `done` line, once seen.
  const std::optional<nlohmann::json>& done() const { return done_; }
  // The message of the last `error` line, if any.
  const std::optional<std::string>& error() const { return error_; }
  int ignored_lines() const { return ignored_; }
  // Whether the `start` line came (training began; a refused resume ends before it).
  bool started() const { return started_; }

 private:
  nlohmann::json progress_ = nlohmann::json::object();
  std::optional<nlohmann::json> done_;
  std::optional<nlohmann::json> last_checkpoint_;
  std::optional<std::string> error_;
  int ignored_ = 0;
  bool started_ = false;
};

}  // namespace jobctl::worker
