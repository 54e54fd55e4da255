// Dependencies between jobs (a spec's `after`: docs/job-spec.md, "Dependencies"). Checked at
// submit — each names a job, or a job array, that exists and that the submitter may see — and
// read on every placement pass: a queued job whose dependencies have not all ended as asked waits
// unplaced (nothing offers it to a worker), and one whose `succeeded` dependency failed or was
// cancelled is cancelled, saying which. The same check gives the job's `waiting` reason.
//
// Thread safety: free functions over the store (safe from any thread).
#pragma once

#include <string>
#include <vector>

#include "base/expected.h"
#include "daemon/store/store.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::jobs {

struct DependencyCheck {
  enum class Verdict {
    met,      // every dependency ended as asked: the job may be placed
    waiting,  // some have not ended yet
    failed,   // a `succeeded` one failed or was cancelled: it never will
  };
  Verdict verdict = Verdict::met;
  std::string reason;  // waiting / failed: which, in words ("job 12 failed", "array a14: 2 of 3 jobs ...")
};

// Whether the dependencies have ended as asked, from the states of the jobs they name now.
Expected<DependencyCheck> check_dependencies(store::Store& store, const std::vector<train::JobDependency>& after);

// At submit: each dependency names a job or array that exists, of `owner`'s when the jobs have
// owners (auth on: a user's job cannot wait on jobs it may not see). Errors name `after[i]`.
Status validate_dependencies(store::Store& store, const std::vector<train::JobDependency>& after,
                             const std::string& owner);

}  // namespace jobctl::daemon::jobs
