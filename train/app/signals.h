// SIGUSR1 / SIGTERM / SIGINT for jobctl-train: the handlers only set flags (async-signal-safe);
// the training loop reads them at step boundaries through SignalControl.
//
// Thread safety: install once from main(); SignalControl may be read from any thread.
#pragma once

#include "train/trainer/training_run.h"

namespace jobctl::train {

// Blocks the three signals until install_signal_handlers(): one that arrives meanwhile stays
// pending, also across the execve of the kernel selection (the signal mask and pending signals
// survive it), instead of killing the process or being lost with a handler's flag.
void hold_signals();
// Installs the handlers (SA_RESTART, so interrupted system calls resume) and unblocks the signals.
void install_signal_handlers();

class SignalControl final : public RunControl {
 public:
  bool take_checkpoint_request() override;
  bool stop_requested() override;
};

}  // namespace jobctl::train
