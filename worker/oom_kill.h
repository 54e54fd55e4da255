// Telling a trainer killed by the kernel's out-of-memory killer from any other death: the job's
// error then says so, with the figures, instead of a bare "killed by signal 9".
//
// A SIGKILL the worker did not send itself comes from the kernel (almost always its OOM killer) or
// from a person. Where the worker's cgroup (v2) counts OOM kills (memory.events "oom_kill"), a rise
// of that count while the trainer ran is proof; otherwise the explanation says "most likely" and
// gives the trainer's peak memory against what the machine has available.
//
// Thread safety: pure functions, except oom_kill_count() which reads /proc and /sys.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "process/child.h"

namespace jobctl::worker {

// The "oom_kill" count of a cgroup v2 memory.events text; nullopt when absent.
std::optional<int64_t> parse_oom_kill_count(std::string_view memory_events);
// This process's cgroup's OOM kill count (its children share the cgroup); nullopt when unknown.
std::optional<int64_t> oom_kill_count();
// MemAvailable of /proc/meminfo, MiB; 0 when unknown.
int64_t available_memory_mb();

// The failure text for a trainer that ended with `status`, when the worker did not kill it itself;
// empty unless it was a SIGKILL. `oom_before` / `oom_after`: oom_kill_count() at spawn and after.
std::string sigkill_explanation(const process::ExitStatus& status, std::optional<int64_t> oom_before,
                                std::optional<int64_t> oom_after, int64_t available_mb);

}  // namespace jobctl::worker
