#include "scheduler/feasibility.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "cost/gpu_count_fit.h"
#include "cost/transformer_estimate.h"

namespace jobctl::scheduler {

namespace {

constexpr double kBytesPerGiB = 1024.0 * 1024.0 * 1024.0;
// The widest machine "auto" is judged against when no wider one of the model is known: eight
// GPUs, the widest box sold (DGX, HGX, the clouds' p4d/p5/a3).
constexpr int kWidestMachine = 8;

std::string gib(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", v);
  return buf;
}

std::string device_of(const Machine& m) { return m.gpu ? std::string(m.gpu->name) : m.gpu_name; }

// "an A10G", "a V100": the article as the name is spoken (letters whose names start with a vowel).
std::string with_article(const std::string& name) {
  return (!name.empty() && std::string_view("AEFHILMNORSX").find(name[0]) != std::string_view::npos ? "an " : "a ") + name;
}

// "V100-16GB x4, RTX4090 x2, cpu" — what there is, each kind once, for the messages.
std::string fleet_summary(std::span<const Machine> machines) {
  std::map<std::string, int> most;
  for (const auto& m : machines) {
    auto& n = most[device_of(m) + (m.cloud ? " (cloud)" : "")];
    n = std::max(n, m.gpu_count);
  }
  std::string s;
  size_t listed = 0;
  for (const auto& [name, n] : most) {
    if (++listed > 12) {
      s += ", ...";
      break;
    }
    s += (s.empty() ? "" : ", ") + name + " x" + std::to_string(n);
  }
  return s.empty() ? "no machine at all" : s;
}

// The most memory any variant the request names has (the rows of cost::gpu_specs()); 0 when the
// request names no model ("any", "cpu").
double most_memory_of(const cost::GpuRequest& request) {
  if (request.kind != cost::GpuRequest::Kind::model) return 0;
  double most = 0;
  for (const auto& g : cost::gpu_specs())
    if (request.matches(g)) most = std::max(most, g.memory_gb);
  return most;
}

// The fleet-independent check: the memory of the named model is a fact of the GPU table, so a
// workload that fits no variant of it (at the count asked, or at any count up to the widest
// machine for "auto") is refused whatever is registered. The table's GB figure is compared as
// GiB (24 for an RTX 4090 that reports 23.99 GiB): a margin in the job's favour, never a refusal
// of what a real device could hold.
Status check_fits_model(const Job& job, const cost::GpuRequest& request, std::span<const Machine> machines) {
  const double memory_gib = most_memory_of(request);
  if (memory_gib <= 0) return {};
  const std::string hint = "; no machine with " + with_article(request.name()) + " could ever hold it";
  if (job.workload.gpus_auto) {
    int widest = kWidestMachine;
    for (const auto& m : machines)
      if (m.gpu && request.matches(*m.gpu)) widest = std::max(widest, m.gpu_count);
    if (cost::smallest_fitting_gpus(job.workload, widest, memory_gib * kBytesPerGiB) > 0) return {};
    const int n = std::max(widest, job.workload.gpus);
    const double need = static_cast<double>(cost::vram_bytes_for(job.workload, n)) / kBytesPerGiB;
    return make_error(ErrorCode::invalid_argument,
                      "fits no count of " + request.name() + " GPUs up to " + std::to_string(widest) + ": it needs " +
                          gib(need) + " per GPU " +
                          (job.workload.transformer ? cost::parallelism_text(*job.workload.transformer, n)
                                                    : "on " + std::to_string(n) + " GPUs") +
                          "; " + with_article(request.name()) + " has " + gib(memory_gib) + hint,
                      "resources.gpus");
  }
  const double need = static_cast<double>(job.workload.vram_bytes_per_gpu) / kBytesPerGiB;
  if (need <= memory_gib) return {};
  const int gpus = std::max(job.workload.gpus, 1);
  return make_error(ErrorCode::invalid_argument,
                    "needs " + gib(need) + " per GPU" +
                        (job.workload.transformer ? " " + cost::parallelism_text(*job.workload.transformer, gpus)
                                                  : " on " + std::to_string(gpus) + " GPU" + (gpus == 1 ? "" : "s")) +
                        "; " + with_article(request.name()) + " has " + gib(memory_gib) + hint,
                    "resources.gpus");
}

Status check_fleet(const Job& job, const cost::GpuRequest& request, std::span<const Machine> machines);

}  // namespace

Status check_feasible(const Job& job, std::span<const Machine> machines) {
  auto request = cost::parse_gpu_request(job.gpu);
  if (!request) return request.error();
  if (auto st = check_fleet(job, *request, machines); !st) return st;
  // What the fleet could not refuse (no machine of the model known yet) the model's own memory may.
  return check_fits_model(job, *request, machines);
}

namespace {

// A job in an image: some usable machine runs containers, and each mount is allowed on one that does.
Status check_containers(const Job& job, const std::vector<const Machine*>& usable, const std::string& hint) {
  std::vector<const Machine*> running;
  for (const Machine* m : usable)
    if (m->containers.runs_images) running.push_back(m);
  if (running.empty())
    return make_error(ErrorCode::invalid_argument,
                      "names an image, and no machine here runs containers (jobctl-worker --container-runtime podman; "
                      "cloud.containers, slurm.containers for the workers jobctld starts)" + hint,
                      "image");
  for (size_t i = 0; i < job.mounts.size(); ++i) {
    const auto& mount = job.mounts[i];
    std::string allowed;
    bool ok = false;
    for (const Machine* m : running) {
      ok |= train::mount_allowed(mount.source, mount.writable, m->containers.mounts);
      for (const auto& a : m->containers.mounts)
        if (allowed.find(a.prefix) == std::string::npos) allowed += (allowed.empty() ? "" : ", ") + a.prefix + (a.writable ? ":rw" : "");
    }
    if (!ok) {
      const std::string field = "mounts[" + std::to_string(i) + "]";
      return make_error(ErrorCode::invalid_argument,
                        field + " (" + mount.source + (mount.writable ? ", writable" : "") +
                            ") is under no folder a machine here lets jobs mount (allowed: " +
                            (allowed.empty() ? std::string("none") : allowed) +
                            "; jobctl-worker --allow-mount, cloud.allowed_mounts, slurm.allowed_mounts)" + hint,
                        field);
    }
  }
  return {};
}

Status check_fleet(const Job& job, const cost::GpuRequest& request, std::span<const Machine> machines) {
  std::vector<const Machine*> usable;
  for (const auto& m : machines) {
    if (job.mode == train::PlacementMode::local && m.cloud) continue;
    if (job.mode == train::PlacementMode::cloud && !m.cloud) continue;
    usable.push_back(&m);
  }
  // No machine at all on the side the job may use (no worker registered yet, or no cloud): there
  // is nothing to judge it against — a daemon just started, its workers still coming up. It waits
  // for the first machine.
  if (usable.empty()) return {};
  const std::span<const Machine> all = machines;
  const std::string where = job.mode == train::PlacementMode::local   ? "no registered worker"
                            : job.mode == train::PlacementMode::cloud ? "no catalog offer that can be launched"
                                                                      : "no registered worker and no catalog offer";
  const std::string hint = "; set placement.queue_if_unplaceable to keep it queued for a machine that may come";
  if (job.image)
    if (auto st = check_containers(job, usable, hint); !st) return st;

  std::vector<const Machine*> model;
  for (const Machine* m : usable)
    if (request.kind == cost::GpuRequest::Kind::any || (m->gpu && request.matches(*m->gpu))) model.push_back(m);
  if (model.empty())
    return make_error(ErrorCode::invalid_argument,
                      where + " has " + (request.kind == cost::GpuRequest::Kind::cpu ? std::string("a CPU-only machine")
                                                                                       : "a " + request.name()) +
                          " (there is: " + fleet_summary(all) + ")" + hint,
                      "resources.gpu");

  // gpus "auto": feasible when some machine holds the workload at some count of its GPUs.
  if (job.workload.gpus_auto) {
    const Machine* largest = model.front();
    for (const Machine* m : model) {
      if (m->memory_gib <= 0 || cost::smallest_fitting_gpus(job.workload, m->gpu_count, m->memory_gib * kBytesPerGiB) > 0)
        return {};
      if (m->gpu_count * m->memory_gib > largest->gpu_count * largest->memory_gib) largest = m;
    }
    const int n = std::max(largest->gpu_count, job.workload.gpus);
    return make_error(ErrorCode::invalid_argument,
                      "fits no machine at any count of its GPUs: on the largest (" + largest->name + ", " +
                          std::to_string(largest->gpu_count) + " x " + device_of(*largest) + ") it needs " +
                          gib(static_cast<double>(cost::vram_bytes_for(job.workload, n)) / kBytesPerGiB) + " per GPU " +
                          cost::parallelism_text(*job.workload.transformer, n) + "; " + with_article(device_of(*largest)) +
                          " has " + gib(largest->memory_gib) + hint,
                      "resources.gpus");
  }

  const int gpus = std::max(job.workload.gpus, 1);
  std::vector<const Machine*> counted;
  const Machine* most = model.front();
  for (const Machine* m : model) {
    if (m->gpu_count >= gpus) counted.push_back(m);
    if (m->gpu_count > most->gpu_count) most = m;
  }
  if (counted.empty())
    return make_error(ErrorCode::invalid_argument,
                      "asks for " + std::to_string(gpus) + " x " + request.name() + "; " + where +
                          " has more than " + std::to_string(most->gpu_count) + " (" + most->name + ")" + hint,
                      "resources.gpus");

  const double need = static_cast<double>(job.workload.vram_bytes_per_gpu) / kBytesPerGiB;
  const Machine* largest = counted.front();
  std::vector<const Machine*> fitting;
  for (const Machine* m : counted) {
    if (m->memory_gib <= 0 || m->memory_gib >= need) fitting.push_back(m);
    if (m->memory_gib > largest->memory_gib) largest = m;
  }
  if (!fitting.empty()) {
    if (job.nodes <= 1) return {};
    // A gang: as many workers of one kind, or instances of one cloud offer, as it has nodes
    // (no worker registered and no cloud: nothing to judge by).
    const bool any_gang = std::any_of(all.begin(), all.end(), [](const Machine& m) { return m.gang_machines > 0; });
    const Machine* widest = fitting.front();
    for (const Machine* m : fitting) {
      if (m->gang_machines >= job.nodes) return {};
      if (m->gang_machines > widest->gang_machines) widest = m;
    }
    if (!any_gang) return {};
    std::string widest_text = "no registered worker fits it";
    if (widest->gang_machines > 0 && widest->cloud)
      widest_text = "the most of one kind is " + std::to_string(widest->gang_machines) + " instances of " + widest->name +
             " (cloud.max_instances)";
    else if (widest->gang_machines > 0)
      widest_text = "the most of one kind registered is " + std::to_string(widest->gang_machines) + " (" + device_of(*widest) +
             " x" + std::to_string(widest->gang_machines) + ")";
    return make_error(ErrorCode::invalid_argument,
                      "needs " + std::to_string(job.nodes) + " machines at once; " + widest_text +
                          " (a job on several machines runs on registered workers of one kind, on a Slurm "
                          "partition's nodes, or on instances of one cloud offer up to cloud.max_instances)" + hint,
                      "resources.nodes");
  }
  // A described workload says how it was spread over its GPUs: "with ZeRO-2 on 2 GPUs".
  if (job.workload.transformer)
    return make_error(ErrorCode::invalid_argument,
                      "needs " + gib(need) + " per GPU " + cost::parallelism_text(*job.workload.transformer, gpus) +
                          " (model state, one micro-batch's activations and the allowance); " +
                          with_article(device_of(*largest)) + " has " + gib(largest->memory_gib) + " (" + largest->name + ", the most any machine has)" + hint,
                      "resources.gpus");
  return make_error(ErrorCode::invalid_argument,
                    "needs " + gib(need) + " of memory per GPU (weights, gradients, optimizer state and the "
                    "activations of one batch); the most any " +
                        (request.kind == cost::GpuRequest::Kind::any ? std::string() : request.name() + " ") + "machine has is " +
                        gib(largest->memory_gib) + " (" + largest->name + ", " + device_of(*largest) + ")" + hint,
                    "resources.gpu");
}

}  // namespace

}  // namespace jobctl::scheduler
