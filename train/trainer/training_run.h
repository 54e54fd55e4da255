// The training loop of jobctl-train: steps, progress events, epoch evaluation, checkpoints on a
// cadence, on request (SIGUSR1) and on interruption (SIGTERM / --max-steps), the final
// checkpoint and result.json (docs/train-cli.md).
//
// Everything outside the loop is injected: the Trainer (and through it the backend), the
// checkpoint store and file system, the wall clock for time-based checkpoints, the stop and
// checkpoint requests, and the sink the JSON lines go to. Tests run it in memory; the program
// wires it to signals, the disk and stdout.
//
// Signals are honoured at micro-batch boundaries (every optimizer step boundary is one): a
// micro-batch is never cut in half, so the checkpoint written for an interruption is exactly the
// state an uninterrupted run had at that point, between two micro-batches of a step if
// train.accumulate_steps > 1. The step limit (--max-steps) and the checkpoint cadence count whole
// optimizer steps.
//
// Thread safety: one call at a time; RunControl may be set from a signal handler or another
// thread (see its implementations).
#pragma once

#include <cstdint>
#include <string>

#include "base/clock.h"
#include "base/expected.h"
#include "train/checkpoint/checkpoint_store.h"
#include "train/trainer/trainer.h"

namespace jobctl::train {

// Requests polled at step boundaries.
class RunControl {
 public:
  virtual ~RunControl() = default;
  // A checkpoint was requested (SIGUSR1); returns true once per request.
  virtual bool take_checkpoint_request() = 0;
  // Stop with a checkpoint (SIGTERM / SIGINT).
  virtual bool stop_requested() = 0;
};

// Receives each JSON line (without the newline).
class EventSink {
 public:
  virtual ~EventSink() = default;
  virtual void emit(const std::string& json_line) = 0;
};

struct RunOptions {
  std::string device;           // "cpu" or "cuda" (events and result.json)
  std::string resumed_from;     // the checkpoint's path; empty for a fresh start
  // The kernels the products run on (the start event; every checkpoint's header records them),
  // how they were chosen and their start-up self-check (train/app/kernel_selection.h).
  std::string kernels;
  std::string kernels_selection;
  std::string kernels_check;
  // A resumed run: the kernels the checkpoint names (empty when it names none: format 1 and 2).
  std::string checkpoint_kernels;
  int log_every = 1;            // a step line every N steps (and for the last step)
  int64_t max_steps = 0;        // stop as if interrupted after this many global steps; 0: none
  int every_steps = 0;          // checkpoint cadence (spec.checkpoint)
  double every_seconds = 0;
};

struct RunOutcome {
  bool interrupted = false;
  int64_t step = 0;
  float final_loss = 0;
  bool has_eval = false;
  double test_loss = 0;
  double test_accuracy = 0;
  double elapsed_s = 0;
};

// Errors: code "io" when a checkpoint or result.json cannot be written.
Expected<RunOutcome> run_training(Trainer& trainer, CheckpointStore& store, FileSystem& fs, const Clock& clock,
                                  RunControl& control, EventSink& sink, const RunOptions& options);

}  // namespace jobctl::train
