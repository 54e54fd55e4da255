#include "daemon/placement/savings_moves.h"

#include "base/fixed_decimal.h"
#include "base/readable.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/placement/job_progress.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::placement {

using nlohmann::json;

namespace {

constexpr int64_t kRateWindowMs = 3'600'000;  // max_moves_per_hour counts this window

// A place the job could go, and what going there saves and costs.
struct Move {
  jobs::MoveTarget target = jobs::MoveTarget::anywhere;
  std::string option;       // scheduler::option_label of the target
  double there_cost = 0;    // the remaining work there, running time only
  double move_cost = 0;     // (checkpoint + restart hours) x (price here + price there)
  double saving = 0;        // the remaining work here - there_cost
};

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
  for (auto& l : *leases) jobs_.add_newest_heartbeat(l);
  std::vector<int64_t> cloud_jobs;
  std::set<int64_t> leased;
  for (const auto& l : *leases) {
    leased.insert(l.job_id);
    if (!l.chosen || !l.progress_json) continue;  // not started yet: nothing to save by moving
    if (l.chosen->on_cloud()) cloud_jobs.push_back(l.job_id);
  }
  std::erase_if(moves_ms_, [&leased](const auto& e) { return !leased.count(e.first) && e.second.empty(); });
  if (cloud_jobs.empty()) return 0;
  auto capacity = passes_.local_capacity();
  if (!capacity) return capacity.error();
  const auto ctx = passes_.context(nullptr);
  const int64_t now = clock_.now_ms();

  int asked = 0;
  bool owned_taken = false;  // one move to an owned worker per pass: the idle worker it takes is spoken for
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
    jobs_.add_newest_heartbeat(**row);
    auto decoded = store::decode_placement_document(*(*row)->placement_json, "job " + std::to_string(id));
    if (!decoded) {
      keep_first(id, decoded.error());
      continue;
    }
    const json& doc = *decoded;
    if (!doc["chosen"].is_object() || !on_cloud(doc["chosen"])) continue;
    const train::JobSpec* spec = (*row)->spec.get();
    if (!spec) continue;

    const json& chosen = doc["chosen"];
    auto done = done_fraction((*row)->progress_json, id);
    if (!done) {
      keep_first(id, done.error());
      continue;
    }
    const double remaining = std::max(1.0 - *done, 0.001);
    const double here_usd_per_hour = chosen.value("usd_per_hour", 0.0);
    const double remaining_at_placement = std::max(doc.value("remaining_fraction", 1.0), 0.001);
    const double here_cost =
        here_usd_per_hour * chosen.value("estimated_hours", 0.0) * remaining / remaining_at_placement;

    // The candidates: an idle owned worker (not for a job its owner sent to the cloud), and the
    // cheapest cloud option now (not spot for a job with a deadline: its deadline policy decides
    // that, spot_deadlines.h).
    std::optional<Move> best;
    auto consider = [&](jobs::MoveTarget target) {
      scheduler::Job job = remaining_work(**row, *spec, *done, target);
      if (target == jobs::MoveTarget::anywhere) {
        job.mode = train::PlacementMode::cloud;
        if (job.deadline_hours) job.spot = train::SpotMode::never;
      }
      const scheduler::PlacementDecision d = scheduler::place(job, *ctx, *capacity, now, nullptr);
      Move m;
      switch (d.outcome) {
        case scheduler::Outcome::run_local: m.target = jobs::MoveTarget::local; break;
        case scheduler::Outcome::launch_on_demand: m.target = jobs::MoveTarget::on_demand; break;
        case scheduler::Outcome::launch_spot: m.target = jobs::MoveTarget::spot; break;
        default: return;  // nothing idle fits it now
      }
      m.option = scheduler::option_label(d.choice, *ctx, *capacity);
      if (m.target != jobs::MoveTarget::local) {
        const cost::Offer& offer = ctx->offers()[d.choice.source];
        if (jobs::to_string(m.target) == chosen.value("option", "") &&
            offer.instance_type == chosen.value("instance_type", "") && offer.region == chosen.value("region", ""))
          return;  // where it runs now
      }
      m.there_cost = d.choice.usd_per_hour * d.choice.estimated_hours;
      // Checkpoint, then restart there (an owned worker is up: nothing to provision).
      double move_hours = ctx->checkpoint_hours(job.workload.checkpoint_bytes) +
                          ctx->restart_hours(job.workload.checkpoint_bytes);
      if (m.target == jobs::MoveTarget::local) move_hours -= ctx->config().provision_hours;
      m.move_cost = move_hours * (here_usd_per_hour + d.choice.usd_per_hour);
      m.saving = here_cost - m.there_cost;
      if (!(m.saving > settings_.move_margin * m.move_cost) || m.saving <= 0) return;
      if (!best || m.saving - m.move_cost > best->saving - best->move_cost) best = m;
    };
    // A job its owner sent to the cloud (placement.mode cloud) stays there.
    if (!owned_taken && spec->placement.mode != train::PlacementMode::cloud) consider(jobs::MoveTarget::local);
    consider(jobs::MoveTarget::anywhere);
    if (!best) continue;

    // Money as people read it (base/readable.h): sub-cent amounts keep two significant digits.
    const std::string why =
        std::string("savings: ") + (best->target == jobs::MoveTarget::local ? "an owned worker" : "a cheaper cloud offer") +
        " runs the remaining " + fixed_decimal(100 * remaining, 0) + "% for " + readable::usd(best->there_cost) +
        " instead of " + readable::usd(here_cost) + " on " + chosen.value("option", "") + " (" + best->option +
        "); the move costs " + readable::usd(best->move_cost) + " (x" + fixed_decimal(settings_.move_margin, 2) +
        " margin)";
    const jobs::MoveRequest request{best->target, why,
                                    {{"remaining_here_usd", here_cost},
                                     {"remaining_there_usd", best->there_cost},
                                     {"saving_usd", best->saving},
                                     {"move_cost_usd", best->move_cost}}};
    auto moved = jobs_.request_move(id, request);
    if (!moved) {
      if (moved.error().code != ErrorCode::conflict) keep_first(id, moved.error());  // conflict: it ended meanwhile
      continue;
    }
    moves_ms_[id].push_back(now);
    ++asked;
    owned_taken |= best->target == jobs::MoveTarget::local;
  }
  if (!result) return result.error();
  return asked;
}

}  // namespace jobctl::daemon::placement
