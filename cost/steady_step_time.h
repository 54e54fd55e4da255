// A run's steady-state step time, from the progress windows its trainer reports (jobctl-train's
// step events: the mean step time of the steps since the previous one, evaluation excluded).
// The first window carries the start-up (first touches of memory, thread pools, allocator); a
// window that contains a checkpoint write is slower than its neighbours. The median of the
// windows after the first ignores both: what calibration learns efficiency from
// (efficiency_calibrator.h). With a single window, that window.
//
// Thread safety: none; a plain value.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace jobctl::cost {

class SteadyStepTime {
 public:
  static constexpr size_t kMaxWindows = 4096;  // a bound on memory; later windows are ignored

  // One report: the mean step time (ms) of the window that ended at `step`. Reports of a step
  // already seen (a heartbeat repeating the last progress), or with a non-positive time, are ignored.
  void add(int64_t step, double step_ms);

  // Seconds per step in steady state; nullopt before any window.
  std::optional<double> seconds() const;
  size_t windows() const { return windows_ms_.size(); }
  int64_t last_step() const { return last_step_; }

 private:
  std::vector<double> windows_ms_;
  int64_t last_step_ = 0;
};

}  // namespace jobctl::cost
