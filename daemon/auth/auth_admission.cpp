#include "daemon/auth/auth_admission.h"

#include <chrono>

#include <nlohmann/json.hpp>

#include "base/fixed_decimal.h"

namespace jobctl::daemon::auth {

using nlohmann::json;

int64_t month_start_ms(int64_t now_ms) {
  using namespace std::chrono;
  const sys_days day = floor<days>(sys_time<milliseconds>(milliseconds(now_ms)));
  const year_month_day ymd(day);
  const sys_days first = sys_days(ymd.year() / ymd.month() / 1);
  return duration_cast<milliseconds>(first.time_since_epoch()).count();
}

double UserLimitsAdmission::budget_of(const std::string& user) const {
  auto it = limits_.user_budgets_usd.find(user);
  return it != limits_.user_budgets_usd.end() ? it->second : limits_.monthly_budget_usd;
}

std::string budget_usd(double usd) { return "$" + fixed_decimal(usd, 4); }

Status UserLimitsAdmission::admit_spec(const train::JobSpec& spec, jobs::SubmitContext& context) {
  if (spec.is_command() && !context.may_submit_commands)
    return make_error(ErrorCode::permission_denied,
                      "this token may not submit command jobs (an admin grants the \"commands\" permission to a token)",
                      "command");
  if (context.owner.empty() || budget_of(context.owner) <= 0 || !estimate_) return {};
  auto estimate = estimate_(spec);
  if (!estimate) return estimate.error();
  context.estimated_cost_usd = *estimate;
  return {};
}

Status UserLimitsAdmission::admit(store::WriteTxn& txn, store::JobRow& row, const jobs::SubmitContext& context) {
  if (context.owner.empty()) return {};
  if (limits_.max_waiting_jobs_per_user > 0) {
    auto waiting = txn.count_waiting_jobs(context.owner);  // this job included
    if (!waiting) return waiting.error();
    if (*waiting > limits_.max_waiting_jobs_per_user)
      return make_error(ErrorCode::limit_exceeded,
                        "user " + context.owner + " already has " + std::to_string(*waiting - 1) +
                            " jobs waiting (queued or held); the limit is " +
                            std::to_string(limits_.max_waiting_jobs_per_user) +
                            " (limits.max_waiting_jobs_per_user)");
  }
  const double budget = budget_of(context.owner);
  if (budget <= 0 || spend_ == nullptr || row.state != jobs::JobState::queued) return {};
  const int64_t now = clock_.now_ms();
  auto spent = spend_->spend_usd(context.owner, month_start_ms(now), now);
  if (!spent) return spent.error();
  auto committed = txn.remaining_estimates_usd(context.owner, row.id);
  if (!committed) return committed.error();
  const double estimate = context.estimated_cost_usd;
  const double total = *spent + committed->first + estimate;
  if (total <= budget) return {};
  const std::string reason = "monthly budget of user " + context.owner + " would be exceeded: spent " +
                             budget_usd(*spent) + " this month + " + budget_usd(committed->first) +
                             " still estimated for " + std::to_string(committed->second) +
                             " queued or running job" + (committed->second == 1 ? "" : "s") +
                             " + this job's estimate " + budget_usd(estimate) + " = " + budget_usd(total) +
                             " > budget " + budget_usd(budget);
  store::JobEventRow ev;
  ev.job_id = row.id;
  ev.time_ms = now;
  ev.type = "held";
  ev.from_state = row.state;
  ev.to_state = jobs::JobState::held;
  ev.detail_json = json{{"reason", reason},
                         {"spent_usd", *spent},
                         {"committed_usd", committed->first},
                         {"estimate_usd", estimate},
                         {"budget_usd", budget}}
                        .dump();
  row.state = jobs::JobState::held;
  row.updated_ms = now;
  if (auto st = txn.update_job(row); !st) return st;
  if (auto seq = txn.append_event(ev); !seq) return seq.error();
  return {};
}

}  // namespace jobctl::daemon::auth
