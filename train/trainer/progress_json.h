// The JSON-lines events jobctl-train prints and its result.json (docs/train-cli.md is the
// contract with jobctl-worker). Each function returns one JSON object as a single line without
// the newline. Floats round-trip exactly (float32 values are printed as float32).
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace jobctl::train {

struct StartEvent {
  std::string device;        // "cpu" or "cuda"
  std::string device_name;
  int64_t parameters = 0;
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
  int64_t start_step = 0;
  std::optional<std::string> resumed_from;
  std::string kernels;            // "OpenBLAS 0.3.21 (Cooperlake)", "portable", the GPU's name
  std::string kernels_selection;  // how they were chosen (empty: not reported)
  std::string kernels_check;      // their start-up self-check (empty: not reported)
  // A resumed run whose checkpoint names its kernels: those, and whether this run's differ (then
  // its steps are not bit-identical to an uninterrupted run on the checkpoint's kernels).
  std::optional<std::string> checkpoint_kernels;
  std::optional<bool> kernels_changed;
};

// The job protocol's `progress` event (docs/job-protocol.md).
struct StepEvent {
  int64_t step = 0;   // 1-based global step just completed
  int64_t total_steps = 0;
  int64_t epoch = 0;  // 0-based epoch it belongs to
  float loss = 0;
  float lr = 0;
  double step_ms = 0;
  double samples_per_s = 0;
};

struct CheckpointEvent {
  int64_t step = 0;
  std::string path;
  int64_t bytes = 0;
  double write_ms = 0;
  std::string reason;  // periodic, signal, final, interrupt
};

struct EpochEvent {
  int64_t epoch = 0;
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = 0;
};

struct DoneEvent {
  std::string status;  // succeeded or interrupted
  int64_t step = 0;
  std::optional<float> final_loss;        // loss of the last step; none before any step
  std::optional<double> test_accuracy;    // none before any evaluation
  double elapsed_s = 0;
};

struct ResultFile {
  std::string status;
  int64_t steps = 0;
  int64_t epochs = 0;  // completed epochs
  std::optional<float> final_loss;
  std::optional<double> test_loss;
  std::optional<double> test_accuracy;
  double elapsed_s = 0;
  std::string device;
  // The final checkpoint's identity (CRC32C, 8 hex digits, and size), so a resumed run can be
  // compared with an uninterrupted one; empty when not written.
  std::string final_checkpoint_crc32c;
  int64_t final_checkpoint_bytes = 0;
};

// jobctl-train --measure-cpu's one line (train/kernels/gemm_throughput.h).
struct CpuThroughputEvent {
  double core_gflops = 0;
  int rounds = 0;
  double seconds = 0;
  std::string kernels;  // blas_description()
};

std::string to_json_line(const StartEvent& e);
std::string to_json_line(const StepEvent& e);
std::string to_json_line(const CheckpointEvent& e);
std::string to_json_line(const EpochEvent& e);
std::string to_json_line(const DoneEvent& e);
std::string to_json_line(const CpuThroughputEvent& e);
std::string error_json_line(const std::string& message);
std::string to_json(const ResultFile& r);
// The job protocol's `result` event: the result file's fields (the final checkpoint's identity
// included), which become the job's result.
std::string result_json_line(const ResultFile& r);
// An `error` event for a checkpoint that cannot be resumed from: `resume_refused` tells the
// worker to fall back to an older checkpoint (docs/job-protocol.md).
std::string resume_refused_json_line(const std::string& message);

}  // namespace jobctl::train
