#include "daemon/jobs/job_dependencies.h"

#include <limits>

#include "scheduler/job_state.h"

namespace jobctl::daemon::jobs {

namespace {

using store::JobState;

std::string name_of(const train::JobDependency& d) {
  return d.array ? "array a" + std::to_string(d.id) : "job " + std::to_string(d.id);
}

bool ended_badly(JobState s) { return s == JobState::failed || s == JobState::cancelled; }

// The jobs a dependency names: the job, or every job of the array (at most a sweep's 1000).
Expected<std::vector<store::JobRow>> named_jobs(store::Store& store, const train::JobDependency& d) {
  if (!d.array) {
    auto row = store.get_job(d.id);
    if (!row) return row.error();
    std::vector<store::JobRow> out;
    if (*row) out.push_back(std::move(**row));
    return out;
  }
  store::JobQuery q;
  q.array_id = d.id;
  q.limit = std::numeric_limits<int>::max();
  return store.list_jobs(q);
}

}  // namespace

Expected<DependencyCheck> check_dependencies(store::Store& store, const std::vector<train::JobDependency>& after) {
  DependencyCheck out;
  std::vector<std::string> waiting;
  for (const auto& d : after) {
    auto jobs = named_jobs(store, d);
    if (!jobs) return jobs.error();
    const bool need_success = d.condition == train::DependencyCondition::succeeded;
    if (jobs->empty()) {  // checked at submit; jobs are not deleted, so only a changed store gets here
      out.verdict = DependencyCheck::Verdict::failed;
      out.reason = name_of(d) + " does not exist";
      return out;
    }
    int open = 0;
    for (const auto& j : *jobs) {
      if (need_success && ended_badly(j.state)) {
        out.verdict = DependencyCheck::Verdict::failed;
        out.reason = (d.array ? name_of(d) + ": job " + std::to_string(j.id) : "job " + std::to_string(j.id)) + " " +
                     std::string(scheduler::to_string(j.state)) + " (this job was to run after it succeeded)";
        return out;
      }
      if (!scheduler::is_terminal(j.state)) ++open;
    }
    if (open == 0) continue;
    const std::string until = need_success ? "succeeded" : "ended";
    if (!d.array)
      waiting.push_back("job " + std::to_string(d.id) + " (" + std::string(scheduler::to_string(jobs->front().state)) +
                        ") to have " + until);
    else
      waiting.push_back(name_of(d) + " (" + std::to_string(open) + " of " + std::to_string(jobs->size()) +
                        " jobs still to end) to have " + until);
  }
  if (waiting.empty()) return out;
  out.verdict = DependencyCheck::Verdict::waiting;
  out.reason = "waiting for ";
  for (size_t i = 0; i < waiting.size(); ++i) out.reason += (i ? ", " : "") + waiting[i];
  return out;
}

Status validate_dependencies(store::Store& store, const std::vector<train::JobDependency>& after,
                             const std::string& owner) {
  for (size_t i = 0; i < after.size(); ++i) {
    const auto& d = after[i];
    const std::string field = "after[" + std::to_string(i) + "]";
    auto jobs = named_jobs(store, d);
    if (!jobs) return jobs.error();
    bool visible = !jobs->empty();
    if (visible && !owner.empty()) {
      auto job_owner = store.job_owner(jobs->front().id);
      if (!job_owner) return job_owner.error();
      visible = *job_owner && **job_owner == owner;
    }
    if (!visible)
      return make_error(ErrorCode::invalid_argument,
                        field + " names " + name_of(d) + ", which does not exist" +
                            (owner.empty() ? std::string() : " among " + owner + "'s jobs"),
                        field);
  }
  return {};
}

}  // namespace jobctl::daemon::jobs
