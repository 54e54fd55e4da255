// A spot availability / preemption trace in the format of skypilot-org/spot-traces (published with
// "Can't Be Late", Wu et al., NSDI 2024):
//   {"metadata": {"gap_seconds": N}, "data": [ints], "prices": [numbers] (optional)}
// one point every gap_seconds; each point the number of spot instances available at that tick
// (1-node traces: 1 = a spot instance can be had / keeps running, 0 = none / it was reclaimed).
//
// Parsing takes the text (the CLI or the daemon reads the file). Statistics summarise a stretch of
// the trace: availability, interruptions (1 -> 0 transitions) per hour of spot uptime, mean up and
// down run lengths — what a placement's interruption rate or a policy's prior can be set from.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "base/expected.h"

namespace jobctl::scheduler {

struct SpotTrace {
  double gap_seconds = 0;
  std::vector<int32_t> available;  // instances available per tick (>= 0)
  std::vector<double> prices;      // $/h per tick; empty when the trace has none

  double gap_hours() const { return gap_seconds / 3600.0; }
  double hours() const { return static_cast<double>(available.size()) * gap_hours(); }
  // Ticks past the end count as unavailable.
  bool available_at(size_t tick) const { return tick < available.size() && available[tick] > 0; }
};

// Errors ("invalid_argument" naming the field, "malformed_json"): not JSON, no metadata.gap_seconds
// > 0, data not a non-empty array of non-negative integers, prices not numbers or of another length.
[[nodiscard]] Expected<SpotTrace> parse_spot_trace(std::string_view json_text);

struct TraceStats {
  double hours = 0;
  double availability = 0;              // fraction of ticks with spot available
  int64_t interruptions = 0;            // available -> unavailable transitions
  double interruptions_per_hour = 0;    // per hour of availability (lambda while running on spot)
  double mean_up_hours = 0;             // mean length of an available stretch
  double mean_down_hours = 0;           // mean length of an unavailable stretch
};

// Over ticks [begin, end) (clamped to the trace).
TraceStats trace_stats(const SpotTrace& trace, size_t begin = 0, size_t end = SIZE_MAX);

}  // namespace jobctl::scheduler
