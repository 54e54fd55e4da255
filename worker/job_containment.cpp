#include "worker/job_containment.h"

#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>
#include <ostream>
#include <sstream>
#include <string_view>
#include <thread>
#include <vector>

namespace jobctl::worker {

namespace {

// The jobs of this process whose containment has not ended: the uid sweep runs only when its
// own job is the one left (another job's processes may run as the same user).
std::mutex running_mutex;
int running_jobs = 0;

std::string read_proc_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool write_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

bool cgroup_populated(const std::string& dir) {
  const std::string events = read_proc_file(dir + "/cgroup.events");
  return events.find("populated 1") != std::string::npos || (events.empty() && !read_proc_file(dir + "/cgroup.procs").empty());
}

// Kills every process in cgroup `dir` and waits (up to 10 s) for it to empty: cgroup.kill (Linux
// 5.14) kills them all at once, forks racing it included; without it, each listed process, until
// none is left.
void kill_cgroup(const std::string& dir) {
  const bool has_kill = write_file(dir + "/cgroup.kill", "1");
  for (int round = 0; round < 1000 && cgroup_populated(dir); ++round) {
    if (!has_kill) {
      std::istringstream pids(read_proc_file(dir + "/cgroup.procs"));
      for (pid_t pid; pids >> pid;) ::kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

// The session of /proc/<pid>/stat (its sixth field) and whether it is a zombie.
std::optional<pid_t> session_of(const std::string& pid, bool& zombie) {
  const std::string stat = read_proc_file("/proc/" + pid + "/stat");
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream rest(stat.substr(close + 1));
  std::string state;
  long ppid = 0, pgrp = 0, session = 0;
  if (!(rest >> state >> ppid >> pgrp >> session)) return std::nullopt;
  zombie = state == "Z" || state == "X";
  return static_cast<pid_t>(session);
}

}  // namespace

std::optional<std::string> own_cgroup_dir() {
  std::string path;
  std::istringstream cgroups(read_proc_file("/proc/self/cgroup"));
  for (std::string line; std::getline(cgroups, line);)
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  if (path.empty()) return std::nullopt;
  // The cgroup2 mount: "<id> <parent> <dev> <root> <mount point> <options> ... - cgroup2 ...".
  std::istringstream mounts(read_proc_file("/proc/self/mountinfo"));
  for (std::string line; std::getline(mounts, line);) {
    if (line.find(" - cgroup2 ") == std::string::npos) continue;
    std::istringstream fields(line);
    std::string id, parent, dev, root, mount_point;
    if (!(fields >> id >> parent >> dev >> root >> mount_point)) continue;
    // A mount of a sub-tree (a container's): the path is relative to its root.
    if (root != "/" && path.rfind(root, 0) == 0) path = path.substr(root.size());
    if (path == "/") path.clear();
    return mount_point + path;
  }
  return std::nullopt;
}

std::string job_cgroup_name(int64_t job_id, int64_t epoch) {
  return "jobctl-" + std::to_string(::getpid()) + "-job-" + std::to_string(job_id) + "-" + std::to_string(epoch);
}

int end_orphaned_job_cgroups(const std::string& parent, std::ostream& log) {
  DIR* d = ::opendir(parent.c_str());
  if (d == nullptr) return 0;
  std::vector<std::string> orphans;
  while (const dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    constexpr std::string_view prefix = "jobctl-";
    const size_t dash = name.find("-job-");
    if (name.rfind(prefix, 0) != 0 || dash == std::string::npos || dash <= prefix.size()) continue;
    const std::string pid = name.substr(prefix.size(), dash - prefix.size());
    if (pid.find_first_not_of("0123456789") != std::string::npos || pid.size() > 9) continue;
    // Its worker still runs (or its pid went to another process: then left alone, to be safe).
    if (::kill(static_cast<pid_t>(std::stol(pid)), 0) == 0 || errno == EPERM) continue;
    orphans.push_back(parent + "/" + name);
  }
  ::closedir(d);
  for (const auto& dir : orphans) {
    kill_cgroup(dir);
    log << "jobctl-worker: ended the processes of " << dir << ", left by a worker that is gone\n";
    ::rmdir(dir.c_str());
  }
  return static_cast<int>(orphans.size());
}

std::unique_ptr<JobContainment> JobContainment::start(const std::string& cgroup_parent, const std::string& name,
                                                      uint64_t memory_max_bytes,
                                                      const std::optional<process::Credentials>& run_as,
                                                      std::ostream& log) {
  std::unique_ptr<JobContainment> c(new JobContainment(log));
  c->run_as_ = run_as;
  {
    std::lock_guard<std::mutex> lock(running_mutex);
    ++running_jobs;
    c->counted_ = true;
  }
  if (cgroup_parent.empty()) return c;
  const std::string dir = cgroup_parent + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    log << "jobctl-worker: cannot make the job's cgroup " << dir << " (" << std::strerror(errno)
        << "); ending its processes by session" << (run_as ? " and user" : "") << " instead\n";
    return c;
  }
  if (memory_max_bytes > 0) {
    // The memory controller must be delegated to the parent's children; enabling it fails where
    // the parent holds processes itself (cgroup v2's rule), and the limit is then RLIMIT_AS alone.
    if (::access((dir + "/memory.max").c_str(), F_OK) != 0 &&
        read_proc_file(cgroup_parent + "/cgroup.controllers").find("memory") != std::string::npos)
      (void)write_file(cgroup_parent + "/cgroup.subtree_control", "+memory");
    if (!write_file(dir + "/memory.max", std::to_string(memory_max_bytes)))
      log << "jobctl-worker: the memory controller is not available under " << cgroup_parent
          << "; the job's memory_mb is its address-space limit only\n";
  }
  c->procs_fd_ = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (c->procs_fd_ < 0) {
    log << "jobctl-worker: cannot open " << dir << "/cgroup.procs (" << std::strerror(errno)
        << "); ending the job's processes by session instead\n";
    ::rmdir(dir.c_str());
    return c;
  }
  c->dir_ = dir;
  return c;
}

JobContainment::~JobContainment() { end_all(); }

void JobContainment::end_all() {
  if (ended_) return;
  ended_ = true;
  if (!dir_.empty()) {
    if (procs_fd_ >= 0) ::close(procs_fd_);
    procs_fd_ = -1;
    kill_cgroup(dir_);
    if (::rmdir(dir_.c_str()) != 0)
      log_ << "jobctl-worker: cannot remove the job's cgroup " << dir_ << ": " << std::strerror(errno) << "\n";
  } else {
    kill_session();
  }
  std::lock_guard<std::mutex> lock(running_mutex);
  if (dir_.empty() && run_as_ && running_jobs == 1) sweep_user();
  if (counted_) --running_jobs;
  counted_ = false;
}

void JobContainment::kill_session() {
  if (session_ <= 0) return;
  const pid_t self = ::getpid();
  for (int round = 0; round < 100; ++round) {
    int alive = 0;
    DIR* proc = ::opendir("/proc");
    if (proc == nullptr) return;
    while (const dirent* e = ::readdir(proc)) {
      const std::string pid = e->d_name;
      if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos) continue;
      bool zombie = false;
      const auto session = session_of(pid, zombie);
      if (!session || *session != session_ || zombie || std::stoi(pid) == self) continue;
      ::kill(std::stoi(pid), SIGKILL);
      ++alive;
    }
    ::closedir(proc);
    if (alive == 0) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void JobContainment::sweep_user() {
  // kill(-1) from a process of that user reaches every process of it (and nothing else): the
  // sweep forks, takes the user's identity and signals them all.
  const process::Credentials who = *run_as_;
  if (who.uid == 0 || who.uid == ::getuid()) return;  // never the worker's own user
  const pid_t pid = ::fork();
  if (pid < 0) return;
  if (pid == 0) {
    if (::setgroups(0, nullptr) != 0 || ::setgid(who.gid) != 0 || ::setuid(who.uid) != 0) ::_exit(1);
    const timespec pause{0, 10'000'000};
    for (int round = 0; round < 5 && ::kill(-1, SIGKILL) == 0; ++round) ::nanosleep(&pause, nullptr);
    ::_exit(0);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

}  // namespace jobctl::worker
