// Checkpoints for tests of the daemon's upload checks: the bytes jobctl-train would write for a
// job spec's training at a given step (train::encode_checkpoint over a TrainingState whose
// identity and position are the spec's; the weights are filler). Tests that need this link
// jobctl_train.
#pragma once

#include <cstdint>
#include <string>

#include "train/checkpoint/checkpoint_format.h"
#include "train/spec/job_spec.h"

namespace jobctl::testing {

// `fingerprint_xor`: flips bits of the spec's fingerprint (another training's checkpoint).
inline std::string checkpoint_for(const std::string& spec_json, int64_t step, size_t params = 1000,
                                  uint64_t fingerprint_xor = 0) {
  auto spec = train::parse_job_spec(spec_json);
  if (!spec) return {};
  train::TrainingState s;
  s.fingerprint = train::training_fingerprint(*spec) ^ fingerprint_xor;
  s.layout_hash = 0x5eed;
  s.global_step = step;
  s.batch_size = spec->train.batch_size;
  s.train_samples = train::input_shape(spec->data).train_samples;
  s.steps_per_epoch = (s.train_samples + s.batch_size - 1) / s.batch_size;
  s.epoch = step / s.steps_per_epoch;
  s.optimizer = train::OptimizerKind::sgd;
  s.params.resize(params);
  for (size_t i = 0; i < params; ++i) s.params[i] = static_cast<float>((i * 131 + static_cast<size_t>(step)) % 977);
  s.moment1.assign(params, 0.5f);
  const auto bytes = train::encode_checkpoint(s);
  return std::string(bytes.begin(), bytes.end());
}

}  // namespace jobctl::testing
