// The worker's main loop: register with jobctld (retrying until it answers), then long-poll for
// a lease whenever a slot (and, on a GPU worker, a GPU) is free and run each leased job with a
// JobRunner on its own thread, until stopped. A GPU worker has one slot per GPU and tells the
// daemon which GPUs are free when it asks; the lease names the ones the job takes (a 4-GPU
// worker runs up to four 1-GPU jobs, or a 2-GPU one and two 1-GPU ones), and the job sees only
// those (CUDA_VISIBLE_DEVICES). A CPU worker has one slot unless told otherwise (--slots). It
// registers the address the other nodes of a gang reach it at (--address, else the local address
// of its connections toward jobctld) and sends a TCP port free there with every lease request
// (worker/rendezvous_endpoint.h): a job across machines (a gang) gives its program the
// rendezvous (JobRunner). If the
// daemon no longer knows this worker (404: e.g. a new database) or refuses its secret, it
// registers again. Registering returns the worker's own secret, which every later call (lease,
// heartbeats, reports, checkpoint transfers) carries (docs/security.md). Transport failures back
// off exponentially with jitter (1 s to 30 s, base/retry.h); a stop ends the waits at once. On a
// stop (SIGTERM, or a spot notice) every running job checkpoints, uploads and is
// reported preempted (JobRunner) before run() returns.
//
// Ownership and thread safety: borrows the StopSource and the log stream; run() on one thread.
// The job threads write to the log stream too, so it must tolerate concurrent writes of whole
// lines (std::cerr does).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "worker/job_runner.h"
#include "worker/stop_source.h"

namespace jobctl::worker {

struct AgentOptions {
  std::string server;            // http://host:port
  std::string token;             // API token sent as Authorization: Bearer (auth: docs/security.md)
  std::string name;              // shown in `jobctl workers`
  nlohmann::json capabilities;   // capabilities_json(...)
  std::string address;           // registered as capabilities.address (--address); empty: found at registration
  int max_wait_s = 30;           // long-poll length asked for (capped by the daemon's maximum)
  int max_jobs = 0;              // stop after this many jobs (0: no limit; for tests)
  int slots = 1;                 // jobs run at once
  std::vector<int> gpus;         // this machine's GPUs (indices as registered); empty: no GPU pinning
  RunnerOptions runner;
};

class Agent {
 public:
  Agent(AgentOptions options, const StopSource& stop, std::ostream& log);
  // Returns the process exit code: 0 after a requested stop (or max_jobs), 1 on a fatal error.
  int run();
  int64_t worker_id() const { return worker_id_; }

 private:
  // Registers (again), retrying until the daemon answers; the new secret is set on `clients`.
  bool register_worker(client::ApiClient& api, std::initializer_list<client::ApiClient*> clients);
  // The address registered: --address, else the local address toward jobctld (empty, logged,
  // when it cannot be found: the worker then registers none).
  std::string rendezvous_address();
  // A TCP port free on the registered address for the next lease request; 0 (logged when the
  // reason is new) when there is none.
  int rendezvous_port();

  AgentOptions options_;
  const StopSource& stop_;
  std::ostream& log_;
  int64_t worker_id_ = 0;
  std::string worker_secret_;  // from registering; every later call carries it
  int heartbeat_interval_s_ = 2;
  int max_lease_wait_s_ = 30;
  std::string address_;         // the address registered ("" for none)
  std::string address_problem_;  // why the last one could not be found (logged once)
  std::string port_problem_;     // why the last lease request went without a port (logged once)
};

}  // namespace jobctl::worker
