#include "worker/container_launch.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <system_error>

namespace jobctl::worker {

namespace fs = std::filesystem;

namespace {

// Whether some file in `dirs` is a CDI spec that names NVIDIA GPUs.
bool has_nvidia_cdi(const std::vector<fs::path>& dirs) {
  for (const fs::path& d : dirs) {
    std::error_code ec;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string ext = it->path().extension().string();
      if (ext != ".yaml" && ext != ".yml" && ext != ".json") continue;
      std::ifstream in(it->path());
      const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (text.find("nvidia.com/gpu") != std::string::npos) return true;
    }
  }
  return false;
}

bool is_driver_library(const std::string& name) {
  for (const char* stem : {"libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so",
                           "libcudadebugger.so"})
    if (name.rfind(stem, 0) == 0) return true;
  return false;
}

bool overlaps(const std::string& a, const std::string& b) { return train::path_within(a, b) || train::path_within(b, a); }

}  // namespace

Expected<ContainerGpus> container_gpus(const std::vector<int>& indices, const HostGpuFiles& host) {
  ContainerGpus g;
  if (indices.empty()) return g;
  if (has_nvidia_cdi(host.cdi_dirs)) {
    for (int k : indices) g.devices.push_back("nvidia.com/gpu=" + std::to_string(k));
    return g;
  }
  std::error_code ec;
  for (int k : indices) {
    const fs::path node = host.dev_dir / ("nvidia" + std::to_string(k));
    if (!fs::exists(node, ec))
      return make_error(ErrorCode::unavailable, "GPU " + std::to_string(k) + " has no device node " + node.string() +
                                                    " (and no NVIDIA CDI spec in /etc/cdi or /var/run/cdi)");
    g.devices.push_back(node.string());
  }
  for (const char* control : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset"})
    if (const fs::path node = host.dev_dir / control; fs::exists(node, ec)) g.devices.push_back(node.string());
  for (const fs::path& d : host.library_dirs) {
    std::vector<std::string> found;
    for (fs::directory_iterator it(d, ec), end; !ec && it != end; it.increment(ec))
      if (is_driver_library(it->path().filename().string())) found.push_back(it->path().string());
    std::sort(found.begin(), found.end());
    for (const std::string& f : found) g.binds.push_back({f, f, false});
  }
  for (const fs::path& p : host.programs)
    if (fs::exists(p, ec)) g.binds.push_back({p.string(), p.string(), false});
  return g;
}

Expected<std::vector<ContainerBind>> mount_binds(const std::vector<train::MountSpec>& mounts,
                                                 const std::vector<train::AllowedMount>& allowed,
                                                 const fs::path& job_dir) {
  std::vector<ContainerBind> binds;
  for (size_t i = 0; i < mounts.size(); ++i) {
    const train::MountSpec& m = mounts[i];
    const std::string at = "mounts[" + std::to_string(i) + "]";
    auto refused = [&](const std::string& why) {
      return make_error(ErrorCode::permission_denied, at + " (" + m.source + " at " + m.target + "): " + why, at);
    };
    if (!train::mount_allowed(m.source, m.writable, allowed))
      return refused(m.writable ? "this worker allows no writable mount there (jobctl-worker --allow-mount PREFIX:rw)"
                                : "this worker allows no mount there (jobctl-worker --allow-mount PREFIX)");
    std::error_code ec;
    const fs::path resolved = fs::canonical(m.source, ec);
    if (ec) return refused("cannot be found on this worker (" + ec.message() + ")");
    // Links followed: a link under an allowed folder that leads out of it is refused.
    std::vector<train::AllowedMount> resolved_allowed;
    for (const train::AllowedMount& a : allowed) {
      const fs::path p = fs::weakly_canonical(a.prefix, ec);
      resolved_allowed.push_back({ec ? a.prefix : p.string(), a.writable});
    }
    if (!train::mount_allowed(resolved.string(), m.writable, resolved_allowed))
      return refused("leads to " + resolved.string() + ", outside the folders this worker allows");
    const std::string dir = fs::absolute(job_dir).string();
    if (overlaps(m.target, dir)) return refused("the target covers the job's own folder " + dir);
    binds.push_back({resolved.string(), m.target, m.writable});
  }
  return binds;
}

std::string container_name(int64_t job_id, int64_t epoch, int rank) {
  return "jobctl-job-" + std::to_string(job_id) + "-lease-" + std::to_string(epoch) +
         (rank > 0 ? "-rank-" + std::to_string(rank) : "");
}

Expected<ContainerRun> container_run(int64_t job_id, int64_t epoch, const JobProgram& program,
                                     const RunnerOptions& options, const fs::path& dir,
                                     const std::vector<std::string>& env,
                                     const std::optional<protocol::GangRendezvous>& gang,
                                     const std::optional<std::pair<uint32_t, uint32_t>>& user) {
  ContainerRun run;
  const int rank = gang ? gang->rank : 0;
  run.name = container_name(job_id, epoch, rank);
  run.labels = {{std::string(kJobLabel), std::to_string(job_id)},
                {std::string(kEpochLabel), std::to_string(epoch)},
                {std::string(kWorkerLabel), options.worker_name},
                {std::string(kWorkerDirLabel), fs::absolute(options.work_dir).string()}};
  run.image = program.image;
  run.argv = program.argv;
  run.workdir = program.cwd.string();
  run.user = user;
  run.memory_bytes = program.memory_limit_bytes;
  run.pids_limit = options.container_pids_limit;
  // A gang's nodes reach each other at the addresses their workers registered.
  run.host_network = gang.has_value();
  const std::string job_dir = fs::absolute(dir).string();
  run.binds.push_back({job_dir, job_dir, true});
  auto mounts = mount_binds(program.mounts, options.allowed_mounts, dir);
  if (!mounts) return mounts.error();
  run.binds.insert(run.binds.end(), mounts->begin(), mounts->end());
  auto gpus = container_gpus(options.gpu_indices, options.gpu_files);
  if (!gpus) return gpus.error();
  run.devices = std::move(gpus->devices);
  run.binds.insert(run.binds.end(), gpus->binds.begin(), gpus->binds.end());
  for (const std::string& e : env) {
    const auto eq = e.find('=');
    if (eq == std::string::npos) continue;  // a variable a plain process would lose: never set here
    const std::string name = e.substr(0, eq);
    if (name == "CUDA_VISIBLE_DEVICES") continue;
    run.env.push_back(e);
  }
  if (!options.gpu_indices.empty()) {
    // Inside, the container's GPUs are its only ones, numbered from 0.
    std::string visible;
    for (size_t i = 0; i < options.gpu_indices.size(); ++i) visible += (i ? "," : "") + std::to_string(i);
    run.env.push_back("CUDA_VISIBLE_DEVICES=" + visible);
  }
  return run;
}

RunningContainer::~RunningContainer() {
  if (auto st = runtime_->remove(name_); !st)
    log_ << "jobctl-worker: container " << name_ << " could not be removed: " << st.error().message << "\n";
}

int remove_leftover_containers(ContainerRuntime& runtime, const std::string& work_dir, std::ostream& log) {
  auto names = runtime.labelled(kWorkerDirLabel, fs::absolute(work_dir).string());
  if (!names) {
    log << "jobctl-worker: cannot list containers left from before: " << names.error().message << "\n";
    return 0;
  }
  int removed = 0;
  for (const std::string& name : *names) {
    if (auto st = runtime.remove(name); !st) {
      log << "jobctl-worker: " << st.error().message << "\n";
      continue;
    }
    log << "jobctl-worker: removed container " << name << ", left running by an earlier run of this worker\n";
    ++removed;
  }
  return removed;
}

}  // namespace jobctl::worker
