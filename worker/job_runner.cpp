#include "worker/job_runner.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "bundle/code_bundle.h"
#include "worker/container_runtime.h"
#include "worker/gang_firewall.h"
#include "worker/job_setup.h"
#include "worker/checkpoint_handoff.h"
#include "worker/checkpoint_uploader.h"
#include "worker/heartbeat_sender.h"
#include "worker/image_cache.h"
#include "worker/job_launch.h"
#include "worker/job_protocol.h"
#include "worker/job_supervisor.h"
#include "worker/output_sync.h"
#include "worker/pending_log.h"

namespace jobctl::worker {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

constexpr size_t kPendingLog = 192 << 10;  // below jobctld's per-heartbeat limit (256 KiB)
// How long the last of a job's log may hold up its outcome's report while jobctld does not answer.
constexpr auto kFinalLogWait = std::chrono::seconds(5);

}  // namespace

JobRunner::JobRunner(client::ApiClient& api, int64_t worker_id, RunnerOptions options,
                     const StopSource& stop, std::ostream& log)
    : api_(api), worker_id_(worker_id), options_(std::move(options)), stop_(stop), log_(log) {}

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

std::optional<std::string> JobRunner::next_resume(const Lease& lease, LeaseReporter& reporter, CheckpointTransfer& transfer,
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
    if (st.error().code == ErrorCode::corrupt_checkpoint) reject_checkpoint(reporter, candidates, st.error().message);
    else candidates.erase(candidates.begin());
    log_ << "jobctl-worker: job " << lease.job_id << ": checkpoint at step " << c.step
         << " unusable: " << st.error().message << "; trying the previous one\n";
  }
  log_ << "jobctl-worker: job " << lease.job_id << ": no stored checkpoint could be used; starting from the beginning\n";
  return std::nullopt;
}

void JobRunner::reject_checkpoint(LeaseReporter& reporter, std::vector<StoredCheckpoint>& candidates,
                                  const std::string& why) {
  const int64_t step = candidates.front().step;
  candidates.erase(candidates.begin());
  reporter.reject_checkpoint(step, why, candidates.empty() ? std::nullopt : std::optional<int64_t>(candidates.front().step),
                             stop_wait());
}

RunOutcome JobRunner::fail_job(LeaseReporter& reporter, const std::string& why) {
  reporter.fail(why, stop_wait());
  return RunOutcome::failed;
}

