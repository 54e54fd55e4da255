#include "daemon/jobs/job_transition.h"

#include <nlohmann/json.hpp>

#include "scheduler/job_state.h"

namespace jobctl::daemon::jobs {

namespace {

using scheduler::EdgeKind;
using scheduler::Holder;

Holder holder_of(const store::JobRow& job) { return job.worker_id ? Holder::worker : Holder::none; }

Status refuse(const store::JobRow& job, store::JobState to, EdgeKind kind) {
  const std::string now_is = "job " + std::to_string(job.id) + " is " + std::string(scheduler::to_string(job.state)) +
                             (job.worker_id ? " (held by worker " + std::to_string(*job.worker_id) + ")" : "");
  if (kind == EdgeKind::lease) return make_error(ErrorCode::conflict, now_is + " and cannot be leased");
  return make_error(ErrorCode::conflict, now_is + " and cannot become " + std::string(scheduler::to_string(to)));
}

// Writes the job as it now is and the event of its step from `from`.
Status write_step(store::WriteTxn& txn, store::JobRow& job, store::JobState from, store::JobState to,
                  std::string type, const nlohmann::json& detail, int64_t now_ms) {
  store::JobEventRow ev;
  ev.job_id = job.id;
  ev.time_ms = now_ms;
  ev.type = std::move(type);
  ev.from_state = from;
  ev.to_state = to;
  ev.detail_json = detail.dump();
  job.state = to;
  job.updated_ms = now_ms;
  if (auto st = txn.update_job(job); !st) return st;
  if (auto seq = txn.append_event(ev); !seq) return seq.error();
  return {};
}

}  // namespace

Status transition_job(store::WriteTxn& txn, store::JobRow& job, store::JobState to, std::string type,
                      const nlohmann::json& detail, int64_t now_ms) {
  if (!scheduler::can_transition(job.state, to, EdgeKind::change, holder_of(job)))
    return refuse(job, to, EdgeKind::change);
  return write_step(txn, job, job.state, to, std::move(type), detail, now_ms);
}

Status transition_job(store::WriteTxn& txn, store::JobRow& job, const LeaseTaken& lease, std::string type,
                      nlohmann::json detail, int64_t now_ms) {
  constexpr store::JobState to = store::JobState::placed;
  if (!scheduler::can_transition(job.state, to, EdgeKind::lease, holder_of(job))) return refuse(job, to, EdgeKind::lease);
  const store::JobState from = job.state;
  job.lease_epoch += 1;
  job.worker_id = lease.worker_id;
  job.lease_expires_ms = lease.expires_ms;
  job.progress_json.reset();
  detail["worker_id"] = lease.worker_id;
  detail["epoch"] = job.lease_epoch;
  return write_step(txn, job, from, to, std::move(type), detail, now_ms);
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
