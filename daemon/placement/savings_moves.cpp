#include "daemon/placement/savings_moves.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/placement/job_progress.h"
#include "scheduler/job.h"
#include "train/spec/job_spec.h"
#include "train/spec/model_stats.h"

namespace jobctl::daemon::placement {

using nlohmann::json;

namespace {

constexpr int64_t kRateWindowMs = 3'600'000;  // max_moves_per_hour counts this window

bool on_cloud(const json& chosen) {
  const std::string option = chosen.value("option", "");
  return option == "on_demand" || option == "spot";
}

}  // namespace

bool SavingsMoves::under_rate_limit(int64_t job_id, int64_t now_ms) {
  auto& times = moves_ms_[job_id];
  while (!times.empty() && times.front() <= now_ms - kRateWindowMs) times.pop_front();
  return static_cast<int>(times.size()) < settings_.max_moves_per_hour;
}

Expected<int> SavingsMoves::check() {
  if (settings_.max_moves_per_hour == 0) return 0;
  auto leases = store_.lease_summaries();
  if (!leases) return leases.error();
  std::vector<int64_t> cloud_jobs;
  std::set<int64_t> leased;
  for (const auto& l : *leases) {
    leased.insert(l.job_id);
    if (!l.chosen_json || !l.progress_json) continue;  // not started yet: nothing to save by moving
    const json chosen = json::parse(*l.chosen_json, nullptr, false);
    if (chosen.is_object() && on_cloud(chosen)) cloud_jobs.push_back(l.job_id);
  }
  std::erase_if(moves_ms_, [&leased](const auto& e) { return !leased.count(e.first) && e.second.empty(); });
  if (cloud_jobs.empty()) return 0;
  auto capacity = passes_.local_capacity();
  if (!capacity) return capacity.error();
  const auto ctx = passes_.context(nullptr);
  const int64_t now = clock_.now_ms();

  int asked = 0;
  Status result;
  auto keep_first = [&result](int64_t id, const Error& e) {
    if (result) result = make_error(e.code, "job " + std::to_string(id) + ": " + e.message, e.field);
  };
  for (int64_t id : cloud_jobs) {
    if (!under_rate_limit(id, now) || jobs_.move_requested(id)) continue;
    auto row = store_.get_job(id);
    if (!row) {
      keep_first(id, row.error());
      continue;
    }
    if (!*row || (*row)->state != store::JobState::running || !(*row)->placement_json) continue;
    const json doc = json::parse(*(*row)->placement_json, nullptr, false);
    if (!doc.is_object() || !doc["chosen"].is_object() || !on_cloud(doc["chosen"])) continue;
    auto spec = train::parse_job_spec((*row)->spec_json);
    // A job its owner sent to the cloud (placement.mode cloud) stays there.
    if (!spec || spec->placement.mode == train::PlacementMode::cloud) continue;

    const double done = done_fraction((*row)->progress_json);
    const double remaining = std::max(1.0 - done, 0.001);
    scheduler::Job job = scheduler::job_from_spec(std::to_string(id), *spec, train::model_stats(*spec),
                                                  (*row)->created_ms);
    job.workload.training_flops *= remaining;
    job.mode = train::PlacementMode::local;
    const scheduler::PlacementDecision d = scheduler::place(job, *ctx, *capacity, now, nullptr);
    if (d.outcome != scheduler::Outcome::run_local) continue;  // no idle owned worker fits it now

    const json& chosen = doc["chosen"];
    const double current_usd_per_hour = chosen.value("usd_per_hour", 0.0);
    const double remaining_at_placement = std::max(doc.value("remaining_fraction", 1.0), 0.001);
    const double current_hours = chosen.value("estimated_hours", 0.0) * remaining / remaining_at_placement;
    const double current_cost = current_usd_per_hour * current_hours;
    const double local_cost = d.choice.estimated_cost_usd;
    // Checkpoint and restart; nothing to provision: the owned worker is up.
    const double move_hours = ctx->checkpoint_hours(job.workload.checkpoint_bytes) +
                              ctx->restart_hours(job.workload.checkpoint_bytes) - ctx->config().provision_hours;
    const double move_cost = move_hours * (current_usd_per_hour + d.choice.usd_per_hour);
    const double saving = current_cost - local_cost;
    if (!(saving > settings_.move_margin * move_cost) || saving <= 0) continue;

    char why[256];
    std::snprintf(why, sizeof why,
                  "savings: an owned worker runs the remaining %.0f%% for $%.4f instead of $%.4f on %s; "
                  "the move costs $%.4f (x%.2f margin)",
                  100 * remaining, local_cost, current_cost, chosen.value("option", "").c_str(), move_cost,
                  settings_.move_margin);
    const jobs::MoveRequest request{jobs::MoveTarget::local, why,
                                    {{"remaining_here_usd", current_cost},
                                     {"remaining_there_usd", local_cost},
                                     {"saving_usd", saving},
                                     {"move_cost_usd", move_cost}}};
    auto moved = jobs_.request_move(id, request);
    if (!moved) {
      if (moved.error().code != ErrorCode::conflict) keep_first(id, moved.error());  // conflict: it ended meanwhile
      continue;
    }
    moves_ms_[id].push_back(now);
    ++asked;
    // The worker it would go to is taken by this job now (one move per idle worker per pass).
    break;
  }
  if (!result) return result.error();
  return asked;
}

}  // namespace jobctl::daemon::placement