RunOutcome JobRunner::run(const Lease& lease) {
  LeaseReporter reporter(api_, lease.job_id, protocol::LeaseRef{worker_id_, lease.epoch}, log_);
  auto fail_job = [&](const std::string& why) { return this->fail_job(reporter, why); };

  // The job's folder: the spec, the checkpoints (out/) and a command job's own folder (work/).
  // Two nodes of one gang may share a machine and a --work-dir (tasks of one Slurm job on a node):
  // each node's folder is its own.
  const fs::path dir = fs::absolute(fs::path(options_.work_dir)) /
                       ("job-" + std::to_string(lease.job_id) + "-lease-" + std::to_string(lease.epoch) +
                        (lease.gang && lease.gang->rank > 0 ? "-rank-" + std::to_string(lease.gang->rank) : ""));
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
  // Rank 0's rendezvous port kept to the gang while this lease runs, however it ends.
  std::unique_ptr<GangFirewall> rendezvous_guard;
  if (lease.gang && lease.gang->rank == 0 && lease.gang->master_port > 0) {
    if (options_.run_as && options_.gang_gids)
      rendezvous_guard = GangFirewall::install(lease.job_id, lease.epoch, *lease.gang,
                                               gang_gid(*options_.gang_gids, lease.job_id), log_);
    else
      say_rendezvous_open("the worker runs jobs without --run-as", log_);
  }
  CheckpointTransfer transfer(options_.transfer, stop_wait());
  ImageCache::Pin image_pin;  // the lease's image kept from the bounded cache's eviction while it runs
  std::vector<std::string> setup_log;  // for the job's log, ahead of its program's
  {
    auto program = program_for(lease.spec_json, spec_path, options_);
    if (!program) return fail_job(program.error().message);
    fs::create_directories(program->cwd, ec);
    if (ec) return fail_job("cannot create " + program->cwd.string() + ": " + ec.message());
    std::string bundle_bytes;
    if (!program->bundle.empty()) {
      // The job's code, unpacked fresh for every lease into the program's working directory.
      auto bytes = transfer.download_bundle(program->bundle);
      if (!bytes) return fail_job("cannot fetch the code bundle " + program->bundle + ": " + bytes.error().message);
      bundle_bytes = std::move(*bytes);
      auto unpacked = bundle::unpack_bundle(bundle_bytes, program->cwd.string());
      if (!unpacked) return fail_job("refused the code bundle " + program->bundle + ": " + unpacked.error().message);
      log_ << "jobctl-worker: job " << lease.job_id << ": unpacked its code bundle (" << unpacked->files << " files, "
           << unpacked->file_bytes << " bytes) into " << program->cwd.string() << "\n";
    }
    auto setup = prepare_setup(*program, bundle_bytes, lease.owner, options_, log_);
    if (!setup) return fail_job(setup.error().message);
    setup_log = std::move(setup->log_lines);
    if (!program->image.empty()) {
      // The image, pulled as the spec says, for every lease (a resume elsewhere pulls it there);
      // what the pull printed goes to the job's log, its digest to jobctld (what ran). Heartbeats
      // hold the lease meanwhile: a large image takes longer than a lease lasts. What their
      // answers say (a cancel, a lost lease) the program's first heartbeat learns again.
      auto image = [&] {
        const SystemClock wall_clock;
        PendingLog no_log(0, wall_clock);
        HeartbeatSender holding_lease(heartbeat_options(lease), no_log, log_);
        return options_.containers->prepare_image(
            program->image, program->image_pull, lease.registry_credential,
            [&](const std::string& line) { setup_log.push_back("[image] " + line); });
      }();
      if (!image) return fail_job(image.error().message);
      char pulled[200];
      if (image->pulled)
        std::snprintf(pulled, sizeof pulled, "%s (%.1f MB), pulled in %.1f s", image->digest.c_str(), image->bytes / 1e6,
                      image->pull_seconds);
      else
        std::snprintf(pulled, sizeof pulled, "%s (%.1f MB), already on this worker", image->digest.c_str(),
                      image->bytes / 1e6);
      setup_log.push_back("[image] " + program->image + ": " + pulled);
      if (image->pulled && image->layers > 0)
        setup_log.push_back("[image] " + std::to_string(image->layers) + " layers pulled");
      log_ << "jobctl-worker: job " << lease.job_id << ": image " << program->image << " " << pulled << "\n";
      if (options_.image_cache) image_pin = options_.image_cache->use(image->id, image->pulled);
      reporter.image(program->image, image->digest, stop_wait());
    }
  }

  // The outputs earlier leases stored come back into this lease's empty JOBCTL_OUTPUT_DIR before
  // the program starts.
  OutputSync outputs(api_, lease.job_id, worker_id_, lease.epoch, job_output_dir(dir).string(), log_,
                     options_.run_as ? std::optional<uint32_t>(options_.run_as->uid) : std::nullopt);
  if (auto restored = outputs.restore(); !restored)
    return fail_job("cannot restore the job's earlier outputs: " + restored.error().message);

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
      resume_path = next_resume(lease, reporter, transfer, candidates, (options_.run_as ? dir : out_dir).string(), resume_step);
    }
    std::string refused;
    const RunOutcome outcome =
        attempt(lease, reporter, outputs, dir, resume_path, refused, std::exchange(setup_log, {}));
    if (refused.empty()) return outcome;
    log_ << "jobctl-worker: job " << lease.job_id << ": cannot resume from the checkpoint at step " << resume_step
         << " (" << refused << "); falling back\n";
    fs::remove(*resume_path, ec);  // not left among the trainer's own checkpoints
    reject_checkpoint(reporter, candidates, refused);
  }
}

