#include "daemon/jobs/job_wait.h"

#include <algorithm>
#include <array>

#include "base/fixed_decimal.h"
#include "base/readable.h"
#include "daemon/jobs/job_dependencies.h"
#include "scheduler/job_queue.h"
#include "scheduler/option_kind.h"

namespace jobctl::daemon::jobs {

using nlohmann::json;

namespace {

constexpr double kHourMs = 3.6e6;

std::string text_of(const json& row, const char* key) {
  auto it = row.find(key);
  return it != row.end() && it->is_string() ? it->get<std::string>() : std::string();
}

double number_of(const json& row, const char* key) {
  auto it = row.find(key);
  return it != row.end() && it->is_number() ? it->get<double>() : -1;
}

const json* chosen_of(const json* placement) {
  if (placement == nullptr || !placement->is_object()) return nullptr;
  auto it = placement->find("chosen");
  return it != placement->end() && it->is_object() ? &*it : nullptr;
}

}  // namespace

bool is_waiting(const store::JobRow& job) {
  return job.state == store::JobState::queued || job.state == store::JobState::held || job.awaiting_lease();
}

std::string unplaceable_summary(const json& placement) {
  // The kinds a user can most directly act on first; the user's own choices (mode, spot) last.
  static constexpr std::array<std::string_view, 12> kOrder = {
      "no_commands", "no_containers", "too_few_machines", "memory", "too_few_gpus", "price_cap",  "unknown_gpu",
      "gpu_constraint", "no_provider", "no_spot_market", "spot_mode", "placement_mode"};
  std::map<std::string, std::vector<const json*>> by_kind;
  int considered = 0;
  if (auto it = placement.find("candidates"); it != placement.end() && it->is_array())
    for (const auto& c : *it) {
      ++considered;
      if (const std::string kind = text_of(c, "rejection"); !kind.empty()) by_kind[kind].push_back(&c);
    }
  if (considered == 0) return "no option can run it: no worker is registered and no cloud offer is usable";
  for (std::string_view kind : kOrder) {
    auto found = by_kind.find(std::string(kind));
    if (found == by_kind.end()) continue;
    const std::vector<const json*>& rows = found->second;
    std::string what;
    if (kind == "no_commands") {
      const bool local = std::any_of(rows.begin(), rows.end(), [](const json* c) { return text_of(*c, "option") == "local"; });
      what = local ? "no worker can run commands (start one with jobctl-worker --allow-commands)" : text_of(*rows.front(), "rejected");
    } else if (kind == "memory") {
      const json* largest = rows.front();
      for (const json* c : rows)
        if (number_of(*c, "gpu_memory_gib") > number_of(*largest, "gpu_memory_gib")) largest = c;
      const double have = number_of(*largest, "gpu_memory_gib");
      const double need = number_of(*largest, "memory_gib_per_gpu");
      what = have >= 0 && need >= 0 ? "needs " + fixed_decimal(need, 2) + " GiB per GPU, the largest has " + fixed_decimal(have, 1)
                                    : text_of(*largest, "rejected");
    } else if (kind == "too_few_gpus") {
      double most = 0;
      for (const json* c : rows) most = std::max(most, number_of(*c, "gpus"));
      const double need = number_of(*rows.front(), "job_gpus");
      what = need > 0 ? "needs " + fixed_decimal(need, 0) + " GPUs on one machine, the most any option has is " + fixed_decimal(most, 0)
                      : text_of(*rows.front(), "rejected");
    } else if (kind == "price_cap") {
      const json* cheapest = rows.front();
      for (const json* c : rows)
        if (number_of(*c, "usd_per_hour") < number_of(*cheapest, "usd_per_hour")) cheapest = c;
      what = "over the price cap: the cheapest fitting option, " + text_of(*cheapest, "label") + ", " +
             text_of(*cheapest, "rejected");
    } else {
      what = text_of(*rows.front(), "rejected");
      if (rows.size() == 1) what = text_of(*rows.front(), "label") + ": " + what;
    }
    return "no option can run it: " + what + " (" + std::to_string(rows.size()) + " of " + std::to_string(considered) +
           " options rejected for this)";
  }
  return text_of(placement, "reason");
}

std::string wait_reason(const store::JobRow& job, const json* placement, std::string_view held_reason) {
  if (job.state == store::JobState::held)
    return "held: " + (held_reason.empty() ? std::string("waiting on something other than capacity") : std::string(held_reason));
  const std::string outcome = placement ? text_of(*placement, "outcome") : std::string();
  if (job.state == store::JobState::queued) {
    if (outcome == "unplaceable") return unplaceable_summary(*placement);
    if (outcome == "wait_spot") return text_of(*placement, "reason");
    return "waiting for a decision: placement has not placed it yet, or a worker that fits it has not asked for work";
  }
  if (!job.awaiting_lease()) return "";
  const json* chosen = chosen_of(placement);
  const std::string label = chosen ? text_of(*chosen, "label") : std::string();
  const std::string where = label.empty() ? std::string("its option") : label;
  if (!job.chosen) return "placed; waiting for a worker to take it";
  switch (job.chosen->option) {
    case scheduler::OptionKind::local:
      if (job.resource_nodes > 1)  // a gang: leased when that many of its workers ask at once
        return "placed on " + where + "; waiting for " + std::to_string(job.resource_nodes) +
               " of its workers to ask for work at once (a job on " + std::to_string(job.resource_nodes) + " machines)";
      return "placed on " + where + "; waiting for a worker of it to take it" +
             (job.chosen->queue_wait_hours > 0
                  ? " (all busy: one expected free " + readable::duration_hours(job.chosen->queue_wait_hours) + " after the decision)"
                  : std::string());
    case scheduler::OptionKind::slurm:
      return "placed on " + where + "; waiting for Slurm's queue to start its batch job";
    case scheduler::OptionKind::on_demand:
    case scheduler::OptionKind::spot:
      return "placed on " + where + "; waiting for the instance to start and its worker to take it";
  }
  return "placed on " + where;
}

std::string wanted_resources(const store::QueuedJobRow& job) {
  const std::string gpus =
      " x" + std::to_string(job.resource_gpus) + (job.nodes > 1 ? " on " + std::to_string(job.nodes) + " machines" : "");
  if (!job.placement_option) return "unplaced: " + job.resource_gpu + gpus + (job.command ? ", command" : "");
  const std::string option(scheduler::option_name(*job.placement_option));
  if (scheduler::is_cloud(*job.placement_option)) return option + " " + job.placement_instance_type + gpus;
  return option + " " + job.placement_gpu + gpus;
}

ExpectedStart expected_start(const store::JobRow& job, const json* placement, int position, int64_t now_ms) {
  (void)position;  // the decision's queue wait already counts the jobs holding the option
  if (job.state == store::JobState::held) return {std::nullopt, "none while it is held"};
  if (job.state == store::JobState::queued) {
    const std::string outcome = placement ? text_of(*placement, "outcome") : std::string();
    if (outcome == "unplaceable") return {std::nullopt, "none: no option can run it as things stand"};
    if (outcome == "wait_spot") return {std::nullopt, "none: when a spot offer can be launched"};
    return {std::nullopt, "none until placement decides or a worker takes it"};
  }
  if (!job.awaiting_lease() || !job.chosen) return {std::nullopt, "none"};
  int64_t decided_ms = job.updated_ms;
  if (placement)
    if (auto it = placement->find("decided_ms"); it != placement->end() && it->is_number_integer()) decided_ms = it->get<int64_t>();
  const int64_t at = decided_ms + static_cast<int64_t>(job.chosen->queue_wait_hours * kHourMs);
  std::string basis = job.chosen->on_cloud()                         ? "the decision's provisioning time"
                      : job.chosen->option == scheduler::OptionKind::slurm      ? "Slurm's queue wait at the decision"
                      : job.chosen->queue_wait_hours > 0             ? "the decision's queue wait: the running jobs' estimated remaining time"
                                                                     : "now: a worker was free at the decision";
  if (at < now_ms) basis += "; overdue, so now";
  return {std::max(at, now_ms), std::move(basis)};
}

std::map<int64_t, QueuePlace> queue_places(const JobQueue& queue, const std::set<int64_t>& ids) {
  std::map<int64_t, QueuePlace> out;
  if (ids.empty()) return out;
  std::map<std::string, int> lengths;
  for (const QueuedJob& q : queue) {
    std::string key = wanted_resources(q);
    const int at = ++lengths[key];
    if (ids.count(q.id)) out[q.id] = QueuePlace{std::move(key), at, 0};
  }
  for (auto& [id, place] : out) place.length = lengths[place.queue];
  return out;
}

Expected<std::map<int64_t, JobWait>> job_waits(store::Store& store, const std::vector<store::JobRow>& jobs,
                                               const std::map<int64_t, QueuePlace>& places, int64_t now_ms,
                                               const FairSharePlaces* fair_share) {
  std::map<int64_t, JobWait> out;
  for (const auto& listed : jobs) {
    if (listed.damaged || !is_waiting(listed)) continue;  // a damaged job is listed as that alone
    // A listing leaves the placement document out: read the job whole.
    const store::JobRow* row = &listed;
    std::optional<store::JobRow> whole;
    std::string held_reason;
    if (listed.state == store::JobState::held) {
      auto reason = store.held_reason(listed.id);
      if (!reason) return reason.error();
      held_reason = std::move(*reason);
    } else if (!listed.placement_json) {
      auto read = store.get_job(listed.id);
      if (!read) return read.error();
      if (!*read) continue;
      whole = std::move(**read);
    }
    if (whole) row = &*whole;
    json placement;
    bool has_placement = false;
    if (row->placement_json) {
      auto decoded = store::decode_placement_document(*row->placement_json, "job " + std::to_string(row->id));
      if (!decoded) return decoded.error();
      placement = std::move(*decoded);
      has_placement = true;
    }
    JobWait w;
    w.reason = wait_reason(*row, has_placement ? &placement : nullptr, held_reason);
    if (whole && !has_placement && row->state == store::JobState::queued) {  // its dependencies, if any
      auto spec = row->decoded_spec();
      if (!spec) return spec.error();
      if (const auto& after = (*spec)->after; !after.empty()) {
        auto check = check_dependencies(store, after);
        if (!check) return check.error();
        if (check->verdict != DependencyCheck::Verdict::met) w.reason = check->reason;
      }
    }
    if (auto place = places.find(row->id); place != places.end()) {
      w.queue = place->second.queue;
      w.position = place->second.position;
      w.queue_length = place->second.length;
    }
    w.expected_start = expected_start(*row, has_placement ? &placement : nullptr, w.position, now_ms);
    if (fair_share)
      if (auto f = fair_share->find(row->id); f != fair_share->end()) {
        w.fair_share = f->second;
        // A reservation's reason carries the place it had then: the current one replaces it.
        if (const size_t at = w.reason.find(std::string("; ") + kFairShareNotePrefix); at != std::string::npos)
          w.reason.resize(at);
        w.reason += "; " + fair_share_note(f->second);
      }
    out.emplace(row->id, std::move(w));
  }
  return out;
}

}  // namespace jobctl::daemon::jobs
