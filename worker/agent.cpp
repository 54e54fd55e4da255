#include "worker/agent.h"

#include <poll.h>

#include <algorithm>
#include <ostream>

namespace jobctl::worker {

using nlohmann::json;

Agent::Agent(AgentOptions options, const StopSource& stop, std::ostream& log)
    : options_(std::move(options)), stop_(stop), log_(log) {}

bool Agent::sleep_ms(int ms) {
  pollfd p{stop_.fd(), POLLIN, 0};
  ::poll(&p, 1, ms);
  return !stop_.requested();
}

bool Agent::register_worker(client::ApiClient& api) {
  int backoff_ms = 1000;
  while (!stop_.requested()) {
    auto r = api.register_worker(json{{"name", options_.name}, {"capabilities", options_.capabilities}});
    if (r) {
      worker_id_ = (*r)["worker_id"].get<int64_t>();
      heartbeat_interval_s_ = r->value("heartbeat_interval_s", 2);
      max_lease_wait_s_ = r->value("max_lease_wait_s", 30);
      log_ << "jobctl-worker: registered with " << options_.server << " as worker " << worker_id_
           << " (" << options_.name << ", " << options_.capabilities["gpus"].size() << " GPU(s))\n";
      return true;
    }
    if (r.error().code == "invalid_argument") {
      log_ << "jobctl-worker: registration refused: " << r.error().message << "\n";
      return false;
    }
    log_ << "jobctl-worker: cannot register yet: " << r.error().message << "; retrying in "
         << backoff_ms / 1000 << " s\n";
    if (!sleep_ms(backoff_ms)) break;
    backoff_ms = std::min(backoff_ms * 2, 30000);
  }
  return false;
}

int Agent::run() {
  // Two clients: the long-poll aborts as soon as a stop is requested; reports must not.
  client::HttpClientOptions poll_opts;
  poll_opts.cancel = &stop_.flag();
  client::ApiClient poll_api(options_.server, poll_opts);
  client::ApiClient api(options_.server);

  if (!register_worker(api)) return stop_.requested() ? 0 : 1;
  int jobs = 0;
  int backoff_ms = 1000;
  while (!stop_.requested()) {
    const int wait_s = std::clamp(options_.max_wait_s, 0, std::max(0, max_lease_wait_s_));
    auto r = poll_api.lease(worker_id_, wait_s);
    if (!r) {
      if (stop_.requested()) break;
      if (r.error().code == "not_found") {
        log_ << "jobctl-worker: the daemon does not know worker " << worker_id_ << "; registering again\n";
        if (!register_worker(api)) return stop_.requested() ? 0 : 1;
        continue;
      }
      log_ << "jobctl-worker: lease request failed: " << r.error().message << "; retrying in "
           << backoff_ms / 1000 << " s\n";
      if (!sleep_ms(backoff_ms)) break;
      backoff_ms = std::min(backoff_ms * 2, 30000);
      continue;
    }
    backoff_ms = 1000;
    if (!*r) continue;  // no job this time
    RunnerOptions ro = options_.runner;
    ro.heartbeat_interval_ms = std::min(ro.heartbeat_interval_ms, heartbeat_interval_s_ * 1000);
    JobRunner runner(api, worker_id_, ro, stop_, log_);
    const Lease lease = JobRunner::lease_from_json(**r);
    const RunOutcome outcome = runner.run(lease);
    log_ << "jobctl-worker: job " << lease.job_id << ": " << to_string(outcome) << "\n";
    if (options_.max_jobs > 0 && ++jobs >= options_.max_jobs) break;
  }
  log_ << "jobctl-worker: stopped\n";
  return 0;
}

}  // namespace jobctl::worker