RunOutcome JobRunner::attempt(const Lease& lease, LeaseReporter& reporter, OutputSync& outputs, const fs::path& dir,
                              const std::optional<std::string>& resume_path, std::string& resume_refused,
                              const std::vector<std::string>& setup_log) {
  auto program = program_for(lease.spec_json, dir / "spec.json", options_);
  if (!program) return fail_job(reporter, program.error().message);
  auto job = launch_job(lease.job_id, lease.epoch, *program, options_, dir, resume_path, lease.gang, log_);
  if (!job) return fail_job(reporter, job.error().message);
  const int rank = lease.gang ? lease.gang->rank : 0;
  std::string place;
  if (lease.gang)
    place = ", rank " + std::to_string(rank) + " of " + std::to_string(lease.gang->nodes) + " nodes, master " +
            lease.gang->master_addr + ":" + std::to_string(lease.gang->master_port);
  log_ << "jobctl-worker: job " << lease.job_id << " (" << lease.name << ", lease epoch " << lease.epoch << place
       << ") started " << program->label << " as pid " << job->child->pid() << " in " << program->cwd.string() << "\n";

  JobProtocol protocol;
  const SystemClock wall_clock;  // stamps each output line when it is read
  PendingLog pending_log(kPendingLog, wall_clock);
  for (const auto& line : setup_log) pending_log.append(rank_log_prefix(rank) + line);
  HeartbeatSender heartbeats(heartbeat_options(lease), pending_log, log_);
  // Every checkpoint the program writes goes to the daemon at once, on the uploader's thread (the
  // final one excepted: the job completes with it). A fenced-off upload means the lease is gone.
  CheckpointUploader uploader(options_.transfer, lease.job_id, worker_id_, lease.epoch, log_);
  CheckpointHandoff checkpoints(uploader, *program, dir, options_, lease.job_id, log_);
  const Supervised supervised =
      JobSupervisor({*job, *program, protocol, heartbeats, pending_log, checkpoints, uploader, stop_}, lease.job_id,
                    resume_path.has_value(), rank, log_)
          .run();
  job->container.reset();  // ends and removes it: a runtime process killed after its grace leaves it running
  // Heartbeats keep the lease while the last checkpoint and the outputs upload; the last of the
  // log goes with a last heartbeat, before the outcome is reported (the lease still holds),
  // unless jobctld does not answer in time.
  heartbeats.keep_alive();
  const bool flush = supervised.stop != StopReason::lost;
  auto end_heartbeats = [&] {
    if (!heartbeats.finish(flush, kFinalLogWait) && flush)
      log_ << "jobctl-worker: job " << lease.job_id << ": the last of its log was not delivered\n";
  };
  return finish_attempt({.supervised = supervised,
                         .program = *program,
                         .protocol = protocol,
                         .uploader = uploader,
                         .reporter = reporter,
                         .stop = stop_,
                         .oom_kills_before = job->oom_kills_before,
                         .resuming = resume_path.has_value(),
                         .keep_work_dir = options_.keep_work_dirs,
                         .job_dir = dir,
                         .upload_outputs =
                             [&] {
                               // A gang's outputs are rank 0's (its other nodes write the same files, or none).
                               if (rank == 0) outputs.upload();
                               else
                                 log_ << "jobctl-worker: job " << lease.job_id << ": rank " << rank
                                      << " uploads no outputs (rank 0 stores the job's)\n";
                             },
                         .end_heartbeats = end_heartbeats},
                        resume_refused, log_);
}

HeartbeatSender::Options JobRunner::heartbeat_options(const Lease& lease) const {
  HeartbeatSender::Options o;
  o.server = options_.transfer.server;
  o.http.bearer_token = options_.transfer.bearer_token;
  o.http.worker_secret = options_.transfer.worker_secret;
  o.job_id = lease.job_id;
  o.lease = protocol::LeaseRef{worker_id_, lease.epoch};
  o.interval = std::chrono::milliseconds(std::max(100, options_.heartbeat_interval_ms));
  return o;
}

}  // namespace jobctl::worker
