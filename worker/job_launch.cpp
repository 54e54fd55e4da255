#include "worker/job_launch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <system_error>

#include "worker/oom_kill.h"

namespace jobctl::worker {

namespace fs = std::filesystem;

namespace {

// Gives the folder open as `dir_fd` and everything in it to `who`, each folder's entries before
// the folder itself, so that the user may change nothing in a folder while the walk is in it.
// Every entry is reached by its name in a folder held open and examined on a descriptor of its
// own: subfolders opened with O_NOFOLLOW (a folder swapped for a link is an error, never
// entered), anything else opened with O_PATH | O_NOFOLLOW and changed through that descriptor (a
// link itself, never its target). A regular file of someone else with more than one name (a hard
// link into the tree) is refused.
Status give_folder(int dir_fd, const std::string& shown, const process::Credentials& who, int depth) {
  auto failed = [&](const std::string& what) {
    return make_error(ErrorCode::io, "cannot give " + what + " to uid " + std::to_string(who.uid) + ": " + std::strerror(errno));
  };
  if (depth > 256) return make_error(ErrorCode::io, "cannot give " + shown + ": folders more than 256 deep");
  const int list_fd = ::openat(dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (list_fd < 0) return failed(shown);
  DIR* listing = ::fdopendir(list_fd);
  if (listing == nullptr) {
    ::close(list_fd);
    return failed(shown);
  }
  Status result;
  while (result) {
    errno = 0;
    const dirent* e = ::readdir(listing);
    if (e == nullptr) {
      if (errno != 0) result = failed(shown);
      break;
    }
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string at = shown + "/" + name;
    const int fd = ::openat(dir_fd, name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
      result = failed(at);
      break;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      result = failed(at);
    } else if (S_ISDIR(st.st_mode)) {
      const int sub = ::openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (sub < 0) result = failed(at);
      else {
        result = give_folder(sub, at, who, depth + 1);
        ::close(sub);
      }
    } else if (S_ISREG(st.st_mode) && st.st_nlink > 1 && st.st_uid != who.uid) {
      result = make_error(ErrorCode::io, "cannot give " + at + " to uid " + std::to_string(who.uid) +
                                             ": a file of another user with other names (a hard link)");
    } else if (::fchownat(fd, "", who.uid, who.gid, AT_EMPTY_PATH) != 0) {
      result = failed(at);
    }
    ::close(fd);
  }
  ::closedir(listing);
  if (result && ::fchown(dir_fd, who.uid, who.gid) != 0) return failed(shown);
  return result;
}

// Gives the folder `root` (itself no link) and everything under it to `who`.
Status give_tree(const fs::path& root, const process::Credentials& who) {
  const int fd = ::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::io, "cannot open " + root.string() + ": " + std::strerror(errno));
  auto st = give_folder(fd, root.string(), who, 0);
  ::close(fd);
  return st;
}

// The job protocol's environment (docs/job-protocol.md); JOBCTL_RESUME_FROM only when resuming and
// a gang's variables only for a job across machines (removed otherwise, so that those in the
// worker's own environment never leak in).
std::vector<std::string> job_environment(int64_t job_id, const JobProgram& program, const RunnerOptions& options,
                                         const fs::path& out_dir, const fs::path& output_dir,
                                         const std::optional<std::string>& resume_path,
                                         const std::optional<protocol::GangRendezvous>& gang) {
  std::vector<std::string> env = program.env;
  // The worker's credentials never reach the program (docs/security.md): its API token leaves
  // the environment (the worker secret lives only in this process's memory).
  env.push_back("JOBCTL_TOKEN");
  env.push_back("JOBCTL_JOB_ID=" + std::to_string(job_id));
  env.push_back("JOBCTL_CHECKPOINT_DIR=" + out_dir.string());
  env.push_back("JOBCTL_OUTPUT_DIR=" + output_dir.string());
  env.push_back(resume_path ? "JOBCTL_RESUME_FROM=" + *resume_path : std::string("JOBCTL_RESUME_FROM"));
  const auto gang_variable = [&](const char* name, const std::string& value) {
    env.push_back(gang ? std::string(name) + "=" + value : std::string(name));
  };
  std::string addrs;
  if (gang)
    for (const auto& a : gang->addrs) addrs += (addrs.empty() ? "" : ",") + a;
  gang_variable("JOBCTL_NODE_RANK", gang ? std::to_string(gang->rank) : "");
  gang_variable("JOBCTL_NUM_NODES", gang ? std::to_string(gang->nodes) : "");
  gang_variable("JOBCTL_NODE_ADDRS", addrs);
  gang_variable("JOBCTL_MASTER_ADDR", gang ? gang->master_addr : "");
  gang_variable("JOBCTL_MASTER_PORT", gang ? std::to_string(gang->master_port) : "");
  gang_variable("JOBCTL_GPUS_PER_NODE", gang ? std::to_string(gang->gpus_per_node) : "");
  if (!options.gpu_indices.empty()) {
    // nvidia-smi numbers GPUs in PCI bus order; make CUDA agree before picking them.
    env.push_back("CUDA_DEVICE_ORDER=PCI_BUS_ID");
    std::string visible;
    for (int k : options.gpu_indices) visible += (visible.empty() ? "" : ",") + std::to_string(k);
    env.push_back("CUDA_VISIBLE_DEVICES=" + visible);
  }
  return env;
}

}  // namespace

fs::path job_output_dir(const fs::path& dir) { return dir / "outputs"; }

Expected<LaunchedJob> launch_job(int64_t job_id, int64_t epoch, const JobProgram& program, const RunnerOptions& options,
                                 const fs::path& dir, const std::optional<std::string>& resume_path,
                                 const std::optional<protocol::GangRendezvous>& gang, std::ostream& log) {
  const fs::path out_dir = dir / "out";
  const fs::path output_dir = job_output_dir(dir);
  const std::vector<std::string> env =
      job_environment(job_id, program, options, out_dir, output_dir, resume_path, gang);
  std::error_code ec;
  for (const fs::path& d : {out_dir, output_dir}) {
    fs::create_directories(d, ec);
    if (ec) return make_error(ErrorCode::io, "cannot create " + d.string() + ": " + ec.message());
  }
  if (options.run_as) {
    // The folders the program writes become its user's; the job's folder (its spec, the
    // uploads' links) stays the worker's.
    for (const fs::path& d : {out_dir, output_dir, program.cwd})
      if (d != dir)
        if (auto st = give_tree(d, *options.run_as); !st) return st.error();
  }
  // Everything the program starts ends with it: its own cgroup where the machine has one, else
  // its session (and its user's processes, with --run-as), worker/job_containment.h. The SIGTERM
  // and the SIGKILL the runner sends go to its process group.
  // A gang's programs run with the gang's own group: its rendezvous port admits that group alone
  // (worker/gang_firewall.h). Its folders keep the user's group; the worker checks owners by uid.
  std::optional<process::Credentials> run_as = options.run_as;
  if (run_as && gang && options.gang_gids) run_as->gid = gang_gid(*options.gang_gids, job_id);
  LaunchedJob job;
  std::vector<std::string> argv = program.argv;
  std::vector<std::string> spawn_env = env;
  uint64_t process_memory_limit = program.memory_limit_bytes;
  if (!program.image.empty()) {
    if (!options.containers)
      return make_error(ErrorCode::permission_denied, "this worker runs no job in an image (no --container-runtime)");
    std::optional<std::pair<uint32_t, uint32_t>> user;
    if (run_as) user = std::pair{run_as->uid, run_as->gid};
    auto run = container_run(job_id, epoch, program, options, dir, env, gang, user);
    if (!run) return run.error();
    // The runtime runs as the worker (rootful: the job's user is the container's), with the
    // worker's environment less its credentials; the program's environment travels in the run.
    // Its memory limit is the container's (an address-space limit would stop the runtime itself).
    argv = options.containers->run_command(*run);
    spawn_env = {"JOBCTL_TOKEN"};
    run_as.reset();
    process_memory_limit = 0;
    job.container = std::make_unique<RunningContainer>(options.containers, run->name, log);
  }
  job.containment = JobContainment::start(options.cgroup_parent, job_cgroup_name(job_id, epoch), process_memory_limit,
                                          job.container ? std::nullopt : options.run_as, log);
  job.oom_kills_before = oom_kill_count();
  process::SpawnOptions spawn{.cwd = program.cwd.string(),
                               .env = spawn_env,
                               .address_space_limit_bytes = process_memory_limit,
                               .new_session = job.containment->procs_fd() < 0,
                               .cgroup_procs_fd = job.containment->procs_fd(),
                               .run_as = run_as};
  auto spawned = process::Child::spawn(argv, spawn);
  if (!spawned) return make_error(ErrorCode::io, "cannot start " + program.label + ": " + spawned.error().message);
  job.containment->set_session((*spawned)->pid());
  job.child = std::move(*spawned);
  return job;
}

}  // namespace jobctl::worker
