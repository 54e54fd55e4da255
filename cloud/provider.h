// The provider interface (docs/architecture.md "Clouds"): what the daemon asks of a cloud, whatever the
// cloud is. A driver lists the offers it can launch (from the price catalog), launches one
// instance of an offer (on demand or spot) that boots `jobctl-worker` pointed back at the daemon,
// terminates instances, describes them, and reports interruption notices.
//
// Drivers: `sim` (sim_provider.h, talks HTTP to jobctl-cloudsim) and `exec` (exec_provider.h,
// runs commands from the daemon's configuration, e.g. around the `aws` CLI). docs/clouds.md.
//
// Instance states use the EC2 names: pending, running, shutting-down, terminated (plus stopping,
// stopped, passed through from a real cloud). Only a terminated instance has stopped billing.
//
// Every instance the daemon launches carries a tag (cloud.tag, default "jobctl"); describe()
// lists only instances with that tag, so reconciliation never touches anything else in the
// account.
//
// Thread safety: a Provider is used by one thread at a time (the daemon's provisioner thread);
// implementations need not lock. Calls block (network, child processes) for up to the driver's
// timeout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "cost/price_catalog.h"

namespace jobctl::cloud {

struct LaunchRequest {
  cost::Offer offer;            // instance type, region, zone and prices
  bool spot = false;
  std::string server_url;       // jobctld's URL, which the instance's worker connects to
  std::string tag;              // the launching daemon's tag (cloud.tag)
  std::string name;             // a human label, e.g. "jobctl-job-12"
  // Non-zero: the instance is launched for this one job, a command job (the user's own program),
  // and its worker runs that job alone, command jobs allowed (jobctl-worker --for-job N
  // --allow-commands): one user's program never shares a machine with another's.
  int64_t for_job = 0;
  // More jobctl-worker flags for that job's worker (a job in an image: --container-runtime podman
  // and --allow-mount PREFIX), each shell-quoted into {job_flags}.
  std::vector<std::string> worker_flags;
};

struct Instance {
  std::string id;               // the provider's id ("i-0123...")
  std::string instance_type;
  std::string region;
  std::string zone;
  bool spot = false;
  std::string state;            // pending | running | shutting-down | terminated | ...
  int64_t launched_ms = 0;      // 0 when the provider did not say
  // When the cloud stopped billing it (a terminate asked for, a reclaim); none when the provider
  // did not say, and jobctld takes the time it saw the instance terminated. The ledger bills
  // [launched_ms, ended_ms) as the cloud reports them, not the daemon's clock.
  std::optional<int64_t> ended_ms;
  double usd_per_hour = 0;      // 0 when the provider did not say
  std::optional<int64_t> notice_ms;   // an interruption notice was given at this time
  std::optional<int64_t> action_ms;   // ... and the instance is reclaimed at this time
  std::string reason;           // why it ended or will end ("spot-interruption", "user", ...)

  bool terminated() const { return state == "terminated"; }
};

// One interruption notice of the feed.
struct InterruptionNotice {
  std::string instance_id;
  int64_t notice_ms = 0;        // when the notice was given
  int64_t action_ms = 0;        // when the instance is reclaimed
  std::string reason;           // "spot-interruption", "trace", "requested"
};

class Provider {
 public:
  virtual ~Provider() = default;

  // "sim" or "exec".
  virtual std::string_view kind() const = 0;

  // The offers this provider can launch (its catalog).
  virtual Expected<std::vector<cost::Offer>> list_offers() = 0;

  // Launches one instance. Errors: invalid_argument (the provider refuses the offer),
  // unavailable (the provider cannot be reached, or has no capacity now: retry later), io.
  virtual Expected<Instance> launch(const LaunchRequest& request) = 0;

  // Asks for the instance to end. Terminating a terminated or unknown instance is not an error
  // (the goal, no instance, holds).
  virtual Status terminate(const std::string& instance_id) = 0;

  // Every instance with `tag` the provider knows of, terminated ones included where it still
  // reports them.
  virtual Expected<std::vector<Instance>> describe(const std::string& tag) = 0;

  // Interruption notices given at or after since_ms, for instances with `tag`.
  virtual Expected<std::vector<InterruptionNotice>> interruptions(const std::string& tag,
                                                                  int64_t since_ms) = 0;
};

}  // namespace jobctl::cloud
