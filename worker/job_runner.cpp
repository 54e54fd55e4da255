#include "worker/job_runner.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <sstream>

#include "bundle/code_bundle.h"
#include "process/child.h"
#include "process/line_splitter.h"
#include "worker/checkpoint_uploader.h"
#include "worker/job_containment.h"
#include "worker/oom_kill.h"
#include "worker/job_protocol.h"

namespace jobctl::worker {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

constexpr size_t kLogTail = 4096;
constexpr size_t kPendingLog = 192 << 10;  // below jobctld's per-heartbeat limit (256 KiB)

const char* exit_code_meaning(int code) {
  switch (code) {
    case 1: return "internal error";
    case 2: return "bad usage or invalid spec";
    case 3: return "training data could not be read";
    case 4: return "checkpoint problem";
    case 5: return "no usable GPU";
    case 6: return "not enough memory on this machine";
    default: return nullptr;
  }
}

bool is_transport_error(const Error& e) {
  return e.code == ErrorCode::unavailable || e.code == ErrorCode::storage_unavailable ||
         e.code == ErrorCode::timeout || e.code == ErrorCode::io || e.code == ErrorCode::internal;
}

// Gives `root` and everything under it (links themselves, never followed) to `who`.
Status give_tree(const fs::path& root, const process::Credentials& who) {
  auto give = [&](const fs::path& p) -> Status {
    if (::lchown(p.c_str(), who.uid, who.gid) != 0)
      return make_error(ErrorCode::io, "cannot give " + p.string() + " to uid " + std::to_string(who.uid) + ": " +
                                           std::strerror(errno));
    return {};
  };
  if (auto st = give(root); !st) return st;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec))
    if (auto st = give(it->path()); !st) return st;
  if (ec) return make_error(ErrorCode::io, "cannot list " + root.string() + ": " + ec.message());
  return {};
}

// Whether `path` itself (not a link's target) is a regular file of `uid`.
bool owned_regular_file(const fs::path& path, uid_t uid) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid;
}

