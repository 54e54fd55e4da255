#include "train/trainer/training_run.h"

#include <chrono>
#include <cstdio>

#include "base/crc32c.h"

#include "train/trainer/progress_json.h"

namespace jobctl::train {

namespace {

using Steady = std::chrono::steady_clock;

double ms_since(Steady::time_point t0) {
  return std::chrono::duration<double, std::milli>(Steady::now() - t0).count();
}

}  // namespace

Expected<RunOutcome> run_training(Trainer& trainer, CheckpointStore& store, FileSystem& fs, const Clock& clock,
                                  RunControl& control, EventSink& sink, const RunOptions& options) {
  const auto run_start = Steady::now();
  const int64_t start_step = trainer.global_step();
  const int log_every = options.log_every > 0 ? options.log_every : 1;

  StartEvent start;
  start.device = options.device;
  start.device_name = trainer.backend().device_name();
  start.parameters = static_cast<int64_t>(trainer.parameter_count());
  start.steps_per_epoch = trainer.steps_per_epoch();
  start.total_steps = trainer.total_steps();
  start.start_step = start_step;
  if (!options.resumed_from.empty()) start.resumed_from = options.resumed_from;
  start.kernels = options.kernels;
  start.kernels_selection = options.kernels_selection;
  start.kernels_check = options.kernels_check;
  if (!options.checkpoint_kernels.empty()) {
    start.checkpoint_kernels = options.checkpoint_kernels;
    start.kernels_changed = options.checkpoint_kernels != options.kernels;
  }
  sink.emit(to_json_line(start));

  double last_checkpoint_s = clock.now_seconds();
  std::string final_path;
  size_t final_bytes = 0;
  auto write_checkpoint = [&](const std::string& reason) -> Status {
    const auto t0 = Steady::now();
    TrainingState state = trainer.snapshot();
    state.kernels = options.kernels;
    auto written = reason == "final" ? store.write_final(state) : store.write_periodic(state);
    if (!written) return Unexpected{std::move(written).error()};
    if (reason == "final") {
      final_path = written->path;
      final_bytes = written->bytes;
    }
    CheckpointEvent e;
    e.step = state.global_step;
    e.path = written->path;
    e.bytes = static_cast<int64_t>(written->bytes);
    e.write_ms = ms_since(t0);
    e.reason = reason;
    sink.emit(to_json_line(e));
    last_checkpoint_s = clock.now_seconds();
    return ok_status();
  };

  auto finish = [&](bool interrupted) -> Expected<RunOutcome> {
    if (auto st = write_checkpoint(interrupted ? "interrupt" : "final"); !st) return Unexpected{std::move(st).error()};
    RunOutcome out;
    out.interrupted = interrupted;
    out.step = trainer.global_step();
    out.final_loss = trainer.last_loss();
    out.has_eval = trainer.has_eval();
    out.test_loss = trainer.test_loss();
    out.test_accuracy = trainer.test_accuracy();
    out.elapsed_s = ms_since(run_start) / 1000.0;

    ResultFile result;
    result.status = interrupted ? "interrupted" : "succeeded";
    result.steps = out.step;
    result.epochs = out.step / trainer.steps_per_epoch();
    if (out.step > 0) result.final_loss = out.final_loss;
    if (out.has_eval) {
      result.test_loss = out.test_loss;
      result.test_accuracy = out.test_accuracy;
    }
    result.elapsed_s = out.elapsed_s;
    result.device = options.device;
    if (!final_path.empty()) {
      // The final weights' identity, read back from the file (what a resumed run is compared by).
      auto bytes = fs.read_file(final_path);
      if (!bytes) return Unexpected{std::move(bytes).error()};
      char hex[9];
      std::snprintf(hex, sizeof hex, "%08x", crc32c::value(bytes->data(), bytes->size()));
      result.final_checkpoint_crc32c = hex;
      result.final_checkpoint_bytes = static_cast<int64_t>(final_bytes);
    }
    const std::string text = to_json(result) + "\n";
    if (auto st = write_file_atomic(fs, store.dir(), "result.json",
                                    std::span(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
        !st)
      return Unexpected{std::move(st).error()};

    DoneEvent done;
    done.status = result.status;
    done.step = out.step;
    done.final_loss = result.final_loss;
    if (out.has_eval) done.test_accuracy = out.test_accuracy;
    done.elapsed_s = out.elapsed_s;
    sink.emit(to_json_line(done));
    if (!interrupted) sink.emit(result_json_line(result));
    return out;
  };

  auto log_start = Steady::now();
  int64_t log_start_step = start_step;
  int64_t log_samples = 0;

  while (!trainer.finished()) {
    // ---- micro-batch boundary: a stop or checkpoint request is honoured here; the step limit
    // and the checkpoint cadence at optimizer step boundaries only ----
    const int64_t g = trainer.global_step();
    const bool step_boundary = trainer.micro_index() == 0;
    if (control.stop_requested()) return finish(true);
    if (step_boundary && options.max_steps > 0 && g >= options.max_steps) return finish(true);
    const bool stepped_here = g > start_step;
    std::string reason;
    if (control.take_checkpoint_request()) {
      reason = "signal";
    } else if (step_boundary && stepped_here && options.every_steps > 0 && g % options.every_steps == 0) {
      reason = "periodic";
    } else if (step_boundary && stepped_here && options.every_seconds > 0 &&
               clock.now_seconds() - last_checkpoint_s >= options.every_seconds) {
      reason = "periodic";
    }
    if (!reason.empty()) {
      if (auto st = write_checkpoint(reason); !st) return Unexpected{std::move(st).error()};
    }

    // ---- one micro-batch; the rest only when it completed an optimizer step ----
    trainer.micro_step();
    if (trainer.micro_index() != 0) continue;
    const int64_t done_steps = trainer.global_step();
    log_samples += trainer.batch_rows(done_steps - 1);
    if (done_steps % log_every == 0 || trainer.finished()) {
      StepEvent e;
      e.step = done_steps;
      e.total_steps = trainer.total_steps();
      e.epoch = g / trainer.steps_per_epoch();
      e.loss = trainer.last_loss();  // waits for the device, so the timing below is real
      e.lr = trainer.learning_rate_of(done_steps - 1);
      const double ms = ms_since(log_start);
      e.step_ms = ms / static_cast<double>(done_steps - log_start_step);
      e.samples_per_s = ms > 0 ? static_cast<double>(log_samples) * 1000.0 / ms : 0.0;
      sink.emit(to_json_line(e));
      log_start = Steady::now();
      log_start_step = done_steps;
      log_samples = 0;
    }
    if (trainer.epoch_just_finished()) {
      const EpochSummary s = trainer.evaluate_epoch();
      sink.emit(to_json_line(EpochEvent{s.epoch, s.train_loss, s.test_loss, s.test_accuracy}));
      // Evaluation time is not step time.
      log_start = Steady::now();
      log_start_step = trainer.global_step();
      log_samples = 0;
    }
  }
  return finish(false);
}

}  // namespace jobctl::train
