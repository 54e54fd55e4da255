#include "worker/agent.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>

#include "base/fixed_decimal.h"
#include "base/mutex.h"
#include "base/retry.h"
#include "protocol/worker_messages.h"
#include "worker/rendezvous_endpoint.h"

namespace jobctl::worker {

using nlohmann::json;

Agent::Agent(AgentOptions options, const StopSource& stop, std::ostream& log)
    : options_(std::move(options)), stop_(stop), log_(log) {}

namespace {

// Registration and lease polling back off from 1 s to 30 s while the daemon cannot be reached.
constexpr RetryPolicy kDaemonRetry{.max_attempts = 0,
                                   .first_delay = std::chrono::seconds(1),
                                   .max_delay = std::chrono::seconds(30)};

std::string seconds_text(std::chrono::milliseconds d) { return fixed_decimal(static_cast<double>(d.count()) / 1000.0, 1); }

}  // namespace

std::string Agent::rendezvous_address() {
  if (!options_.address.empty()) return options_.address;
  auto found = local_address_toward(options_.server);
  if (found) {
    address_problem_.clear();
    return *found;
  }
  if (found.error().message != address_problem_) {
    address_problem_ = found.error().message;
    log_ << "jobctl-worker: cannot find this machine's address toward " << options_.server << " ("
         << address_problem_ << "); registering without one (jobs across machines need it; --address sets it)\n";
  }
  return {};
}

int Agent::rendezvous_port() {
  std::string why;
  if (address_.empty()) {
    why = "no address registered";
  } else if (auto port = free_tcp_port(address_)) {
    port_problem_.clear();
    return *port;
  } else {
    why = port.error().message;
  }
  if (why != port_problem_) {
    port_problem_ = why;
    log_ << "jobctl-worker: asking for work without a free port (" << why
         << "; a gang's rank 0 needs one)\n";
  }
  return 0;
}

bool Agent::register_worker(client::ApiClient& api, std::initializer_list<client::ApiClient*> clients) {
  if (stop_.requested()) return false;
  json body{{"name", options_.name}, {"capabilities", options_.capabilities}};
  // Found again at each attempt: the route toward jobctld may appear only once it is reachable.
  auto r = retry(
      kDaemonRetry, [this](std::chrono::milliseconds d) { return stop_.wait_for(d); },
      [&] {
        address_ = rendezvous_address();
        if (address_.empty()) body["capabilities"].erase("address");
        else body["capabilities"]["address"] = address_;
        return api.register_worker(body);
      },
      [](const Expected<json>& answer) { return !answer && answer.error().code != ErrorCode::invalid_argument; },
      [this](const Expected<json>& answer, int, std::chrono::milliseconds pause) {
        log_ << "jobctl-worker: cannot register yet: " << answer.error().message << "; retrying in "
             << seconds_text(pause) << " s\n";
      });
  if (!r.result) {
    if (r.result.error().code == ErrorCode::invalid_argument)
      log_ << "jobctl-worker: registration refused: " << r.result.error().message << "\n";
    return false;
  }
  auto registered = protocol::worker_registered_from_json(*r.result);
  if (!registered) {
    log_ << "jobctl-worker: unreadable registration answer: " << registered.error().message << "\n";
    return false;
  }
  worker_id_ = registered->worker_id;
  for (const auto& warning : registered->warnings) log_ << "jobctl-worker: warning: " << warning << "\n";
  // Every later call carries the worker's own secret (docs/security.md).
  worker_secret_ = registered->worker_secret;
  for (client::ApiClient* c : clients) c->set_worker_secret(worker_secret_);
  heartbeat_interval_s_ = registered->heartbeat_interval_s;
  max_lease_wait_s_ = registered->max_lease_wait_s;
  log_ << "jobctl-worker: registered with " << options_.server << " as worker " << worker_id_ << " ("
       << options_.name << ", " << options_.capabilities["gpus"].size() << " GPU(s), " << std::max(1, options_.slots)
       << " slot(s)" << (address_.empty() ? std::string() : ", address " + address_) << ")\n";
  return true;
}

namespace {

// The slots' bookkeeping, shared by the agent's loop and the job threads.
struct Slots {
  Mutex mu;
  CondVar freed;
  std::vector<bool> busy JOBCTL_GUARDED_BY(mu);
  std::vector<std::thread> threads;  // one per slot (joinable while a job ran there); the loop's own
  std::vector<int> free_gpus JOBCTL_GUARDED_BY(mu);  // GPUs no job holds, in index order
  int finished_jobs JOBCTL_GUARDED_BY(mu) = 0;

