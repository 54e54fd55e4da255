// Refusing at submit what nothing could ever run (scheduler/feasibility.h) against the machines
// jobctld knows: every registered worker (read from the store at start, then told of each
// registration), the catalog offers its cloud provider can launch (none without one) and the
// nodes of the Slurm partitions it submits to (add_machine). With no
// machine known on the side a job may use (no worker registered yet, no cloud), that job is not
// refused: there is no fleet to judge it against (scheduler/feasibility.h).
//
// Thread safety: every method is safe from any thread (one mutex).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "base/expected.h"
#include "base/mutex.h"
#include "cost/price_catalog.h"
#include "daemon/jobs/worker_capabilities.h"
#include "daemon/store/store.h"
#include "scheduler/feasibility.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::jobs {

class Feasibility {
 public:
  // `launchable`: the offers placement may launch (empty: no cloud provider, no cloud);
  // `max_instances`: how many instances of one of them a gang may take (cloud.max_instances).
  // `cloud_containers`: what the instances jobctld launches offer a job in an image.
  Feasibility(const std::vector<cost::Offer>& launchable, int max_instances,
              const scheduler::ContainerSupport& cloud_containers = {});

  // Every worker registered so far. Errors: the store's.
  [[nodiscard]] Status load(store::Store& store);
  void add_worker(int64_t id, const std::string& name, const WorkerCapabilities& caps) JOBCTL_EXCLUDES(mu_);
  // Another machine jobs may be placed on: a Slurm partition's node (owned GPUs, cloud false).
  void add_machine(scheduler::Machine machine) JOBCTL_EXCLUDES(mu_);

  // ok, or the refusal (invalid_argument naming resources.gpu or resources.gpus).
  [[nodiscard]] Status check(const train::JobSpec& spec) const JOBCTL_EXCLUDES(mu_);

 private:
  void add_locked(scheduler::Machine m) JOBCTL_REQUIRES(mu_);

  mutable Mutex mu_;
  // One machine per kind (device, count, memory, cloud, what it offers jobs in an image): the
  // first one seen names it; its gang_machines counts the workers of that kind.
  std::map<std::tuple<std::string, int, double, bool, std::string>, scheduler::Machine> machines_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::jobs
