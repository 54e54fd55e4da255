// jobctl-cloudsim's cloud: instances, per-second billing at catalog prices, spot interruptions
// (from a rate, from a replayed availability trace, or on request) with an AWS-style notice, and
// one real `jobctl-worker` process per instance. sim_routes.h puts it on HTTP; this class has no
// sockets, and takes its time from a Clock, so tests drive it directly.
//
// Time: `time_factor` F simulated seconds pass per real second. Billing counts simulated seconds
// (an instance that ran 10 real seconds at F = 60 is billed 600 s), the notice period is
// notice_seconds simulated (120 s at F = 60: 2 real seconds), the interruption rate is per
// simulated hour, and a trace tick lasts gap_seconds simulated.
//
// Interruptions:
//  - rate lambda: each spot instance draws its time to interruption from Exp(lambda) at launch
//    (seeded: the same seed gives the same schedule);
//  - trace: the trace's tick at simulated time t is floor(t / gap) (wrapping at the end); while it
//    is 0 no spot capacity exists: spot launches are refused (code "unavailable") and running
//    spot instances get a notice;
//  - interrupt(id): a notice now (tests; works for on-demand instances too).
// A notice at time N reclaims the instance at N + notice_seconds / F: its process group gets
// SIGKILL and it becomes terminated with reason "spot-interruption".
//
// terminate(id): billing stops, the worker gets SIGTERM (it checkpoints and gives its job back),
// and SIGKILL after terminate_grace_ms if still running.
//
// State: <state_dir>/state.json is rewritten after every change (instances and their bills), and
// read back at start: instances that were live when the previous cloudsim ended are terminated
// at its last save with reason "cloudsim-restart" (their processes died with it).
// <state_dir>/instances/<id>/ holds each instance's worker.log and work/ folder.
//
// Thread safety: every method is safe from any thread (one mutex). tick() is called periodically
// by the owner (cloudsim_main.cpp) to move interruptions forward and reap processes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/expected.h"
#include "base/mutex.h"
#include "cloud/provider.h"
#include "cost/price_catalog.h"
#include "process/child.h"
#include "scheduler/spot_trace.h"

namespace jobctl::cloud::sim {

struct SimCloudOptions {
  std::vector<cost::Offer> offers;             // what can be launched, at these prices
  double time_factor = 1.0;                    // simulated seconds per real second (> 0)
  double notice_seconds = 120;                 // simulated
  double interruption_rate_per_hour = 0;       // per simulated hour, for spot instances
  std::optional<scheduler::SpotTrace> trace;   // spot availability to replay
  int64_t trace_start_tick = 0;                // the trace tick at cloudsim's start
  uint64_t seed = 1;
  std::string state_dir;                       // required
  // The instance's command (command_template.h placeholders: {server} {notice_url}
  // {instance_id} {instance_type} {spot} {spot_flag} {job_flags} {region} {work_dir} {name} {tag}); without
  // any placeholder, the standard worker flags are appended.
  std::string worker_command;
  std::string default_server;                  // used when a launch names no server
  std::string base_url;                        // this cloudsim's URL (notice URLs point here)
  int64_t terminate_grace_ms = 10000;          // real: SIGTERM -> SIGKILL on terminate
};

struct SimLaunch {
  std::string instance_type;
  std::string region;        // empty: the first offer of the type
  std::string zone;          // empty: the first offer of the type in the region
  bool spot = false;
  std::string server;        // jobctld URL for the worker
  std::string tag;
  std::string name;
  int64_t for_job = 0;       // non-zero: the worker runs this command job alone (LaunchRequest)
  std::vector<std::string> worker_flags;  // more flags for that worker (LaunchRequest)
};

class SimCloud {
 public:
  // Reads <state_dir>/state.json when present. Errors: invalid_argument (options), io.
  static Expected<std::unique_ptr<SimCloud>> create(SimCloudOptions options, const Clock& clock);
  ~SimCloud();  // kills every instance's processes
  SimCloud(const SimCloud&) = delete;
  SimCloud& operator=(const SimCloud&) = delete;

  void set_base_url(std::string url);

  // Errors: invalid_argument (unknown instance type/region, spot without a spot market: field
  // named), unavailable (no spot capacity in the trace now), io (the worker could not start).
  Expected<nlohmann::json> launch(const SimLaunch& request);
  Expected<nlohmann::json> terminate(const std::string& id);
  Expected<nlohmann::json> interrupt(const std::string& id, const std::string& reason = "requested");
  Expected<nlohmann::json> describe(const std::string& id);
  // Every instance (with `tag` when not empty), launch order.
  nlohmann::json list(const std::string& tag);
  nlohmann::json interruptions(const std::string& tag, int64_t since_ms);
  // The notice document of EC2's spot/instance-action, or nullopt while there is none (404).
  // Errors: not_found (no such instance).
  Expected<std::optional<nlohmann::json>> instance_action(const std::string& id);
  nlohmann::json billing();
  nlohmann::json offers_json() const;
  // Whether a spot launch would be accepted now (trace).
  bool spot_capacity_now();

  // Moves time forward: trace and rate interruptions, reclaims at notice end, SIGKILL after the
  // terminate grace, reaping of ended workers.
  void tick();

  // Simulated seconds elapsed since cloudsim's start.
  double sim_seconds_now() const;

 private:
  struct Inst {
    Instance info;           // id, type, region, zone, spot, state, launched_ms, price, notice
    std::string tag;
    std::string name;
    std::string server;
    std::string dir;
    std::optional<int64_t> ended_ms;         // billing stops here
    std::optional<int64_t> interrupt_at_ms;  // rate-scheduled notice time
    std::optional<int64_t> kill_at_ms;       // terminate grace end
    std::unique_ptr<process::Child> process;  // the worker: /bin/sh -c "exec COMMAND"
    std::string worker_status;               // "running", or how it ended
  };

  SimCloud(SimCloudOptions options, const Clock& clock);
  Status load_state();
  void save_locked() JOBCTL_REQUIRES(mu_);
  nlohmann::json instance_json_locked(Inst& inst, int64_t now) JOBCTL_REQUIRES(mu_);
  int64_t billed_seconds(const Inst& inst, int64_t now) const;
  bool trace_available_locked(int64_t now) const JOBCTL_REQUIRES(mu_);
  void notice_locked(Inst& inst, int64_t now, const std::string& reason) JOBCTL_REQUIRES(mu_);
  void end_locked(Inst& inst, int64_t now, const std::string& reason) JOBCTL_REQUIRES(mu_);
  std::string new_id_locked() JOBCTL_REQUIRES(mu_);
  int64_t real_ms(double sim_seconds) const;

  SimCloudOptions options_;
  const Clock& clock_;
  const int64_t start_ms_;
  mutable Mutex mu_;
  std::vector<std::unique_ptr<Inst>> instances_ JOBCTL_GUARDED_BY(mu_);  // launch order
  std::map<std::string, Inst*, std::less<>> by_id_ JOBCTL_GUARDED_BY(mu_);
  std::vector<InterruptionNotice> notices_ JOBCTL_GUARDED_BY(mu_);
  std::mt19937_64 interruption_rng_ JOBCTL_GUARDED_BY(mu_);
  std::mt19937_64 id_rng_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::cloud::sim
