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
// they can still read it. Version 3 adds the KERN section, first after the header: the name of the
// kernels the state was computed with (TrainingState::kernels); ACCU is then present exactly when
// the state is inside an optimizer step. A state that names no kernels is written as version 1 or
// 2, as before. All three versions are read.
inline constexpr uint32_t kCheckpointVersion = 3;
inline constexpr uint32_t kCheckpointVersionWithAccumulation = 2;
inline constexpr uint32_t kCheckpointVersionWithoutAccumulation = 1;
// The longest kernels name a checkpoint holds (longer names are cut when written).
inline constexpr size_t kCheckpointKernelsMaxBytes = 256;

std::vector<uint8_t> encode_checkpoint(const TrainingState& state);
Expected<TrainingState> decode_checkpoint(std::span<const uint8_t> bytes);

}  // namespace jobctl::train
