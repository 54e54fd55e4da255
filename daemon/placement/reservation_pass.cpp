#include "daemon/placement/reservation_pass.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/utc_time.h"
#include "daemon/jobs/fair_share_place.h"
#include "daemon/jobs/job_transition.h"
#include "daemon/placement/job_progress.h"
#include "daemon/placement/placement_matcher.h"
#include "scheduler/fair_share.h"
#include "scheduler/job_queue.h"

namespace jobctl::daemon::placement {

using nlohmann::json;

namespace {

constexpr const char* kReservedNote = "; reserved worker";

}  // namespace

Status ReservationPass::run() {
  const int64_t now = clock_.now_ms();
  // Read first: with no job waiting for an owned machine (most passes) nothing else is read.
  auto waiting = store_.placed_waiting_jobs();
  if (!waiting) return waiting.error();
  std::erase_if(*waiting, [](const store::QueuedJobRow& q) { return q.placement_option != store::OptionKind::local; });
  if (waiting->empty()) {
    board_.publish({}, {});
    if (fair_share_) jobs_.publish_fair_share_places(nullptr);
    noted_.clear();
    return {};
  }
  auto workers = store_.list_workers();
  if (!workers) return workers.error();
  auto leases = store_.lease_summaries();
  if (!leases) return leases.error();
  for (auto& l : *leases) jobs_.add_newest_heartbeat(l);
  auto held = held_gpu_ends(*leases, now);
  if (!held) return held.error();

  // Local workers only: a cloud instance or a Slurm node is no owned machine jobs wait for here.
  std::vector<scheduler::PlanMachine> machines;
  std::vector<const store::WorkerRow*> local;
  for (const auto& w : *workers) {
    if (w.state != store::WorkerState::active || w.capabilities.instance) continue;
    scheduler::PlanMachine m{w.id, std::max<int>(1, static_cast<int>(w.capabilities.gpus.size())), {}};
    if (auto it = held->find(w.id); it != held->end()) m.held_until = it->second;
    machines.push_back(std::move(m));
    local.push_back(&w);
  }
  std::sort(waiting->begin(), waiting->end(), [](const store::QueuedJobRow& a, const store::QueuedJobRow& b) {
    return scheduler::queued_before({a.id, a.priority, a.created_ms}, {b.id, b.priority, b.created_ms});
  });
  // With fair share: the jobs as the order saw them, their places (0 first) and owners.
  std::vector<scheduler::OrderedJob> ordered;
  std::map<int64_t, size_t> place;
  std::map<int64_t, std::string> owners;
  std::shared_ptr<jobs::FairSharePlaces> places;  // with fair share: every waiting job's place
  int max_gpus = 1;
  if (fair_share_) {
    auto owned = store_.owned_open_jobs();
    if (!owned) return owned.error();
    std::set<std::string> users;
    for (auto& o : *owned) {
      users.insert(o.owner);
      owners.emplace(o.id, std::move(o.owner));
    }
    auto factors = fair_share_->factors(now, {users.begin(), users.end()});
    if (!factors) return factors.error();
    ordered.reserve(waiting->size());
    for (const auto& q : *waiting) {
      auto owner = owners.find(q.id);
      auto f = owner == owners.end() ? factors->end() : factors->find(owner->second);
      ordered.push_back({q.id, q.priority, q.created_ms, std::max(q.resource_gpus, 1) * std::max(q.nodes, 1),
                         f == factors->end() ? 1.0 : f->second.factor});
    }
    const auto& weights = fair_share_->settings().weights;
    const std::vector<int64_t> order = scheduler::fair_share_order(ordered, now, weights);
    for (size_t i = 0; i < order.size(); ++i) place[order[i]] = i;
    for (const auto& o : ordered) max_gpus = std::max(max_gpus, o.gpus);
    // Every waiting job's place, for its wait reason (jobs/fair_share_place.h): published once
    // per pass, so that a request reads it instead of ordering the queue again.
    places = std::make_shared<jobs::FairSharePlaces>();
    for (const auto& o : ordered) {
      auto owner = owners.find(o.id);
      (*places)[o.id] = jobs::FairSharePlace{static_cast<int>(place[o.id] + 1), static_cast<int>(ordered.size()),
                                             owner == owners.end() ? std::string() : owner->second,
                                             o.fair_share_factor, o.priority,
                                             scheduler::order_score(o, now, max_gpus, weights)};
    }
    jobs_.publish_fair_share_places(places);
    std::sort(waiting->begin(), waiting->end(), [&place](const store::QueuedJobRow& a, const store::QueuedJobRow& b) {
      return place.at(a.id) < place.at(b.id);
    });
  }
  std::vector<scheduler::PlanJob> queue;
  queue.reserve(waiting->size());
  for (const auto& q : *waiting) {
    scheduler::PlanJob job{q.id, std::max(q.resource_gpus, 1), q.placement_estimated_hours, {}, std::max(q.nodes, 1)};
    for (const store::WorkerRow* w : local)
      if (placement_allows(q, w->capabilities)) job.machines.push_back(w->id);
    queue.push_back(std::move(job));
  }
  scheduler::StartPlan plan = scheduler::plan_starts(machines, queue, now, max_reservations_);
  const std::vector<scheduler::Reservation> reservations = plan.reservations;
  // Why each reserved job is where it is: its place in the fair-share order and its score's figures.
  order_notes_.clear();
  if (places)
    for (const auto& r : reservations)
      if (auto p = places->find(r.job_id); p != places->end())
        order_notes_[r.job_id] = "; " + jobs::fair_share_note(p->second);
  if (auto st = note_overruns(*leases, plan.holds, now); !st) return st;
  board_.publish(std::move(plan), machines);
  std::map<int64_t, scheduler::Reservation> noted;
  for (const auto& r : reservations) {
    auto before = noted_.find(r.job_id);
    const bool same = before != noted_.end() && before->second.machine_ids == r.machine_ids &&
                      std::abs(before->second.start_ms - r.start_ms) < kStartToleranceMs;
    if (same) {
      noted.emplace(r.job_id, before->second);
      continue;
    }
    std::map<int64_t, std::string> worker_names;
    for (const store::WorkerRow* w : local)
      if (r.holds(w->id)) worker_names[w->id] = w->name;
    if (auto st = note_reservation(r, worker_names, now); !st) {
      noted_ = std::move(noted);
      return st;
    }
    noted.emplace(r.job_id, r);
  }
  noted_ = std::move(noted);
  return {};
}

Status ReservationPass::note_overruns(const std::vector<store::LeaseSummary>& leases,
                                      const std::vector<scheduler::Reservation>& holds, int64_t now_ms) {
  std::set<int64_t> still;
  for (const auto& l : leases) {
    if (!l.chosen || l.leased_ms <= 0) continue;
    auto end = expected_end_ms(l, now_ms);
    if (!end) return end.error();
    if (*end >= now_ms) continue;
    // Past its estimate on a worker a waiting job is planned on: those jobs wait for it.
    std::vector<int64_t> waiting;
    for (const auto& h : holds)
      if (h.holds(l.worker_id)) waiting.push_back(h.job_id);
    if (waiting.empty()) continue;
    still.insert(l.job_id);
    if (overruns_noted_.count(l.job_id)) continue;
    std::string names;
    for (int64_t id : waiting) names += (names.empty() ? "job " : ", job ") + std::to_string(id);
    const json detail = {
        {"worker_id", l.worker_id},
        {"estimated_end_ms", *end},
        {"waiting_jobs", waiting},
        {"reason", "running past its estimate (expected to end by " + format_utc(*end, UtcStyle::rfc3339) + "); " +
                       names + " planned on worker " + std::to_string(l.worker_id) +
                       " wait for it to end (it is not stopped)"}};
    auto st = store_.write([&](store::WriteTxn& txn) -> Status {
      return jobs::note_job_event(txn, l.job_id, "overrun", detail, now_ms);
    });
    if (!st) return st;
    overruns_noted_.insert(l.job_id);
  }
  // A job noted once is noted again only after a new lease has overrun anew.
  std::erase_if(overruns_noted_, [&still](int64_t id) { return !still.count(id); });
  return {};
}

Status ReservationPass::note_reservation(const scheduler::Reservation& r,
                                         const std::map<int64_t, std::string>& worker_names, int64_t now_ms) {
  auto named = [&worker_names](int64_t id) {
    auto it = worker_names.find(id);
    return std::to_string(id) + (it == worker_names.end() || it->second.empty() ? "" : " (" + it->second + ")");
  };
  const std::vector<int64_t> machines = r.machine_ids.empty() ? std::vector<int64_t>{r.machine_id} : r.machine_ids;
  std::string held;
  for (int64_t id : machines) held += (held.empty() ? "" : ", ") + named(id);
  const auto first_name = worker_names.find(r.machine_id);
  const std::string worker_name = first_name == worker_names.end() ? "" : first_name->second;
  return store_.write([&](store::WriteTxn& txn) -> Status {
    auto cur = txn.job(r.job_id);
    if (!cur) return cur.error();
    // Leased or gone meanwhile: the next pass plans without it.
    if (!*cur || !(*cur)->awaiting_lease() || !(*cur)->placement_json || !(*cur)->chosen) return {};
    store::JobRow job = std::move(**cur);
    auto doc = store::decode_placement_document(*job.placement_json, "job " + std::to_string(job.id));
    if (!doc) return doc.error();
    const double wait_hours = static_cast<double>(std::max<int64_t>(0, r.start_ms - now_ms)) / 3.6e6;
    const std::string start = format_utc(r.start_ms, UtcStyle::rfc3339);
    // The reason as placement gave it, without an earlier reservation's note.
    std::string reason = (*doc).value("reason", "");
    if (const size_t at = reason.find(kReservedNote); at != std::string::npos) reason.resize(at);
    reason += kReservedNote + std::string(machines.size() > 1 ? "s " : " ") + held + ", " + std::to_string(r.gpus) +
              " GPU" + (r.gpus == 1 ? "" : "s") + (machines.size() > 1 ? " each" : "") + ", to start by " + start +
              " (when the jobs running there are expected to end; other jobs use its GPUs only if they end "
              "by then)";
    if (auto note = order_notes_.find(r.job_id); note != order_notes_.end()) reason += note->second;
    json& chosen = (*doc)["chosen"];
    const double hours = job.chosen->estimated_hours;
    bool meets = job.chosen->meets_deadline;
    if (const json& left = (*doc)["deadline_left_hours"]; left.is_number()) {
      const int64_t decided = (*doc).value("decided_ms", now_ms);
      const double deadline_ms = static_cast<double>(decided) + left.get<double>() * 3.6e6;
      meets = static_cast<double>(r.start_ms) + hours * 3.6e6 <= deadline_ms;
    }
    for (json* row : {&chosen, &job.chosen->row}) {
      if (!row->is_object()) continue;
      (*row)["queue_wait_hours"] = wait_hours;
      (*row)["meets_deadline"] = meets;
    }
    job.chosen->queue_wait_hours = wait_hours;
    job.chosen->meets_deadline = meets;
    json detail = {{"worker_id", r.machine_id}, {"worker", worker_name}, {"gpus", r.gpus},
                   {"start_ms", r.start_ms}, {"start", start},       {"meets_deadline", meets}};
    if (machines.size() > 1) detail["worker_ids"] = machines;
    (*doc)["reservation"] = detail;
    (*doc)["reason"] = reason;
    auto text = store::deflate_text(doc->dump());
    if (!text) return text.error();
    if (auto st = txn.put_placement(job.id, *text); !st) return st;
    job.updated_ms = now_ms;
    if (auto st = txn.update_job(job); !st) return st;
    json event = detail;
    event["reason"] = reason;
    return jobs::note_job_event(txn, job.id, "reserved", event, now_ms);
  });
}

}  // namespace jobctl::daemon::placement
