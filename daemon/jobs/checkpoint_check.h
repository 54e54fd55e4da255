// What an uploaded checkpoint must be to be stored for a job (docs/recovery.md, "What the
// daemon checks"): its bytes have the CRC32C the worker sent, its framing is a checkpoint's
// (train/checkpoint/checkpoint_scan.h: header, every section's CRC, no trailing bytes), and its
// META section says it belongs to this job's training (the spec's training fingerprint) at the
// step the upload names, no further than the job's last step. The file is read once, in pieces;
// nothing of it stays in memory.
//
// What it cannot check (the model's layout, the weights themselves) the trainer checks when it
// resumes; a checkpoint refused then is rejected by the worker and the job falls back to the
// previous one (CheckpointService::reject).
//
// Thread safety: pure functions over a file the caller owns.
#pragma once

#include <cstdint>
#include <string>

#include "base/expected.h"
#include "train/checkpoint/checkpoint_scan.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::jobs {

struct CheckpointExpectation {
  uint64_t fingerprint = 0;  // train::training_fingerprint of the job's spec
  int64_t max_step = 0;      // train::training_steps of the job's spec
  // A command job's checkpoint is an opaque file (docs/job-protocol.md): only its CRC32C is
  // checked, and its step is the program's own (any step from 0).
  bool opaque = false;
};

// From the job's spec.
CheckpointExpectation expectation_for(const train::JobSpec& spec);

// An opaque checkpoint (a command job's) is checked for its CRC32C only; the returned scan has
// its bytes and CRC32C and an empty meta.
// Errors: invalid_argument naming crc32c (the bytes' checksum differs from `crc32c`) or step
// (another step than `step`, or beyond the job's last); corrupt_checkpoint (not a checkpoint's
// framing) and checkpoint_mismatch (another training's checkpoint), both naming body; io when
// the file cannot be read.
Expected<train::CheckpointScan> check_checkpoint_file(const std::string& path, uint32_t crc32c, int64_t step,
                                                      const CheckpointExpectation& expect);

}  // namespace jobctl::daemon::jobs
