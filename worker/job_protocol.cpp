#include "worker/job_protocol.h"

namespace jobctl::worker {

using nlohmann::json;

namespace {

void copy(json& to, const char* to_key, const json& from, const char* from_key) {
  auto it = from.find(from_key);
  if (it != from.end() && !it->is_null() && (it->is_number() || it->is_string() || it->is_boolean()))
    to[to_key] = *it;
}

}  // namespace

JobProtocol::Kind JobProtocol::apply(std::string_view line) {
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("event") || !j["event"].is_string()) {
    ++log_lines_;
    return Kind::log;
  }
  const std::string ev = j["event"];
  if (ev == "progress") {
    started_ = true;
    for (const char* k : {"step", "total_steps", "epoch", "loss", "lr", "step_ms", "samples_per_s"}) copy(progress_, k, j, k);
    return Kind::progress;
  }
  if (ev == "checkpoint") {
    if (!j.contains("path") || !j["path"].is_string() || j["path"].get<std::string>().empty()) {
      ++log_lines_;
      return Kind::log;
    }
    copy(progress_, "last_checkpoint_step", j, "step");
    last_checkpoint_ = j;
    return Kind::checkpoint;
  }
  if (ev == "result") {
    json r = j;
    r.erase("event");
    result_ = std::move(r);
    return Kind::result;
  }
  if (ev == "start") {
    started_ = true;
    copy(progress_, "device", j, "device");
    copy(progress_, "device_name", j, "device_name");
    copy(progress_, "total_steps", j, "total_steps");
    copy(progress_, "steps_per_epoch", j, "steps_per_epoch");
    copy(progress_, "step", j, "start_step");
    copy(progress_, "parameters", j, "parameters");
    copy(progress_, "kernels", j, "kernels");
    copy(progress_, "kernels_changed", j, "kernels_changed");
    copy(progress_, "checkpoint_kernels", j, "checkpoint_kernels");
    return Kind::start;
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
    auto refused = j.find("resume_refused");
    if (refused != j.end() && refused->is_boolean() && refused->get<bool>()) resume_refused_ = true;
    return Kind::error;
  }
  ++log_lines_;
  return Kind::log;
}

}  // namespace jobctl::worker
