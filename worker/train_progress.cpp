#include "worker/train_progress.h"

namespace jobctl::worker {

using nlohmann::json;

namespace {

void copy(json& to, const char* to_key, const json& from, const char* from_key) {
  auto it = from.find(from_key);
  if (it != from.end() && !it->is_null()) to[to_key] = *it;
}

}  // namespace

TrainProgress::Kind TrainProgress::apply(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("event") || !j["event"].is_string()) {
    ++ignored_;
    return Kind::not_json;
  }
  const std::string ev = j["event"];
  if (ev == "start") {
    started_ = true;
    copy(progress_, "device", j, "device");
    copy(progress_, "device_name", j, "device_name");
    copy(progress_, "total_steps", j, "total_steps");
    copy(progress_, "steps_per_epoch", j, "steps_per_epoch");
    copy(progress_, "step", j, "start_step");
    copy(progress_, "parameters", j, "parameters");
    return Kind::start;
  }
  if (ev == "step") {
    copy(progress_, "step", j, "step");
    copy(progress_, "epoch", j, "epoch");
    copy(progress_, "loss", j, "loss");
    copy(progress_, "lr", j, "lr");
    copy(progress_, "step_ms", j, "step_ms");
    copy(progress_, "samples_per_s", j, "samples_per_s");
    return Kind::step;
  }
  if (ev == "checkpoint") {
    copy(progress_, "last_checkpoint_step", j, "step");
    last_checkpoint_ = j;
    return Kind::checkpoint;
  }
  if (ev == "epoch") {
    if (j.contains("epoch") && j["epoch"].is_number_integer())
      progress_["epochs_done"] = j["epoch"].get<int64_t>() + 1;
    copy(progress_, "train_loss", j, "train_loss");
    copy(progress_, "test_loss", j, "test_loss");
    copy(progress_, "test_accuracy", j, "test_accuracy");
    return Kind::epoch;
  }
  if (ev == "done") {
    done_ = j;
    copy(progress_, "step", j, "step");
    return Kind::done;
  }
  if (ev == "error") {
    error_ = j.contains("message") && j["message"].is_string() ? j["message"].get<std::string>()
                                                               : std::string("unknown error");
    return Kind::error;
  }
  return Kind::other;
}

}  // namespace jobctl::worker
