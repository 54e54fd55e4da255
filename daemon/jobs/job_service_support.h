// The small pieces the parts of the job service share (job_service.h): the errors naming a job or
// a worker, a queue entry from a stored job, a lease's event detail, and the blocking form of a
// call that answers through a callback.
//
// Thread safety: pure functions; wait_for_answer blocks its caller (never the store's writer).
#pragma once

#include <cstdint>
#include <future>
#include <string>

#include <nlohmann/json.hpp>

#include "base/expected.h"
#include "daemon/jobs/job_queue.h"
#include "daemon/jobs/protocol.h"

namespace jobctl::daemon::jobs {

inline std::string job_ref(int64_t id) { return "job " + std::to_string(id); }

inline Error job_not_found(int64_t id) { return make_error(ErrorCode::not_found, job_ref(id) + " does not exist"); }

inline Error worker_not_found(int64_t id) {
  return make_error(ErrorCode::not_found, "worker " + std::to_string(id) + " is not registered", "worker_id");
}

// The queue entry of a queued job, or of a placed one waiting for its worker (with its placement).
inline QueuedJob queued_from(const store::JobRow& row) {
  QueuedJob q{row.id, row.priority, row.created_ms, row.resource_gpu, row.resource_gpus, {}, {}, {}, false};
  if (row.spec) set_program_fields(*row.spec, q);  // every row read whole carries it
  q.nodes = row.resource_nodes;
  if (row.state == JobState::placed) set_placement_fields(row, q);
  return q;
}

inline nlohmann::json lease_detail(const LeaseRef& l) { return {{"worker_id", l.worker_id}, {"epoch", l.epoch}}; }

// The blocking form of a call that answers through a callback: starts it with a callback that
// fulfils a promise, and waits. Not from the store's writer thread (the answer comes from there).
template <class T, class Start>
Expected<T> wait_for_answer(Start start) {
  std::promise<Expected<T>> answer;
  auto future = answer.get_future();
  start([&answer](Expected<T> r) { answer.set_value(std::move(r)); });
  return future.get();
}

}  // namespace jobctl::daemon::jobs
