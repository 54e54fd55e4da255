// Budgets while jobs run (docs/configuration.md, limits; docs/cost-model.md, "Budgets"): every
// check reads the users that have queued, placed or running jobs, and for each with a budget
// compares this month's spend from the cost ledger (running jobs billed up to now) with it. The
// first check that finds a user over budget this month raises an `over_budget` event on each of
// the user's open jobs (detail: the spend, the budget, the policy); then, every check while the
// user stays over, per limits.over_budget:
//   - "finish": running jobs run to their end; queued and placed jobs are held (`held`, reason);
//   - "stop": the same, and running jobs are asked to move with hold: they checkpoint and are
//     held (daemon/jobs/job_moves.h, MoveRequest::hold) rather than queued again.
// New submits are held by the submit check (auth_admission.h). A user under budget again (a
// raised budget, a new month) is left alone; held jobs stay held until released.
//
// Ownership: borrows the store, the clock, the job service, the admission (for the budgets) and
// the spend source (all outlive it). Thread safety: check() runs on one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/clock.h"
#include "base/expected.h"
#include "daemon/auth/auth_admission.h"
#include "daemon/jobs/job_service.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::auth {

class BudgetWatch {
 public:
  BudgetWatch(store::Store& store, const Clock& clock, jobs::JobService& jobs, const UserLimitsAdmission& budgets,
              SpendSource& spend, std::string policy)
      : store_(store), clock_(clock), jobs_(jobs), budgets_(budgets), spend_(spend), policy_(std::move(policy)) {}

  // One check. Returns how many users are over budget now. Errors: the store's or the ledger's
  // (the other users are checked all the same).
  Expected<int> check();

 private:
  store::Store& store_;
  const Clock& clock_;
  jobs::JobService& jobs_;
  const UserLimitsAdmission& budgets_;
  SpendSource& spend_;
  const std::string policy_;
  std::map<std::string, int64_t> noted_;  // user -> the month (its start) its crossing was raised
};

}  // namespace jobctl::daemon::auth
