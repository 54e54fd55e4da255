#include "daemon/auth/auth_budget_watch.h"

#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/jobs/job_transition.h"

namespace jobctl::daemon::auth {

using nlohmann::json;

Expected<int> BudgetWatch::check() {
  auto open = store_.owned_open_jobs();
  if (!open) return open.error();
  std::map<std::string, std::vector<store::OwnedJob>> by_owner;
  for (auto& j : *open) by_owner[j.owner].push_back(std::move(j));
  const int64_t now = clock_.now_ms();
  const int64_t month = month_start_ms(now);
  int over = 0;
  Status result;
  auto keep = [&result](const Status& st) {
    if (!st && result) result = st;
  };
  for (const auto& entry : by_owner) {
    // Not a structured binding: a lambda below captures the list (C++20 lets it, clang 14 does not).
    const std::string& user = entry.first;
    const auto& owned = entry.second;
    const double budget = budgets_.budget_of(user);
    if (budget <= 0) continue;
    auto spent = spend_.spend_usd(user, month, now);
    if (!spent) {
      keep(spent.error());
      continue;
    }
    if (*spent <= budget) continue;
    ++over;
    const std::string reason = "monthly budget of user " + user + " exceeded while jobs ran: spent " +
                               budget_usd(*spent) + " this month > budget " + budget_usd(budget) +
                               " (limits.over_budget: " + policy_ + ")";
    const json detail = {{"reason", reason}, {"spent_usd", *spent}, {"budget_usd", budget}, {"policy", policy_}};
    if (auto it = noted_.find(user); it == noted_.end() || it->second != month) {
      keep(store_.write([&owned, &detail, now](store::WriteTxn& txn) -> Status {
        for (const auto& j : owned)
          if (auto st = jobs::note_job_event(txn, j.id, "over_budget", detail, now); !st) return st;
        return {};
      }));
      noted_[user] = month;
    }
    for (const auto& j : owned) {
      if (j.state == jobs::JobState::running || (j.state == jobs::JobState::placed && j.leased)) {
        if (policy_ != "stop" || jobs_.move_requested(j.id)) continue;
        jobs::MoveRequest move(jobs::MoveTarget::anywhere, reason);
        move.hold = true;
        auto asked = jobs_.request_move(j.id, move);
        if (!asked && asked.error().code != ErrorCode::conflict) keep(asked.error());
      } else {
        auto held = jobs_.hold_waiting(j.id, detail);
        if (!held) keep(held.error());
      }
    }
  }
  if (!result) return result.error();
  return over;
}

}  // namespace jobctl::daemon::auth