  int free_slot() JOBCTL_REQUIRES(mu) {
    for (size_t i = 0; i < busy.size(); ++i)
      if (!busy[i]) return static_cast<int>(i);
    return -1;
  }
};

}  // namespace

int Agent::run() {
  // Two clients: the long-poll aborts as soon as a stop is requested; registration must not.
  client::HttpClientOptions poll_opts;
  poll_opts.cancel = &stop_.flag();
  poll_opts.bearer_token = options_.token;
  client::ApiClient poll_api(options_.server, poll_opts);
  client::HttpClientOptions api_opts;
  api_opts.bearer_token = options_.token;
  client::ApiClient api(options_.server, api_opts);

  if (!register_worker(api, {&api, &poll_api})) return stop_.requested() ? 0 : 1;
  Slots slots;
  const size_t slot_count = static_cast<size_t>(std::max(1, options_.slots));
  {
    MutexLock lock(slots.mu);
    slots.busy.assign(slot_count, false);
    slots.free_gpus = options_.gpus;
  }
  slots.threads.resize(slot_count);
  int leased = 0;
  int rc = 0;
  Backoff lease_backoff(kDaemonRetry);
  while (!stop_.requested()) {
    if (options_.max_jobs > 0 && leased >= options_.max_jobs) break;
    int slot = -1;
    std::optional<std::vector<int>> free_gpus;  // what a GPU worker offers with this poll
    {
      MutexLock lock(slots.mu);
      slot = slots.free_slot();
      if (slot < 0 || (!options_.gpus.empty() && slots.free_gpus.empty())) {
        slots.freed.wait_for(slots.mu, std::chrono::milliseconds(200));
        continue;
      }
      if (!options_.gpus.empty()) free_gpus = slots.free_gpus;
    }
    // The slot's previous job thread has ended its work; collect it.
    if (slots.threads[static_cast<size_t>(slot)].joinable()) slots.threads[static_cast<size_t>(slot)].join();
    const int wait_s = std::clamp(options_.max_wait_s, 0, std::max(0, max_lease_wait_s_));
    auto r = poll_api.lease(worker_id_, wait_s, free_gpus, rendezvous_port());
    if (!r) {
      if (stop_.requested()) break;
      if (r.error().code == ErrorCode::not_found || r.error().code == ErrorCode::permission_denied) {
        log_ << "jobctl-worker: the daemon does not know worker " << worker_id_ << " (" << r.error().message
             << "); registering again\n";
        if (!register_worker(api, {&api, &poll_api})) {
          rc = stop_.requested() ? 0 : 1;
          break;
        }
        continue;
      }
      const auto pause = lease_backoff.next_delay();
      log_ << "jobctl-worker: lease request failed: " << r.error().message << "; retrying in "
           << seconds_text(pause) << " s\n";
      if (!stop_.wait_for(pause)) break;
      continue;
    }
    lease_backoff.reset();
    if (!*r) continue;  // no job this time
    auto offered = protocol::lease_offer_from_json(**r);
    if (!offered) {
      log_ << "jobctl-worker: unreadable lease answer: " << offered.error().message << "\n";
      continue;
    }
    const Lease lease = std::move(*offered);
    ++leased;
    RunnerOptions ro = options_.runner;
    ro.heartbeat_interval_ms = std::min(ro.heartbeat_interval_ms, heartbeat_interval_s_ * 1000);
    ro.transfer.server = options_.server;
    ro.transfer.worker_secret = worker_secret_;
    {
      MutexLock lock(slots.mu);
      slots.busy[static_cast<size_t>(slot)] = true;
      // The GPUs the lease names (a daemon that names none: the first free one), taken from the pool.
      std::vector<int> taken;
      for (int k : lease.gpus)
        if (std::erase(slots.free_gpus, k) > 0) taken.push_back(k);
      if (taken.empty() && lease.gpus.empty() && !slots.free_gpus.empty()) {
        taken.push_back(slots.free_gpus.front());
        slots.free_gpus.erase(slots.free_gpus.begin());
      }
      ro.gpu_indices = std::move(taken);
    }
    const int64_t worker_id = worker_id_;
    slots.threads[static_cast<size_t>(slot)] = std::thread([this, &slots, slot, ro, lease, worker_id] {
      client::HttpClientOptions job_opts;
      job_opts.bearer_token = options_.token;
      job_opts.worker_secret = ro.transfer.worker_secret;
      client::ApiClient job_api(options_.server, job_opts);  // one client per thread (not thread-safe)
      JobRunner runner(job_api, worker_id, ro, stop_, log_);
      const RunOutcome outcome = runner.run(lease);
      std::ostringstream line;
      line << "jobctl-worker: job " << lease.job_id << ": " << to_string(outcome) << " (slot " << slot << ")\n";
      log_ << line.str();
      MutexLock lock(slots.mu);
      slots.busy[static_cast<size_t>(slot)] = false;
      slots.free_gpus.insert(slots.free_gpus.end(), ro.gpu_indices.begin(), ro.gpu_indices.end());
      std::sort(slots.free_gpus.begin(), slots.free_gpus.end());
      ++slots.finished_jobs;
      slots.freed.signal_all();
    });
  }
  // Running jobs see the same stop (or run to their end when max_jobs was reached).
  for (auto& t : slots.threads)
    if (t.joinable()) t.join();
  log_ << "jobctl-worker: stopped\n";
  return rc;
}

}  // namespace jobctl::worker
