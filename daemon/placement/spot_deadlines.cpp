#include "daemon/placement/spot_deadlines.h"

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/jobs/job_transition.h"
#include "daemon/placement/job_progress.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::placement {

using nlohmann::json;

namespace {

constexpr double kHourMs = 3.6e6;

}  // namespace

SpotDeadlines::SpotDeadlines(store::Store& store, const Clock& clock, SpotDeadlineSettings settings,
                             jobs::JobService* mover)
    : store_(store), clock_(clock), settings_(std::move(settings)), mover_(mover) {}

scheduler::ProgressState SpotDeadlines::progress(int64_t created_ms, int64_t now_ms, double deadline_hours,
                                                 double total_hours, double done,
                                                 scheduler::Capacity current) const {
  scheduler::ProgressState s;
  s.elapsed_hours = static_cast<double>(now_ms - created_ms) / kHourMs;
  s.deadline_hours = deadline_hours;
  s.total_compute_hours = total_hours;
  s.done_compute_hours = total_hours * done;
  s.changeover_hours = settings_.changeover_hours;
  s.decision_period_hours = settings_.decision_period_s / 3600.0;
  s.current = current;
  s.spot_available = true;
  // A requeued job (current == none) holds no local slot: the policy weighs spot vs on-demand.
  s.local_available = false;
  return s;
}

scheduler::DeadlinePolicy& SpotDeadlines::policy_locked(int64_t job_id) {
  auto& policy = policies_[job_id];
  if (!policy) policy = scheduler::make_deadline_policy(settings_.policy);
  return *policy;
}

scheduler::Capacity SpotDeadlines::at_placement(int64_t job_id, const scheduler::ProgressState& state) {
  if (job_id == 0) return scheduler::make_deadline_policy(settings_.policy)->decide(state);
  MutexLock lock(mu_);
  return policy_locked(job_id).decide(state);
}

Status SpotDeadlines::check_running(const SpotLaunchable& spot_launchable) {
  auto leases = store_.lease_summaries();
  if (!leases) return leases.error();
  if (mover_)
    for (auto& l : *leases) mover_->add_newest_heartbeat(l);
  const int64_t now = clock_.now_ms();
  // Only running jobs on spot, or on demand when they may go back (the lease's chosen candidate
  // says which), need their row read.
  const bool back_to_spot = spot_launchable && mover_;
  std::vector<std::pair<int64_t, bool>> to_check;  // (job, runs on spot)
  {
    MutexLock lock(mu_);
    for (const auto& l : *leases) {
      if (!l.chosen || !l.progress_json) continue;
      const store::OptionKind option = l.chosen->option;
      if (option == store::OptionKind::spot && !flagged_.count(l.job_id)) to_check.emplace_back(l.job_id, true);
      if (option == store::OptionKind::on_demand && back_to_spot) to_check.emplace_back(l.job_id, false);
    }
  }
  Status result;
  auto keep_first = [&result](int64_t id, const Error& e) {
    if (result) result = make_error(e.code, "job " + std::to_string(id) + ": " + e.message);
  };
  for (const auto& checked : to_check) {
    const int64_t id = checked.first;  // a plain variable: lambdas below capture it
    const bool on_spot = checked.second;
    auto row = store_.get_job(id);
    if (!row) {
      keep_first(id, row.error());
      continue;
    }
    if (!*row || (*row)->state != store::JobState::running || !(*row)->placement_json) continue;
    if (mover_) mover_->add_newest_heartbeat(**row);
    auto decoded = store::decode_placement_document(*(*row)->placement_json, "job " + std::to_string(id));
    if (!decoded) {
      keep_first(id, decoded.error());
      continue;
    }
    const json& p = *decoded;
    if (!p["chosen"].is_object() ||
        p["chosen"].value("option", "") != (on_spot ? "spot" : "on_demand"))
      continue;
    const train::JobSpec* spec = (*row)->spec.get();
    if (!spec || !spec->placement.deadline_hours) continue;
    // An on-demand job goes back to spot only where its spec lets it, and once per request.
    if (!on_spot && (spec->placement.spot == train::SpotMode::never || mover_->move_requested(id))) continue;
    auto progressed = done_fraction((*row)->progress_json, id);
    if (!progressed) {
      keep_first(id, progressed.error());
      continue;
    }
    const double done = *progressed;
    // The job's compute as the policy was told it at placement (the fastest on-demand option's);
    // the chosen option's own estimate is a spot one's, interruptions included.
    double total = 0;
    if (p["deadline_policy"].is_object()) total = p["deadline_policy"].value("total_compute_hours", 0.0);
    if (total <= 0)
      total = p["chosen"].value("estimated_hours", 0.0) / std::max(p.value("remaining_fraction", 1.0), 0.001);
    scheduler::ProgressState s = progress((*row)->created_ms, now, *spec->placement.deadline_hours, total, done,
                                          on_spot ? scheduler::Capacity::spot : scheduler::Capacity::on_demand);
    if (!on_spot) s.spot_available = spot_launchable(**row, *spec, done);
    // A spot job leaves spot when the policy says on-demand; an on-demand job leaves on-demand when
    // it says anything else: spot (it can be launched now) or none (wait, queued, until it can).
    scheduler::Capacity decided = scheduler::Capacity::none;
    {
      MutexLock lock(mu_);
      if (on_spot && flagged_.count(id)) continue;
      decided = policy_locked(id).decide(s);
    }
    if (on_spot ? decided != scheduler::Capacity::on_demand : decided == scheduler::Capacity::on_demand) continue;
    const std::string to(scheduler::to_string(decided));
    const std::string action = !mover_ ? "the job moves to on-demand at its next interruption"
                               : decided == scheduler::Capacity::none
                                   ? "the job stops on demand and waits, queued, for spot capacity"
                                   : "the job moves to " + to + " now";
    const json detail = {{"policy", settings_.policy},
                         {"decision", to},
                         {"remaining_compute_hours", s.remaining_compute()},
                         {"remaining_hours", s.remaining_time()},
                         {"action", action}};
    Status st = store_.write([id, detail, now](store::WriteTxn& txn) {
      return jobs::note_job_event(txn, id, "deadline_policy", detail, now);
    });
    if (st && mover_) {
      char why[200];
      std::snprintf(why, sizeof why, "deadline policy %s: %.2f h of compute left, %.2f h to the deadline%s",
                    settings_.policy.c_str(), s.remaining_compute(), s.remaining_time(),
                    on_spot                                  ? ""
                    : decided == scheduler::Capacity::spot ? "; spot can be launched again and the job is ahead of its deadline"
                                                             : "; the job is ahead of its deadline: it waits for spot");
      auto moved = mover_->request_move(
          id, jobs::MoveRequest{on_spot ? jobs::MoveTarget::on_demand : jobs::MoveTarget::spot, why});
      // A job that ended or lost its lease meanwhile has nothing to move.
      if (!moved && moved.error().code != ErrorCode::conflict) st = moved.error();
    }
    if (!st) {
      keep_first(id, st.error());
      continue;  // not flagged: the next check writes it
    }
    if (!on_spot) continue;
    MutexLock lock(mu_);
    flagged_.insert(id);
  }
  return result;
}

}  // namespace jobctl::daemon::placement
