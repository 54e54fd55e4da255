#include "daemon/jobs/job_transition.h"

#include <nlohmann/json.hpp>

#include "scheduler/job_state.h"

namespace jobctl::daemon::jobs {

Status transition_job(store::WriteTxn& txn, store::JobRow& job, store::JobState to, std::string type,
                      const nlohmann::json& detail, int64_t now_ms) {
  if (!scheduler::can_transition(job.state, to))
    return make_error(ErrorCode::conflict, "job " + std::to_string(job.id) + " is " +
                                      std::string(scheduler::to_string(job.state)) + " and cannot become " +
                                      std::string(scheduler::to_string(to)));
  store::JobEventRow ev;
  ev.job_id = job.id;
  ev.time_ms = now_ms;
  ev.type = std::move(type);
  ev.from_state = job.state;
  ev.to_state = to;
  ev.detail_json = detail.dump();
  job.state = to;
  job.updated_ms = now_ms;
  if (auto st = txn.update_job(job); !st) return st;
  if (auto seq = txn.append_event(ev); !seq) return seq.error();
  return {};
}

Status note_job_event(store::WriteTxn& txn, int64_t job_id, std::string type, const nlohmann::json& detail,
                      int64_t now_ms) {
  store::JobEventRow ev;
  ev.job_id = job_id;
  ev.time_ms = now_ms;
  ev.type = std::move(type);
  ev.detail_json = detail.dump();
  auto seq = txn.append_event(ev);
  return seq ? Status{} : Status{seq.error()};
}

}  // namespace jobctl::daemon::jobs