int ms_until(Clock::time_point t) {
  const auto d = std::chrono::duration_cast<std::chrono::milliseconds>(t - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(d, 0, 60'000));
}

}  // namespace

Expected<JobProgram> JobRunner::program_for(const Lease& lease, const fs::path& spec_path) const {
  const fs::path dir = spec_path.parent_path();
  JobProgram p;
  json spec = json::parse(lease.spec_json, nullptr, false);
  if (spec.is_discarded() || !spec.is_object())
    return make_error(ErrorCode::invalid_argument, "the lease's spec is not a JSON object", "spec");
  p.grace_ms = options_.kill_grace_ms;
  if (auto ck = spec.find("checkpoint"); ck != spec.end() && ck->is_object()) {
    auto g = ck->find("grace_s");
    if (g != ck->end() && g->is_number() && g->get<double>() > 0)
      p.grace_ms = static_cast<int>(std::min(3600.0, g->get<double>()) * 1000);
  }
  if (auto mem = spec.find("resources"); mem != spec.end() && mem->is_object()) {
    auto mb = mem->find("memory_mb");
    if (mb != mem->end() && mb->is_number_integer() && mb->get<int64_t>() > 0)
      p.memory_limit_bytes = static_cast<uint64_t>(mb->get<int64_t>()) * 1024 * 1024;
  }
  auto command = spec.find("command");
  if (command == spec.end() || command->is_null()) {
    // A built-in model: jobctl-train, which speaks the same protocol (its --out and --resume come
    // from JOBCTL_CHECKPOINT_DIR and JOBCTL_RESUME_FROM).
    p.label = "jobctl-train";
    p.cwd = dir;
    p.argv = {options_.trainer, "--spec", spec_path.string(), "--device", options_.device,
              "--log-every", std::to_string(std::max(1, options_.log_every))};
    if (!options_.data_dir.empty()) {
      p.argv.push_back("--data-dir");
      p.argv.push_back(options_.data_dir);
    }
    if (options_.threads > 0) {
      p.argv.push_back("--threads");
      p.argv.push_back(std::to_string(options_.threads));
    }
    return p;
  }
  if (!options_.allow_commands)
    return make_error(ErrorCode::permission_denied,
                      "this worker does not run command jobs (it was started without --allow-commands)", "command");
  if (!command->is_array() || command->empty())
    return make_error(ErrorCode::invalid_argument, "command must be a non-empty array of strings", "command");
  for (const auto& a : *command) {
    if (!a.is_string()) return make_error(ErrorCode::invalid_argument, "command must be an array of strings", "command");
    p.argv.push_back(a.get<std::string>());
  }
  if (auto env = spec.find("env"); env != spec.end() && env->is_object())
    for (const auto& [k, v] : env->items())
      if (v.is_string()) p.env.push_back(k + "=" + v.get<std::string>());
  p.command = true;
  if (auto b = spec.find("bundle"); b != spec.end() && b->is_string()) p.bundle = b->get<std::string>();
  p.label = p.argv.front();
  p.cwd = dir / "work";
  return p;
}

const char* to_string(RunOutcome o) {
  switch (o) {
    case RunOutcome::succeeded: return "succeeded";
    case RunOutcome::failed: return "failed";
    case RunOutcome::cancelled: return "cancelled";
    case RunOutcome::lease_lost: return "lease lost";
    case RunOutcome::released: return "released";
  }
  return "?";
}

JobRunner::JobRunner(client::ApiClient& api, int64_t worker_id, RunnerOptions options,
                     const StopSource& stop, std::ostream& log)
    : api_(api), worker_id_(worker_id), options_(std::move(options)), stop_(stop), log_(log) {}

Lease JobRunner::lease_from_json(const json& j) {
  Lease l;
  l.job_id = j.value("job_id", int64_t{0});
  l.epoch = j.value("epoch", int64_t{0});
  l.name = j.value("name", std::string());
  l.spec_json = j.contains("spec") ? j["spec"].dump() : std::string("{}");
  if (j.contains("resume") && j["resume"].is_object()) {
    const json& r = j["resume"];
    StoredCheckpoint c;
    c.step = r.value("step", int64_t{0});
    c.bytes = r.value("bytes", int64_t{0});
    const std::string crc = r.value("crc32c", std::string("0"));
    c.crc32c = static_cast<uint32_t>(std::strtoul(crc.c_str(), nullptr, 16));
    l.resume = c;
  }
  if (j.contains("gpus") && j["gpus"].is_array())
    for (const auto& k : j["gpus"])
      if (k.is_number_integer()) l.gpus.push_back(k.get<int>());
  return l;
}

std::vector<StoredCheckpoint> JobRunner::resume_candidates(const Lease& lease, CheckpointTransfer& transfer) {
  if (!lease.resume) return {};
  // Every stored checkpoint, newest first, so that one that cannot be used falls back to the
  // previous one.
  if (auto listed = transfer.list(lease.job_id)) return std::move(*listed);
  else
    log_ << "jobctl-worker: job " << lease.job_id << ": cannot list checkpoints (" << listed.error().message
         << "); trying the one the lease named\n";
  return {*lease.resume};
}

std::optional<std::string> JobRunner::next_resume(const Lease& lease, CheckpointTransfer& transfer,
                                                  std::vector<StoredCheckpoint>& candidates, const std::string& out_dir,
                                                  int64_t& step) {
  while (!candidates.empty()) {
    const StoredCheckpoint c = candidates.front();
    char name[64];
    std::snprintf(name, sizeof name, "ckpt-%012lld.ckpt", static_cast<long long>(c.step));
    const std::string dest = (fs::path(out_dir) / name).string();
    const auto t0 = Clock::now();
    auto st = transfer.download(lease.job_id, c, dest);
    if (st) {
      log_ << "jobctl-worker: job " << lease.job_id << ": resuming from the checkpoint at step " << c.step
           << " (" << c.bytes << " bytes, downloaded in "
           << std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count() << " ms)\n";
      step = c.step;
      return dest;
    }
    // A corrupt stored copy is rejected like one the trainer refuses; a transfer that failed
    // only skips it this time.
    if (st.error().code == ErrorCode::corrupt_checkpoint) reject_checkpoint(lease, candidates, st.error().message);
    else candidates.erase(candidates.begin());
    log_ << "jobctl-worker: job " << lease.job_id << ": checkpoint at step " << c.step
         << " unusable: " << st.error().message << "; trying the previous one\n";
  }
  log_ << "jobctl-worker: job " << lease.job_id << ": no stored checkpoint could be used; starting from the beginning\n";
  return std::nullopt;
}

void JobRunner::reject_checkpoint(const Lease& lease, std::vector<StoredCheckpoint>& candidates, const std::string& why) {
  const int64_t step = candidates.front().step;
  candidates.erase(candidates.begin());
  json body = {{"worker_id", worker_id_},
               {"epoch", lease.epoch},
               {"error", why.substr(0, 4000)},
               {"fallback_step", candidates.empty() ? json(nullptr) : json(candidates.front().step)}};
  report("checkpoint " + std::to_string(step) + " rejected", lease.job_id,
         [&] { return api_.reject_checkpoint(lease.job_id, step, body); }, stop_wait());
}

void JobRunner::report(const std::string& what, int64_t job_id, const std::function<Expected<json>()>& send,
                       const RetryWait& wait) {
  // Six attempts, pauses from 0.5 s doubling (about 15 s in all).
  constexpr RetryPolicy kReportRetry{.max_attempts = 6,
                                     .first_delay = std::chrono::milliseconds(500),
                                     .max_delay = std::chrono::seconds(8)};
  auto r = retry(
      kReportRetry, wait, send, [](const Expected<json>& a) { return !a && is_transport_error(a.error()); },
      [&](const Expected<json>& a, int attempt, std::chrono::milliseconds pause) {
        log_ << "jobctl-worker: reporting job " << job_id << " " << what << " (attempt " << attempt
             << "): " << a.error().message << "; retrying in " << pause.count() << " ms\n";
      });
  if (r.result) {
    log_ << "jobctl-worker: reported job " << job_id << " " << what << "\n";
  } else {
    log_ << "jobctl-worker: reporting job " << job_id << " " << what << " failed"
         << (r.interrupted ? " (the worker is stopping)" : "") << ": " << r.result.error().message << "\n";
  }
}

RunOutcome JobRunner::fail_job(const Lease& lease, const std::string& why) {
  log_ << "jobctl-worker: job " << lease.job_id << " failed: " << why << "\n";
  json body = {{"worker_id", worker_id_}, {"epoch", lease.epoch}, {"error", why}};
  report("failed", lease.job_id, [&] { return api_.fail(lease.job_id, body); }, stop_wait());
  return RunOutcome::failed;
}

RunOutcome JobRunner::run(const Lease& lease) {
  auto fail_job = [&](const std::string& why) { return this->fail_job(lease, why); };

  // The job's folder: the spec, the checkpoints (out/) and a command job's own folder (work/).
  const fs::path dir = fs::absolute(fs::path(options_.work_dir)) /
                       ("job-" + std::to_string(lease.job_id) + "-lease-" + std::to_string(lease.epoch));
  const fs::path spec_path = dir / "spec.json";
  const fs::path out_dir = dir / "out";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail_job("cannot create " + dir.string() + ": " + ec.message());
  {
    std::ofstream spec(spec_path, std::ios::trunc);
    spec << lease.spec_json << "\n";
    if (!spec.flush()) return fail_job("cannot write " + spec_path.string());
  }
  CheckpointTransfer transfer(options_.transfer, stop_wait());
  {
    auto program = program_for(lease, spec_path);
    if (!program) return fail_job(program.error().message);
    fs::create_directories(program->cwd, ec);
    if (ec) return fail_job("cannot create " + program->cwd.string() + ": " + ec.message());
    if (!program->bundle.empty()) {
      // The job's code, unpacked fresh for every lease into the program's working directory.
      auto bytes = transfer.download_bundle(program->bundle);
      if (!bytes) return fail_job("cannot fetch the code bundle " + program->bundle + ": " + bytes.error().message);
      auto unpacked = bundle::unpack_bundle(*bytes, program->cwd.string());
      if (!unpacked) return fail_job("refused the code bundle " + program->bundle + ": " + unpacked.error().message);
      log_ << "jobctl-worker: job " << lease.job_id << ": unpacked its code bundle (" << unpacked->files << " files, "
           << unpacked->file_bytes << " bytes) into " << program->cwd.string() << "\n";
    }
  }

  // Resume from the newest stored checkpoint; one the trainer refuses is rejected (the daemon
  // deletes it, with an event) and the previous one tried, then a fresh start. The job fails only
  // when the fresh start fails.
  std::vector<StoredCheckpoint> candidates = resume_candidates(lease, transfer);
  for (;;) {
    std::optional<std::string> resume_path;
    int64_t resume_step = -1;
    if (!candidates.empty()) {
      fs::create_directories(out_dir, ec);
      // A program running as another user owns out/ and could plant a link where the worker
      // writes: the worker then downloads into the job's folder, which stays its own.
      resume_path = next_resume(lease, transfer, candidates, (options_.run_as ? dir : out_dir).string(), resume_step);
    }
    std::string refused;
    const RunOutcome outcome = attempt(lease, dir, resume_path, refused);
    if (refused.empty()) return outcome;
    log_ << "jobctl-worker: job " << lease.job_id << ": cannot resume from the checkpoint at step " << resume_step
         << " (" << refused << "); falling back\n";
    fs::remove(*resume_path, ec);  // not left among the trainer's own checkpoints
    reject_checkpoint(lease, candidates, refused);
  }
}

RunOutcome JobRunner::attempt(const Lease& lease, const fs::path& dir, const std::optional<std::string>& resume_path,
                              std::string& resume_refused) {
  const json lease_ref = {{"worker_id", worker_id_}, {"epoch", lease.epoch}};
  const RetryWait stop_wait = this->stop_wait();
  auto fail_job = [&](const std::string& why) { return this->fail_job(lease, why); };
  const fs::path spec_path = dir / "spec.json";
  const fs::path out_dir = dir / "out";
  auto program = program_for(lease, spec_path);
  if (!program) return fail_job(program.error().message);
  // The job protocol's environment (docs/job-protocol.md); JOBCTL_RESUME_FROM only when resuming
  // (removed otherwise, so that one in the worker's own environment never leaks in).
  std::vector<std::string> env = program->env;
  // The worker's credentials never reach the program (docs/security.md): its API token leaves
  // the environment (the worker secret lives only in this process's memory).
  env.push_back("JOBCTL_TOKEN");
  env.push_back("JOBCTL_JOB_ID=" + std::to_string(lease.job_id));
  env.push_back("JOBCTL_CHECKPOINT_DIR=" + out_dir.string());
  env.push_back(resume_path ? "JOBCTL_RESUME_FROM=" + *resume_path : std::string("JOBCTL_RESUME_FROM"));
  if (!options_.gpu_indices.empty()) {
    // nvidia-smi numbers GPUs in PCI bus order; make CUDA agree before picking them.
    env.push_back("CUDA_DEVICE_ORDER=PCI_BUS_ID");
    std::string visible;
    for (int k : options_.gpu_indices) visible += (visible.empty() ? "" : ",") + std::to_string(k);
    env.push_back("CUDA_VISIBLE_DEVICES=" + visible);
  }
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return fail_job("cannot create " + out_dir.string() + ": " + ec.message());
  if (options_.run_as) {
    // The folders the program writes become its user's; the job's folder (its spec, the
    // uploads' links) stays the worker's.
    for (const fs::path& d : {out_dir, program->cwd})
      if (d != dir)
        if (auto st = give_tree(d, *options_.run_as); !st) return fail_job(st.error().message);
  }
  // Everything the program starts ends with it: its own cgroup where the machine has one, else
  // its session (and its user's processes, with --run-as), worker/job_containment.h. The SIGTERM
  // and the SIGKILL below go to its process group.
  auto containment = JobContainment::start(
      options_.cgroup_parent, job_cgroup_name(lease.job_id, lease.epoch), program->memory_limit_bytes, options_.run_as,
      log_);
  const std::optional<int64_t> oom_kills_before = oom_kill_count();
  bool worker_killed_it = false;  // a SIGKILL from the worker itself (kill_grace_ms passed)
  auto spawned = process::Child::spawn(program->argv, {.cwd = program->cwd.string(),
                                                       .env = env,
                                                       .address_space_limit_bytes = program->memory_limit_bytes,
                                                       .new_session = containment->procs_fd() < 0,
                                                       .cgroup_procs_fd = containment->procs_fd(),
                                                       .run_as = options_.run_as});
  if (!spawned) return fail_job("cannot start " + program->label + ": " + spawned.error().message);
  containment->set_session((*spawned)->pid());
  process::Child& child = **spawned;
  log_ << "jobctl-worker: job " << lease.job_id << " (" << lease.name << ", lease epoch "
       << lease.epoch << ") started " << program->label << " as pid " << child.pid() << " in "
       << program->cwd.string() << "\n";

  JobProtocol progress;
  process::LineSplitter out_lines, err_lines;
  std::string log_tail;  // the end of the job's log (stdout's other lines and stderr), for a failure
  enum class Stop { none, cancel, lost, release, move } stop = Stop::none;
  // When to escalate to SIGKILL (time_point::max(): not armed).
  Clock::time_point kill_at = Clock::time_point::max();
  const auto interval = std::chrono::milliseconds(std::max(100, options_.heartbeat_interval_ms));
  auto next_heartbeat = Clock::now() + interval;
  bool heartbeat_now = false;

  auto stop_trainer = [&](Stop why) {
    stop = why;
    child.signal_group(SIGTERM);
    kill_at = Clock::now() + std::chrono::milliseconds(program->grace_ms);
  };
  const auto armed = [&] { return kill_at != Clock::time_point::max(); };
  bool first_step_logged = false;
  // Every checkpoint the trainer writes goes to the daemon at once, on the uploader's thread (the
  // final one excepted: the job completes with it). A fenced-off upload means the lease is gone.
  CheckpointUploader uploader(options_.transfer, lease.job_id, worker_id_, lease.epoch, log_);
  int64_t last_enqueued_step = -1;
  auto upload_checkpoint = [&](const json& ck) {
    if (ck.value("reason", std::string()) == "final") return;  // the job completes with it
    fs::path path = ck["path"].get<std::string>();
    if (path.is_relative()) path = program->cwd / path;
    // The step it was taken at: the line's, else the last progress line's; a program that names
    // none gets one past the previous checkpoint's, so each upload is the newest.
    int64_t step = -1;
    if (ck.contains("step") && ck["step"].is_number_integer()) step = ck["step"].get<int64_t>();
    else if (progress.progress().contains("step") && progress.progress()["step"].is_number_integer())
      step = progress.progress()["step"].get<int64_t>();
    if (step < 0 || (program->command && step < last_enqueued_step)) step = last_enqueued_step + 1;
    last_enqueued_step = step;
    // The program may prune or replace the file (the protocol asks it to replace atomically):
    // a hard link keeps this one for the uploader.
    const std::string copy = (dir / ("upload-" + std::to_string(step) + ".ckpt")).string();
    std::error_code link_ec;
    fs::remove(copy, link_ec);
    fs::create_hard_link(path, copy, link_ec);
    if (options_.run_as && !owned_regular_file(link_ec ? path : fs::path(copy), options_.run_as->uid)) {
      // The worker reads with more rights than the program: only a file of the program's own.
      log_ << "jobctl-worker: job " << lease.job_id << ": checkpoint " << path.string()
           << " is not a file of the job's user; not uploaded\n";
      fs::remove(copy, link_ec);
      return;
    }
    uploader.enqueue(step, link_ec ? path.string() : copy, ck.value("reason", std::string("program")), !link_ec);
  };
  // The job's log goes to jobctld with the heartbeats (jobctl logs -f); what piles up while the
  // daemon cannot be reached is capped, the oldest dropped with a marker.
  std::string pending_log;
  int64_t pending_dropped = 0;
  auto append_log = [&](const std::string& line) {
    log_ << "[job " << lease.job_id << "] " << line << "\n";
    log_tail += line;
    log_tail += '\n';
    if (log_tail.size() > kLogTail) log_tail.erase(0, log_tail.size() - kLogTail);
    pending_log += line;
    pending_log += '\n';
    if (pending_log.size() > kPendingLog) {
      const size_t cut = pending_log.size() - kPendingLog / 2;
      pending_dropped += static_cast<int64_t>(cut);
      pending_log.erase(0, cut);
    }
  };
  auto take_log = [&]() {
    std::string text;
    if (pending_dropped > 0)
      text = "[... " + std::to_string(pending_dropped) + " bytes of output dropped on the worker ...]\n";
    text += pending_log;
    return text;
  };
  auto log_sent = [&] {
    pending_log.clear();
    pending_dropped = 0;
  };
  auto on_stdout_line = [&](const std::string& line) {
    switch (progress.apply(line)) {
      case JobProtocol::Kind::start:
      case JobProtocol::Kind::epoch:
        heartbeat_now = true;
        break;
      case JobProtocol::Kind::checkpoint:
        if (progress.last_checkpoint()) upload_checkpoint(*progress.last_checkpoint());
        break;
      case JobProtocol::Kind::log:
        append_log(line);
        break;
      case JobProtocol::Kind::progress:
        if (resume_path && !first_step_logged) {  // how long a recovery took (bench/recovery)
          first_step_logged = true;
          log_ << "jobctl-worker: job " << lease.job_id << ": first resumed step "
               << progress.progress().value("step", int64_t{0}) << "\n";
        }
        break;
      default:
        break;
    }
  };
  auto on_stderr_line = [&](const std::string& line) { append_log(line); };

  char buf[65536];
  bool program_ended = false;
  while (child.stdout_fd() >= 0 || child.stderr_fd() >= 0) {
    int timeout = ms_until(next_heartbeat);
    if (heartbeat_now) timeout = 0;
    if (armed()) timeout = std::min(timeout, ms_until(kill_at));
    pollfd fds[3] = {{child.stdout_fd(), POLLIN, 0},
                     {child.stderr_fd(), POLLIN, 0},
                     {stop == Stop::none ? stop_.fd() : -1, POLLIN, 0}};
    const int n = ::poll(fds, 3, timeout);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && n > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t got = ::read(fds[i].fd, buf, sizeof buf);
      if (got > 0) {
        for (auto& line : (i == 0 ? out_lines : err_lines).feed(std::string_view(buf, static_cast<size_t>(got))))
          i == 0 ? on_stdout_line(line) : on_stderr_line(line);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        if (i == 0) {
          if (auto rest = out_lines.finish()) on_stdout_line(*rest);
          child.close_stdout();
        } else {
          if (auto rest = err_lines.finish()) on_stderr_line(*rest);
          child.close_stderr();
        }
      }
    }
    if (!program_ended && child.try_wait()) {
      // The job ends with its program: what it left running (which may hold the pipes open)
      // ends too.
      program_ended = true;
      containment->end_all();
    }
    if (stop == Stop::none && (stop_.requested() || (n > 0 && fds[2].revents != 0))) {
      log_ << "jobctl-worker: stopping; interrupting job " << lease.job_id << "\n";
      stop_trainer(Stop::release);
    }
    if (armed() && Clock::now() >= kill_at) {
      log_ << "jobctl-worker: job " << lease.job_id << " did not stop in time; killing it\n";
      worker_killed_it = true;
      child.signal_group(SIGKILL);
      kill_at = Clock::time_point::max();
    }
    if (stop == Stop::none && uploader.fenced()) {
      log_ << "jobctl-worker: job " << lease.job_id << ": lease lost (checkpoint upload refused); stopping it\n";
      stop_trainer(Stop::lost);
    }
    if (stop == Stop::none && (heartbeat_now || Clock::now() >= next_heartbeat)) {
      json body = lease_ref;
      body["progress"] = progress.progress();
      if (!pending_log.empty()) body["log"] = take_log();
      auto r = api_.heartbeat(lease.job_id, body);
      if (r) log_sent();
      if (r) {
        if (r->value("cancel", false)) {
          log_ << "jobctl-worker: job " << lease.job_id << " was cancelled; stopping it\n";
          stop_trainer(Stop::cancel);
        } else if (r->value("move", false)) {
          // The same path as a spot notice: the trainer checkpoints at once, then the job is given back.
          log_ << "jobctl-worker: job " << lease.job_id << " is to move; checkpointing and giving it back\n";
          stop_trainer(Stop::move);
        }
      } else if (r.error().code == ErrorCode::stale_epoch || r.error().code == ErrorCode::not_found ||
                 r.error().code == ErrorCode::conflict) {
        log_ << "jobctl-worker: job " << lease.job_id << ": lease lost (" << r.error().message
             << "); stopping it\n";
        stop_trainer(Stop::lost);
      } else {
        log_ << "jobctl-worker: heartbeat for job " << lease.job_id << " failed: "
             << r.error().message << " (will retry)\n";
      }
      heartbeat_now = false;
      next_heartbeat = Clock::now() + interval;
    }
  }
  // Both pipes are closed; the process ends now, within the grace (still) armed or a fresh one,
  // or is killed.
  const auto grace = armed() ? std::chrono::milliseconds(ms_until(kill_at))
                             : std::chrono::milliseconds(program->grace_ms);
  std::optional<process::ExitStatus> status = child.wait_for(grace);
  if (!status) {
    worker_killed_it = true;
    child.signal_group(SIGKILL);
    status = child.wait();
  }
  containment->end_all();
  // The last of the log, before the outcome is reported (the lease still holds).
  if (!pending_log.empty() && stop != Stop::lost) {
    json body = lease_ref;
    body["progress"] = progress.progress();
    body["log"] = take_log();
    if (api_.heartbeat(lease.job_id, body)) log_sent();
  }

  switch (stop) {
    case Stop::cancel:
      log_ << "jobctl-worker: job " << lease.job_id << " stopped after cancel (" << status->describe() << ")\n";
      return RunOutcome::cancelled;
    case Stop::lost:
      return RunOutcome::lease_lost;
    case Stop::release:
    case Stop::move: {
      // The emergency checkpoint must be stored before the job is given back.
      if (!uploader.drain(program->grace_ms))
        log_ << "jobctl-worker: job " << lease.job_id << ": checkpoint upload still pending; giving the job back\n";
      const int64_t last_uploaded_step = uploader.last_uploaded_step();
      json body = lease_ref;
      body["reason"] = (stop == Stop::move ? std::string("moved by jobctld")
                                           : std::string(stop_.reason()) + ": worker stopping") +
                       "; trainer " + status->describe() +
                       (last_uploaded_step >= 0 ? "; checkpoint at step " + std::to_string(last_uploaded_step) + " stored"
                                                : "; no checkpoint stored");
      // The stop is why this report is sent: it must not end its retries.
      report("preempted", lease.job_id, [&] { return api_.preempt(lease.job_id, body); }, sleep_wait);
      return RunOutcome::released;
    }
    case Stop::none:
      break;
  }

  // Exit 0 is success; anything else fails the job, with the exit status and the log's tail.
  const bool succeeded = status->success();
  // A program resuming that refuses its checkpoint before starting (an `error` line with
  // resume_refused): the caller falls back to an older one.
  if (!succeeded && resume_path && progress.resume_refused() && !progress.started()) {
    resume_refused = progress.error().value_or(program->label + " " + status->describe());
    return RunOutcome::failed;
  }
  if (!succeeded) {
    std::string why = program->label + " " + status->describe();
    if (status->exited && !program->command)
      if (const char* meaning = exit_code_meaning(status->code)) why += std::string(" (") + meaning + ")";
    const std::string killed = worker_killed_it ? std::string()
                                                : sigkill_explanation(*status, oom_kills_before, oom_kill_count(),
                                                                      available_memory_mb());
    const std::string tail = log_tail.substr(log_tail.size() > 1500 ? log_tail.size() - 1500 : 0);
    if (!killed.empty()) why = killed;
    if (progress.error()) why += ": " + *progress.error();
    if (!tail.empty()) why += "; log tail:\n" + tail;
    return fail_job(why);
  }

  // jobctl-train's `done` line says whether the run was whole: one that stopped early (a signal
  // from elsewhere) exits 0 but did not finish.
  if (progress.done() && progress.done()->value("status", std::string()) != "succeeded")
    return fail_job(program->label + " " + status->describe() + ": it stopped early with status " +
                    progress.done()->value("status", std::string("?")));
  json result = progress.result().value_or(json::object());
  if (!result.is_object()) result = json::object();
  json body = lease_ref;
  body["result"] = result;
  report("succeeded", lease.job_id, [&] { return api_.complete(lease.job_id, body); }, stop_wait);
  if (!options_.keep_work_dirs) fs::remove_all(dir, ec);
  return RunOutcome::succeeded;
}

}  // namespace jobctl::worker
