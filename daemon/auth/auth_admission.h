// What a submit must pass with auth on (docs/security.md): before anything is written, a command
// job only from a token that may submit one (403, field "command"); then per-user limits checked
// inside the submit's transaction:
//  - at most limits.max_waiting_jobs_per_user jobs queued or held per user: past it the submit is
//    refused (code "limit_exceeded", HTTP 429) and nothing is stored;
//  - a monthly budget per user: when the user's spend this calendar month (UTC, from the cost
//    ledger, running jobs billed up to now) plus what the user's queued, placed and running jobs
//    are still expected to cost (each one's estimate times the work left) plus this job's own
//    estimate (the cheapest option meeting its deadline: the placement quote, taken in
//    admit_spec, outside the transaction) exceeds the budget, the job is stored `held` with a
//    reason naming each figure to a hundredth of a cent (event "held", detail {"reason", and
//    the figures}) instead of being queued.
// Only jobs with an owner (submitted with a token) are checked.
//
// Ownership: borrows the SpendSource (may be null: no budget checks). Thread safety: admit() is
// called on the store's writer thread; spend lookups are cached (SpendSource implementations
// must be thread-safe).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "base/clock.h"
#include "base/expected.h"
#include "daemon/auth/auth_options.h"
#include "daemon/jobs/submit_admission.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::auth {

// Where a user's spend comes from (the cost ledger: auth_budget_ledger.h).
class SpendSource {
 public:
  virtual ~SpendSource() = default;
  // USD the user has spent in [from_ms, to_ms).
  virtual Expected<double> spend_usd(const std::string& user, int64_t from_ms, int64_t to_ms) = 0;
};

class UserLimitsAdmission final : public jobs::SubmitAdmission {
 public:
  UserLimitsAdmission(LimitsOptions limits, const Clock& clock, SpendSource* spend)
      : limits_(std::move(limits)), clock_(clock), spend_(spend) {}

  // A command job runs the submitter's own program on the workers: only a token allowed to
  // (SubmitContext::may_submit_commands: an admin's, or one granted "commands") may submit one.
  // With a budget for the submitter, also notes the job's estimated cost in the context.
  Status admit_spec(const train::JobSpec& spec, jobs::SubmitContext& context) override;
  Status admit(store::WriteTxn& txn, store::JobRow& row, const jobs::SubmitContext& context) override;

  // The budget of a user this month (0: none).
  double budget_of(const std::string& user) const;

  // What a job is estimated to cost: the chosen option's estimated cost of the placement quote
  // for its spec (0 when nothing can run it). Set before serving (main wires placement's quote);
  // none: a job's own estimate counts 0. Must be safe from any thread.
  using JobEstimate = std::function<Expected<double>(const train::JobSpec& spec)>;
  void set_job_estimate(JobEstimate estimate) { estimate_ = std::move(estimate); }

 private:
  LimitsOptions limits_;
  const Clock& clock_;
  SpendSource* spend_;
  JobEstimate estimate_;
};

// A figure of a budget: USD to a hundredth of a cent ("$0.0500").
std::string budget_usd(double usd);

// Milliseconds since the epoch of the first instant of now_ms's calendar month (UTC).
int64_t month_start_ms(int64_t now_ms);

}  // namespace jobctl::daemon::auth
