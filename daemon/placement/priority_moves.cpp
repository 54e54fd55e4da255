#include "daemon/placement/priority_moves.h"

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace jobctl::daemon::placement {

using nlohmann::json;

namespace {

struct Running {
  int64_t job_id = 0;
  int priority = 0;
  int64_t created_ms = 0;
};

}  // namespace

Expected<int> PriorityMoves::check() {
  auto waiting = store_.placed_waiting_jobs();
  if (!waiting) return waiting.error();
  std::set<int64_t> still_waiting;
  std::vector<store::QueuedJobRow> late;  // local, missing its deadline there
  for (const auto& q : *waiting) {
    still_waiting.insert(q.id);
    if (q.placement_option != store::OptionKind::local || made_room_for_.count(q.id)) continue;
    auto row = store_.get_job(q.id);
    if (!row) return row.error();
    if (!*row || !(*row)->placement_json) continue;
    auto decoded = store::decode_placement_document(*(*row)->placement_json, "job " + std::to_string(q.id));
    if (!decoded) return decoded.error();
    const json& doc = *decoded;
    if (!doc["chosen"].is_object() || doc.value("deadline_left_hours", json()).is_null()) continue;
    if (!doc["chosen"].value("meets_deadline", true)) late.push_back(q);
  }
  std::erase_if(made_room_for_, [&still_waiting](int64_t id) { return !still_waiting.count(id); });
  if (late.empty()) return 0;
  std::sort(late.begin(), late.end(), [](const auto& a, const auto& b) {
    return a.priority != b.priority ? a.priority > b.priority : a.created_ms < b.created_ms;
  });

  auto leases = store_.lease_summaries();
  if (!leases) return leases.error();
  std::map<std::string, std::vector<Running>> running;  // local pool (GPU model) -> its jobs
  for (const auto& l : *leases) {
    if (!l.chosen || jobs_.move_requested(l.job_id)) continue;
    if (l.chosen->option != store::OptionKind::local) continue;
    auto row = store_.get_job(l.job_id);
    if (!row) return row.error();
    if (!*row || (*row)->state != store::JobState::running) continue;
    running[l.chosen->gpu].push_back(Running{l.job_id, (*row)->priority, (*row)->created_ms});
  }

  int asked = 0;
  Status result;
  for (const auto& q : late) {
    auto pool = running.find(q.placement_gpu);
    if (pool == running.end()) continue;
    auto& jobs = pool->second;
    auto victim = std::min_element(jobs.begin(), jobs.end(), [](const Running& a, const Running& b) {
      return a.priority != b.priority ? a.priority < b.priority : a.created_ms > b.created_ms;
    });
    if (victim == jobs.end() || victim->priority >= q.priority) continue;
    const std::string why = "priority: job " + std::to_string(q.id) + " (priority " + std::to_string(q.priority) +
                            ") misses its deadline waiting for a " + q.placement_gpu + "; this job has priority " +
                            std::to_string(victim->priority);
    auto moved = jobs_.request_move(victim->job_id, jobs::MoveRequest{jobs::MoveTarget::anywhere, why});
    if (!moved && moved.error().code != ErrorCode::conflict && result)
      result = make_error(moved.error().code, "job " + std::to_string(victim->job_id) + ": " + moved.error().message);
    if (moved) ++asked;
    made_room_for_.insert(q.id);
    jobs.erase(victim);
  }
  if (!result) return result.error();
  return asked;
}

}  // namespace jobctl::daemon::placement
