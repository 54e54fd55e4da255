// Whether anything could ever run a job: asked at submit, so that a job no registered worker and
// no catalog offer can run (the GPU model, the GPU count, the memory) is refused at once with the
// field and the reason, instead of being accepted and waiting for ever (docs/api.md, "Refused at
// submit"). A spec with placement.queue_if_unplaceable skips it (it waits for a machine that may
// come).
//
// First, whatever the fleet holds: a job naming a GPU model whose workload fits no variant of it
// (cost::gpu_specs()'s memory) at the count asked — for gpus "auto", at any count up to the widest
// machine of that model known, at least 8 — is refused (field resources.gpus, with the memory it
// needs per GPU and what the GPU has): no machine that may come could hold it.
//
// Then the checks, in order, each over the machines the placement mode allows (local: registered
// workers; cloud: catalog offers that can be launched; auto: both):
//   model   field resources.gpu: no machine has a device the request names ("any": every device,
//           a CPU too; "cpu": CPUs only)
//   count   field resources.gpus: those machines have fewer such devices than asked
//   memory  field resources.gpu: the job's memory per GPU (cost::estimate_vram) fits none of them
//           (a CPU machine's memory is its RAM); a machine that reported no memory fits
//   nodes   field resources.nodes: a gang needs more machines of one kind than there are (registered
//           workers of one kind, or cloud.max_instances instances of one launchable offer);
//           judged only once some machine could hold a gang at all
// With no machine at all on the side the mode allows, none of these is refused: there is no fleet to
// judge the job against (no worker registered yet), and it waits for the first one.
//
// Thread safety: pure functions over values.
#pragma once

#include <span>
#include <string>

#include "base/expected.h"
#include "cost/gpu_specs.h"
#include "scheduler/job.h"
#include "scheduler/worker.h"

namespace jobctl::scheduler {

// A machine that could run jobs: a registered worker or a catalog offer.
struct Machine {
  std::string name;                     // "worker 3 (gpu-box)", "aws:p5.48xlarge"
  const cost::GpuSpec* gpu = nullptr;   // its devices' variant (the "cpu" row for a CPU-only
                                        // machine); nullptr: a GPU the table does not know
  std::string gpu_name;                 // as reported, for the message when gpu is unknown
  int gpu_count = 1;
  double memory_gib = 0;                // per device (RAM for a CPU machine); 0: not reported
  bool cloud = false;
  // How many such machines one gang may span: registered workers of this kind; a Slurm
  // partition's nodes times the tasks one node runs; for a cloud offer, the instances of it that
  // may run at once (cloud.max_instances).
  int gang_machines = 0;
  ContainerSupport containers;          // jobs in an image there, with which mounts
};

// ok, or an invalid_argument error naming the field with the reason and what the fleet has.
[[nodiscard]] Status check_feasible(const Job& job, std::span<const Machine> machines);

}  // namespace jobctl::scheduler
