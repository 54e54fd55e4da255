// Housekeeping::mark_silent_workers_lost and unplace_unclaimed (docs/recovery.md, "A worker goes
// silent"): a worker that stops asking is taken out of placement, and a job placed on a pool that
// nobody takes is placed again. Separate from housekeeping.cpp, as lease_expiry.cpp is.
#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "cost/cpu_peak.h"
#include "daemon/jobs/housekeeping.h"

namespace jobctl::daemon::jobs {

using nlohmann::json;
using store::WriteTxn;

Expected<int> Housekeeping::mark_silent_workers_lost() {
  const int64_t steady = clock_.steady_ms();
  const int64_t silence_ms = int64_t{options_.lease_timeout_s} * 1000;
  std::set<int64_t> waiting;  // a worker in a long-poll is alive, however long the poll
  for (int64_t id : broker_.waiting_worker_ids()) waiting.insert(id);
  // Judged by what jobctld heard (worker_contacts.h), on the steady clock: every heartbeat, lease
  // request and registration, or jobctld's start for a worker not heard from since.
  const WorkerContacts& contacts = broker_.contacts();
  auto heard_within = [&](int64_t id) { return waiting.count(id) || contacts.silence_ms(id, steady) <= silence_ms; };
  auto workers = store_.list_workers();
  if (!workers) return workers.error();
  std::vector<int64_t> silent, back;
  for (const auto& w : *workers) {
    if (w.state == store::WorkerState::active && !heard_within(w.id)) silent.push_back(w.id);
    // Marked lost (its lease expired, or silent before) and heard from since: active again.
    if (w.state == store::WorkerState::lost && contacts.last(w.id) && heard_within(w.id)) back.push_back(w.id);
  }
  if (silent.empty() && back.empty()) return 0;
  return store_.write_value<int>([this, silent, back](WriteTxn& txn) -> Expected<int> {
    int lost = 0;
    auto set_state = [&](int64_t id, store::WorkerState from, store::WorkerState to) -> Expected<bool> {
      auto w = txn.worker(id);
      if (!w) return w.error();
      if (!*w || (*w)->state != from) return false;
      (*w)->state = to;
      if (to == store::WorkerState::active)
        if (auto c = broker_.contacts().last(id)) (*w)->last_seen_ms = std::max((*w)->last_seen_ms, c->wall_ms);
      if (auto st = txn.update_worker(**w); !st) return st.error();
      return true;
    };
    for (int64_t id : silent) {
      auto changed = set_state(id, store::WorkerState::active, store::WorkerState::lost);
      if (!changed) return changed.error();
      lost += *changed ? 1 : 0;
    }
    for (int64_t id : back) {
      auto changed = set_state(id, store::WorkerState::lost, store::WorkerState::active);
      if (!changed) return changed.error();
      if (*changed) txn.on_commit([this, id] { broker_.worker_back(id); });
    }
    return lost;
  });
}

Expected<int> Housekeeping::unplace_unclaimed() {
  const int64_t now = clock_.now_ms();
  const int64_t bound_ms = int64_t{options_.lease_timeout_s} * 1000;
  auto placed = store_.placed_waiting_jobs();
  if (!placed) return placed.error();
  int unplaced = 0;
  for (const auto& q : *placed) {
    // A Slurm placement waits in Slurm's queue, which the launcher watches. A cloud placement's
    // expected wait is its instance's boot (the provisioner unplaces those it cannot launch); one
    // whose instance booted but whose worker never took it is placed again like a local one.
    if (q.placement_option != store::OptionKind::local && q.placement_option != store::OptionKind::on_demand &&
        q.placement_option != store::OptionKind::spot)
      continue;
    auto row = store_.get_job(q.id);
    if (!row) return row.error();
    if (!*row || !(*row)->chosen) continue;
    const store::PlacementChoice& chosen = *(*row)->chosen;
    // The wait placement expected (a busy pool) is not a failure to claim it; the bound comes after.
    const double expected_wait_h = chosen.queue_wait_hours;
    // A gang is claimed only when all its nodes' workers ask at once: it may keep idle workers
    // for a period, then let them go for as long (lease_broker.h), before that is a failure.
    const int64_t gang_ms = q.nodes > 1 ? int64_t{options_.gang_assembly_s} * 2000 : 0;
    const int64_t due =
        (*row)->updated_ms + bound_ms + gang_ms + static_cast<int64_t>(std::max(expected_wait_h, 0.0) * 3.6e6);
    if (now < due) continue;
    const std::string pool = cost::device_label(chosen.gpu, chosen.gpus);
    const std::string where = q.placement_option == store::OptionKind::local
                                  ? "of the local pool " + pool
                                  : "of a " + q.placement_instance_type +
                                        (q.placement_option == store::OptionKind::spot ? " spot" : " on-demand") + " instance";
    const std::string reason = "no worker " + where + " took it within " +
                               std::to_string((now - (*row)->updated_ms) / 1000) + " s (bound: the lease timeout, " +
                               std::to_string(options_.lease_timeout_s) + " s, after the expected wait); placing it again";
    auto done = commands_.unplace(q.id, reason);
    if (!done) return done.error();
    unplaced += *done ? 1 : 0;
  }
  return unplaced;
}

}  // namespace jobctl::daemon::jobs
