// The worker's main loop: register with jobctld (retrying until it answers), then long-poll for
// a lease and run each leased job with a JobRunner, until stopped. If the daemon no longer knows
// this worker (404: e.g. a new database), it registers again. Transport failures back off
// exponentially (1 s to 30 s).
//
// Ownership and thread safety: borrows the StopSource and the log stream; run() on one thread.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include <nlohmann/json.hpp>

#include "worker/job_runner.h"
#include "worker/stop_source.h"

namespace jobctl::worker {

struct AgentOptions {
  std::string server;            // http://host:port
  std::string name;              // shown in `jobctl workers`
  nlohmann::json capabilities;   // capabilities_json(...)
  int max_wait_s = 30;           // long-poll length asked for (capped by the daemon's maximum)
  int max_jobs = 0;              // stop after this many jobs (0: no limit; for tests)
  RunnerOptions runner;
};

class Agent {
 public:
  Agent(AgentOptions options, const StopSource& stop, std::ostream& log);
  // Returns the process exit code: 0 after a requested stop (or max_jobs), 1 on a fatal error.
  int run();
  int64_t worker_id() const { return worker_id_; }

 private:
  bool register_worker(client::ApiClient& api);
  // Sleeps up to `ms`, returning early (false) when a stop is requested.
  bool sleep_ms(int ms);

  AgentOptions options_;
  const StopSource& stop_;
  std::ostream& log_;
  int64_t worker_id_ = 0;
  int heartbeat_interval_s_ = 2;
  int max_lease_wait_s_ = 30;
};

}  // namespace jobctl::worker
