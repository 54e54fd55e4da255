#include "train/trainer/progress_json.h"

#include "train/spec/json.h"

namespace jobctl::train {

namespace {

using json::Value;

template <class T>
Value optional_value(const std::optional<T>& v) {
  return v ? Value(*v) : Value(nullptr);
}

}  // namespace

std::string to_json_line(const StartEvent& e) {
  return Value(json::Object{{"event", Value("start")},
                            {"device", Value(e.device)},
                            {"device_name", Value(e.device_name)},
                            {"parameters", Value(e.parameters)},
                            {"steps_per_epoch", Value(e.steps_per_epoch)},
                            {"total_steps", Value(e.total_steps)},
                            {"start_step", Value(e.start_step)},
                            {"resumed_from", optional_value(e.resumed_from)},
                            {"kernels", Value(e.kernels)},
                            {"kernels_selection", Value(e.kernels_selection)},
                            {"kernels_check", Value(e.kernels_check)},
                            {"checkpoint_kernels", optional_value(e.checkpoint_kernels)},
                            {"kernels_changed", optional_value(e.kernels_changed)}})
      .dump();
}

std::string to_json_line(const StepEvent& e) {
  return Value(json::Object{{"event", Value("progress")},
                            {"step", Value(e.step)},
                            {"total_steps", Value(e.total_steps)},
                            {"epoch", Value(e.epoch)},
                            {"loss", Value(e.loss)},
                            {"lr", Value(e.lr)},
                            {"step_ms", Value(e.step_ms)},
                            {"samples_per_s", Value(e.samples_per_s)}})
      .dump();
}

std::string to_json_line(const CheckpointEvent& e) {
  return Value(json::Object{{"event", Value("checkpoint")},
                            {"step", Value(e.step)},
                            {"path", Value(e.path)},
                            {"bytes", Value(e.bytes)},
                            {"write_ms", Value(e.write_ms)},
                            {"reason", Value(e.reason)}})
      .dump();
}

std::string to_json_line(const EpochEvent& e) {
  return Value(json::Object{{"event", Value("epoch")},
                            {"epoch", Value(e.epoch)},
                            {"train_loss", Value(e.train_loss)},
                            {"test_loss", Value(e.test_loss)},
                            {"test_accuracy", Value(e.test_accuracy)}})
      .dump();
}

std::string to_json_line(const DoneEvent& e) {
  return Value(json::Object{{"event", Value("done")},
                            {"status", Value(e.status)},
                            {"step", Value(e.step)},
                            {"final_loss", optional_value(e.final_loss)},
                            {"test_accuracy", optional_value(e.test_accuracy)},
                            {"elapsed_s", Value(e.elapsed_s)}})
      .dump();
}

std::string to_json_line(const CpuThroughputEvent& e) {
  return Value(json::Object{{"event", Value("cpu_throughput")},
                            {"core_gflops", Value(e.core_gflops)},
                            {"rounds", Value(static_cast<int64_t>(e.rounds))},
                            {"seconds", Value(e.seconds)},
                            {"kernels", Value(e.kernels)}})
      .dump();
}

std::string error_json_line(const std::string& message) {
  return Value(json::Object{{"event", Value("error")}, {"message", Value(message)}}).dump();
}

std::string resume_refused_json_line(const std::string& message) {
  return Value(json::Object{{"event", Value("error")}, {"message", Value(message)}, {"resume_refused", Value(true)}})
      .dump();
}

std::string result_json_line(const ResultFile& r) {
  json::Object o{{"event", Value("result")},
                 {"steps", Value(r.steps)},
                 {"epochs", Value(r.epochs)},
                 {"final_loss", optional_value(r.final_loss)},
                 {"test_loss", optional_value(r.test_loss)},
                 {"test_accuracy", optional_value(r.test_accuracy)},
                 {"elapsed_s", Value(r.elapsed_s)},
                 {"device", Value(r.device)}};
  if (!r.final_checkpoint_crc32c.empty()) {
    o.emplace_back("final_checkpoint_crc32c", Value(r.final_checkpoint_crc32c));
    o.emplace_back("final_checkpoint_bytes", Value(r.final_checkpoint_bytes));
  }
  return Value(std::move(o)).dump();
}

std::string to_json(const ResultFile& r) {
  return Value(json::Object{{"status", Value(r.status)},
                            {"steps", Value(r.steps)},
                            {"epochs", Value(r.epochs)},
                            {"final_loss", optional_value(r.final_loss)},
                            {"test_loss", optional_value(r.test_loss)},
                            {"test_accuracy", optional_value(r.test_accuracy)},
                            {"elapsed_s", Value(r.elapsed_s)},
                            {"device", Value(r.device)}})
      .dump();
}

}  // namespace jobctl::train
