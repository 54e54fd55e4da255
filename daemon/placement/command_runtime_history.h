// The runtime of a command job that gives no hint (docs/job-spec.md, "Command jobs"): a user's
// program has no model to count, so placement learns what it takes from the jobs with the same
// job key — the same name and the same command, arguments included — that ran before: the median of the last few whole runs (one run from start to success on
// one worker, no interruption or move between) on the GPU model most of them ran on. Placement
// then prices it as a hint of those hours on that GPU, scaled by speed on other GPUs
// (cost/workload.h). Without such runs the job is priced per hour, assuming one hour.
//
// Answers are cached per job key until a job finishes (forget()), so a queue of command jobs costs
// one indexed read per key, not one per job per pass.
//
// Ownership and thread safety: borrows the store (which must outlive it); every method is safe
// from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "base/expected.h"
#include "base/mutex.h"
#include "daemon/store/store.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::placement {

struct CommandRuntime {
  double hours = 0;     // the median run
  std::string gpu;      // the GPU model the runs were on (a cost::find_gpu name)
  int runs = 0;         // how many runs the median is of
};

class CommandRuntimeHistory {
 public:
  static constexpr int kRunsRead = 5;  // the last runs of a name read

  explicit CommandRuntimeHistory(store::Store& store) : store_(store) {}

  // The runtime the earlier runs of command jobs with the name and command of `spec` show
  // (nullopt: none usable). Errors: the store's.
  Expected<std::optional<CommandRuntime>> lookup(const train::JobSpec& spec) JOBCTL_EXCLUDES(mu_);
  // A job finished: the answers cached may miss its run.
  void forget() JOBCTL_EXCLUDES(mu_);

 private:
  store::Store& store_;
  Mutex mu_;
  // By job key: the name, then each argument of the command, NUL-separated.
  std::map<std::string, std::optional<CommandRuntime>> cached_ JOBCTL_GUARDED_BY(mu_);
};

// Words for the placement reason: "runtime from 3 earlier runs of <name> on V100 (median 0.42
// h), scaled by GPU speed".
std::string command_runtime_note(const std::string& name, const CommandRuntime& runtime);

}  // namespace jobctl::daemon::placement
