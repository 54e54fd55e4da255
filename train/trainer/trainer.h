// One training run's state on a Backend: the network, the optimizer, the data on the device, the
// sample order and the progress figures; step(), evaluation, and the snapshot / restore that
// checkpoints are made of.
//
// An optimizer step is one or more micro-batches (train.accumulate_steps): each gathers its samples,
// runs forward, loss and backward and adds its gradient to the step's; the last also clips and
// updates the weights. The loss gradient is scaled by 1 / (samples of the whole step), so the
// micro-batches add up to the gradient of the whole batch. A micro-batch is a fixed sequence of
// backend operations over fixed buffers: the only things that change between them are the sample
// indices and the StepScalars, uploaded before it. That is what lets the CUDA backend replay it as
// a graph, and what makes training a pure function of (state, position): restore(snapshot())
// followed by the same micro-batches gives the same bits, at a step boundary or between
// micro-batches.
//
// Steps per epoch = ceil(train samples / batch size); the last batch of an epoch may be smaller.
// A step of `rows` samples has ceil(rows / micro-batch size) micro-batches, all full but the last.
// Losses are written on the device and fetched lazily (last_loss(), at epoch ends and snapshots),
// so the CPU thread need not wait for the GPU after every step.
//
// Ownership: borrows the Backend (must outlive the Trainer); copies the datasets to the backend.
// Thread safety: not thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "base/expected.h"
#include "train/checkpoint/training_state.h"
#include "train/data/batch_order.h"
#include "train/data/dataset.h"
#include "train/kernels/backend.h"
#include "train/model/network.h"
#include "train/optim/optimizer.h"
#include "train/spec/job_spec.h"
#include "train/tensor/device_buffer.h"

namespace jobctl::train {

struct EvalResult {
  double loss = 0;
  double accuracy = 0;
  int64_t samples = 0;
};

struct EpochSummary {
  int64_t epoch = 0;  // 0-based, the epoch that just finished
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = 0;
};

class Trainer {
 public:
  // The datasets must match the spec's model (features, classes); error code "invalid_argument"
  // otherwise — see create().
  static Expected<std::unique_ptr<Trainer>> create(const JobSpec& spec, Backend& backend, const Dataset& train,
                                                   const Dataset& test);

  Trainer(const JobSpec& spec, Backend& backend, const Dataset& train, const Dataset& test);
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // A fresh start: the seeded initial weights, zero optimizer state, step 0.
  void initialize();
  // Continue from a checkpoint. Refused with code "checkpoint_mismatch" when the state belongs to
  // another spec (fingerprint), model layout, batch size or dataset size.
  Status restore(const TrainingState& state);
  // Everything the next step depends on (waits for the device).
  TrainingState snapshot();

  // The rest of the current optimizer step: all its remaining micro-batches (asynchronous on CUDA).
  void step();
  // One micro-batch; the last one of a step also updates the weights and counts the step.
  void micro_step();
  // Micro-batches of the current step already done (0 at a step boundary).
  int64_t micro_index() const { return micro_; }
  // Micro-batches step `step` (0-based) has.
  int64_t micro_batches_of(int64_t step) const;
  bool finished() const { return global_step_ >= total_steps_; }
  // True when the last step() completed an epoch.
  bool epoch_just_finished() const { return epoch_finished_; }
  // Loss of the last completed step (fetches from the device).
  float last_loss();
  // Mean step loss of the epoch that just finished.
  double last_epoch_train_loss() const { return epoch_train_loss_; }

  // Test-set loss and accuracy of the current weights.
  EvalResult evaluate();
  // evaluate() for the epoch that just finished, recorded in the state (checkpoints carry it).
  EpochSummary evaluate_epoch();

  int64_t global_step() const { return global_step_; }
  int64_t epoch() const { return global_step_ / steps_per_epoch_; }  // epoch of the next step
  int64_t steps_per_epoch() const { return steps_per_epoch_; }
  int64_t total_steps() const { return total_steps_; }
  int batch_size() const { return batch_; }
  int micro_batch_size() const { return micro_batch_; }
  int64_t train_samples() const { return train_samples_; }
  // Samples in step `step` (0-based): the batch size, or less for the last batch of an epoch.
  int batch_rows(int64_t step) const;
  // The learning rate step `step` (0-based) uses.
  float learning_rate_of(int64_t step) const;
  size_t parameter_count() const { return net_.parameter_count(); }
  bool has_eval() const { return has_eval_; }
  double test_loss() const { return test_loss_; }
  double test_accuracy() const { return test_accuracy_; }
  Network& network() { return net_; }
  Optimizer& optimizer() { return optimizer_; }
  Backend& backend() { return backend_; }

 private:
  void micro_body(int rows, int step_rows, int64_t micro, bool last);
  void fetch_losses();
  const StepScalars* scalars() const { return reinterpret_cast<const StepScalars*>(step_buf_.data()); }
  const int32_t* batch_indices() const { return reinterpret_cast<const int32_t*>(step_buf_.data() + sizeof(StepScalars)); }

  JobSpec spec_;
  Backend& backend_;
  uint64_t fingerprint_;
  int batch_;
  int micro_batch_;
  int features_;
  int classes_;
  int64_t train_samples_;
  int64_t test_samples_;
  int64_t steps_per_epoch_;
  int64_t total_steps_;
  float grad_clip_;

  Network net_;
  Optimizer optimizer_;
  BatchOrder order_;

  DeviceBuffer<float> train_x_, test_x_;
  DeviceBuffer<int32_t> train_y_, test_y_;
  DeviceBuffer<float> x_batch_;
  DeviceBuffer<int32_t> y_batch_;
  DeviceBuffer<float> row_loss_;   // the current step's per-sample losses, micro-batch after micro-batch
  DeviceBuffer<float> loss_log_;   // per step of the current epoch
  DeviceBuffer<uint8_t> step_buf_;  // StepScalars, then the micro-batch's sample indices
  DeviceBuffer<ClipState> clip_state_;
  DeviceBuffer<float> eval_loss_, eval_correct_;
  std::vector<uint8_t> staging_;
  // Declared after every buffer its graphs use: destroyed (and the graphs dropped) first.
  RecordedSteps recorded_;

  int64_t global_step_ = 0;
  int64_t micro_ = 0;  // micro-batches of step global_step_ done
  std::vector<float> epoch_losses_;  // fetched losses of the current epoch
  int64_t pending_losses_ = 0;       // steps whose loss is still only on the device
  float last_loss_ = 0;
  bool epoch_finished_ = false;
  double epoch_train_loss_ = 0;
  bool has_eval_ = false;
  int64_t eval_epoch_ = -1;
  double eval_train_loss_ = 0;
  double test_loss_ = 0;
  double test_accuracy_ = 0;
};

}  // namespace jobctl::train
