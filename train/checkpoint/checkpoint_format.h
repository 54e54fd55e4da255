// The checkpoint file format: TrainingState <-> bytes (docs/checkpoint-format.md).
//
// A file is a 32-byte header (magic "JOBCTLCK", version, section count, total length, header
// CRC32C) followed by sections, each `tag, flags, payload length, payload, CRC32C`. All fields are
// fixed-width little-endian; floats are IEEE-754 bit patterns. The bytes are a pure function of
// the TrainingState: no time stamps, paths or host names, so two runs that reach the same state
// write identical files.
//
// decode_checkpoint() trusts nothing: every length is bounds-checked and every CRC verified
// before a field is read, so a truncated, torn or bit-flipped file is reported (error code
// "corrupt_checkpoint", message naming the section) and never half-loaded.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/expected.h"
#include "train/checkpoint/training_state.h"

namespace jobctl::train {

inline constexpr char kCheckpointMagic[8] = {'J', 'O', 'B', 'C', 'T', 'L', 'C', 'K'};
// Version 2 adds the ACCU section (a state between the micro-batches of an optimizer step). A
// state at a step boundary is written as version 1, byte for byte what earlier builds wrote, so
// they can still read it; both versions are read.
inline constexpr uint32_t kCheckpointVersion = 2;
inline constexpr uint32_t kCheckpointVersionWithoutAccumulation = 1;

std::vector<uint8_t> encode_checkpoint(const TrainingState& state);
Expected<TrainingState> decode_checkpoint(std::span<const uint8_t> bytes);

}  // namespace jobctl::train
