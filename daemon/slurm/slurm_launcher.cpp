#include "daemon/slurm/slurm_launcher.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "base/log_line.h"
#include "cloud/command_template.h"
#include "daemon/jobs/job_transition.h"
#include "daemon/jobs/worker_capabilities.h"
#include "scheduler/job_state.h"
#include "slurm/batch_job.h"
#include "slurm/job_outcome.h"

namespace jobctl::daemon::slurm {

using nlohmann::json;
using store::SlurmJobRow;
using store::WriteTxn;
namespace sl = ::jobctl::slurm;

namespace {

constexpr const char* kJobNamePrefix = "jobctl-job-";

std::string job_name(int64_t job_id) { return kJobNamePrefix + std::to_string(job_id); }

// The jobctl job a Slurm job of ours runs, from its name (0: not a name jobctld gives).
int64_t job_of_name(const std::string& name) {
  if (name.rfind(kJobNamePrefix, 0) != 0) return 0;
  const std::string digits = name.substr(std::string(kJobNamePrefix).size());
  if (digits.empty() || digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoll(digits);
}

// The Slurm job and task a worker registered as: "<job id>" (one worker: task 0) or
// "<job id>.<task>" (a gang's worker per task, $SLURM_PROCID). Anything else: not ours.
std::optional<std::pair<int64_t, int>> slurm_task_of(const std::string& instance_id) {
  const size_t dot = instance_id.find('.');
  const std::string job = instance_id.substr(0, dot);
  const std::string task = dot == std::string::npos ? "0" : instance_id.substr(dot + 1);
  auto digits = [](const std::string& s, size_t most) {
    return !s.empty() && s.size() <= most && s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (!digits(job, 18) || !digits(task, 4)) return std::nullopt;
  return std::make_pair(std::stoll(job), std::stoi(task));
}

std::string state_of(const sl::SlurmJob& j) { return j.running() ? "running" : j.pending() ? "pending" : "ended"; }

// The chosen candidate of a job placed on a partition: its partition and the placement's estimate.
struct SlurmChoice {
  std::string partition;
  double estimated_hours = 0;
};

std::optional<SlurmChoice> slurm_choice(const store::JobRow& job) {
  if (!job.chosen || job.chosen->option != store::OptionKind::slurm || job.chosen->partition.empty())
    return std::nullopt;
  return SlurmChoice{job.chosen->partition, job.chosen->estimated_hours};
}

}  // namespace

// What one pass read: Slurm's jobs of ours, the Slurm workers and the leases they hold.
struct SlurmLauncher::Pass {
  SlurmLaunchPass done;
  int64_t now = 0;
  std::map<int64_t, sl::SlurmJob> ours;       // Slurm job id -> what squeue says
  std::set<int64_t> recorded;                 // every Slurm job id with a row (ended ones too)
  std::set<int64_t> live_for_job;             // jobctl jobs with a live row (after step 2)
  // Slurm job id -> task -> its newest registered worker (a gang's batch job runs one per task).
  std::map<int64_t, std::map<int, int64_t>> workers_of;
  std::map<int64_t, int64_t> job_of_worker;   // worker id -> the job it holds

  std::vector<int64_t> workers(int64_t slurm_id) const {
    std::vector<int64_t> out;
    if (auto it = workers_of.find(slurm_id); it != workers_of.end())
      for (const auto& [task, worker] : it->second) out.push_back(worker);
    return out;
  }
  // The jobctl job a worker of the Slurm job holds a lease on now.
  std::optional<int64_t> leased_job(int64_t slurm_id) const {
    for (int64_t w : workers(slurm_id))
      if (auto it = job_of_worker.find(w); it != job_of_worker.end()) return it->second;
    return std::nullopt;
  }
};

SlurmLauncher::SlurmLauncher(store::Store& store, const Clock& clock, jobs::JobService& jobs,
                             const SlurmSettings& settings, Log& log, SlurmPartitions* partitions)
    : store_(store),
      clock_(clock),
      jobs_(jobs),
      settings_(settings),
      commands_(settings.commands()),
      log_(log),
      partitions_(partitions) {}

void SlurmLauncher::set_server_url(std::string url) {
  MutexLock lock(mu_);
  server_url_ = std::move(url);
}

std::string SlurmLauncher::server_url() const {
  if (!settings_.server_url.empty()) return settings_.server_url;
  MutexLock lock(mu_);
  return server_url_;
}

void SlurmLauncher::start() {
  {
    MutexLock lock(mu_);
    if (running_ || ticker_) return;
  }
  // Wake-ups closer than 200 ms share one pass: each pass runs squeue.
  ticker_.emplace(
      std::chrono::seconds(settings_.poll_s),
      [this] {
        auto pass = run_pass();
        pass_log_.report(pass ? Status{} : Status{pass.error()}, log_, clock_.now_ms());
      },
      std::chrono::milliseconds(200));
  MutexLock lock(mu_);
  running_ = true;
  ticker_->wake();  // the reconciliation, at once
}

void SlurmLauncher::stop() {
  {
    MutexLock lock(mu_);
    running_ = false;
  }
  // Outside mu_: the pass being joined may take it (server_url()).
  if (ticker_) ticker_->stop();
}

void SlurmLauncher::wake() {
  MutexLock lock(mu_);
  if (running_) ticker_->wake();
}

Expected<SlurmLaunchPass> SlurmLauncher::run_pass() {
  MutexLock pass_lock(pass_mu_);
  Pass p;
  p.now = clock_.now_ms();
  auto listed = commands_.jobs();
  if (!listed) return listed.error();
  // Only this daemon's own: another Slurm user's job with the same comment is not adopted,
  // watched or cancelled.
  const std::string comment = "jobctl:" + settings_.tag;
  const int64_t own_uid = static_cast<int64_t>(::geteuid());
  for (auto& j : *listed)
    if (sl::submitted_by(j, comment, own_uid)) p.ours[j.id] = std::move(j);

  auto workers = store_.list_workers();
  if (!workers) return workers.error();
  for (const auto& w : *workers) {  // id order: a re-registration replaces the older worker
    const auto& instance = w.capabilities.instance;
    if (!instance || instance->provider != "slurm") continue;
    if (auto task = slurm_task_of(instance->id)) p.workers_of[task->first][task->second] = w.id;
  }
  auto leases = store_.active_leases();
  if (!leases) return leases.error();
  for (const auto& [job_id, worker_id] : *leases) p.job_of_worker[worker_id] = job_id;

  auto rows = store_.list_slurm_jobs(/*live_only=*/true);
  if (!rows) return rows.error();
  for (const auto& row : *rows) p.recorded.insert(row.slurm_job_id);
  // A Slurm job of ours that no live row knows is rare (a daemon that died before recording it,
  // or one whose row just ended): only then are the ended rows read too.
  const bool unknown = std::any_of(p.ours.begin(), p.ours.end(), [&p](const auto& j) {
    return !j.second.ended() && !p.recorded.count(j.first);
  });
  if (unknown) {
    auto all = store_.list_slurm_jobs();
    if (!all) return all.error();
    for (const auto& row : *all) p.recorded.insert(row.slurm_job_id);
  }
  Status result;
  auto keep_first = [&result](Status st) {
    if (!st && result) result = std::move(st);
  };
  for (auto& row : *rows) keep_first(reconcile_row(p, row));
  keep_first(adopt(p));
  // Submissions only when every live row was read right: a row whose state could not be settled
  // still counts as live (live_for_job), so its job is never submitted twice.
  keep_first(submit_placed(p));
  for (auto it = lingering_since_.begin(); it != lingering_since_.end();)
    it = p.ours.count(it->first) ? std::next(it) : lingering_since_.erase(it);
  if (!result) return result.error();
  return p.done;
}

// ------------------------------------------------------------------ 2, 3: each live row

Status SlurmLauncher::reconcile_row(Pass& p, SlurmJobRow row) {
  p.live_for_job.insert(row.job_id);
  const std::string slurm_name = "Slurm job " + std::to_string(row.slurm_job_id);
  auto found = p.ours.find(row.slurm_job_id);
  if (found == p.ours.end())
    return end_row(p, std::move(row), "slurm_vanished", slurm_name + " is no longer reported by Slurm");
  const sl::SlurmJob& sj = found->second;
  const sl::Outcome outcome = sl::outcome_of(sj, row.restarts_at_launch);
  if (outcome.phase == sl::Phase::ended) {
    // A requeued job's processes are still ending (COMPLETING): its worker may be uploading its
    // checkpoint. Wait for them; then cancel it so it never runs again.
    if (outcome.requeued && sj.running()) return {};
    if (outcome.requeued) {
      if (auto st = cancel(p, row, "requeued by Slurm: jobctl places the job again"); !st) return st;
    }
    return end_row(p, std::move(row), outcome.event, outcome.reason);
  }
  const std::string state = state_of(sj);
  if (state != row.state) {
    row.state = state;
    if (auto st = store_.write([row](WriteTxn& txn) { return txn.put_slurm_job(row); }); !st) return st;
  }
  // Still wanted? The job it was submitted for is waiting for it, or its worker holds that job.
  auto job = store_.get_job(row.job_id);
  if (!job) return job.error();
  std::string unwanted;
  bool at_once = false;
  if (!*job) {
    unwanted = "it runs no job jobctld knows";
    at_once = true;
  } else {
    const store::JobRow& j = **job;
    const auto leased = p.leased_job(row.slurm_job_id);
    if (j.state == store::JobState::cancelled) {
      unwanted = "job " + std::to_string(j.id) + " was cancelled";
      at_once = true;
    } else if (scheduler::is_terminal(j.state)) {
      unwanted = "job " + std::to_string(j.id) + " has " + std::string(scheduler::to_string(j.state));
    } else if (j.awaiting_lease() && !slurm_choice(j)) {
      unwanted = "job " + std::to_string(j.id) + " is placed elsewhere now";
    } else if ((j.state == store::JobState::placed || j.state == store::JobState::running) && j.worker_id &&
               leased != j.id) {
      unwanted = "job " + std::to_string(j.id) + " runs on another worker now";
    }
  }
  if (unwanted.empty()) {
    lingering_since_.erase(row.slurm_job_id);
    if (p.leased_job(row.slurm_job_id) == row.job_id) failed_starts_.erase(row.job_id);  // it started
    return {};
  }
  // Its worker exits after its one job: give it the time to, unless nothing should run there.
  auto [since, fresh] = lingering_since_.emplace(row.slurm_job_id, p.now);
  if (!at_once && p.now - since->second < kLingerMs) return {};
  (void)fresh;
  return cancel(p, row, unwanted);
}

Status SlurmLauncher::cancel(Pass& p, const SlurmJobRow& row, const std::string& why) {
  if (auto st = commands_.cancel(row.slurm_job_id); !st) return st;
  LogLine() << "jobctld: slurm: cancelled Slurm job " << row.slurm_job_id << " (job " << row.job_id << "): " << why;
  ++p.done.cancelled;
  return {};
}

Status SlurmLauncher::end_row(Pass& p, SlurmJobRow row, const std::string& event, const std::string& reason) {
  const int64_t slurm_id = row.slurm_job_id;
  row.state = "ended";
  row.ended_ms = p.now;
  row.event = event;
  row.reason = reason;
  auto found = p.ours.find(slurm_id);
  const json detail = {{"slurm_job_id", slurm_id},
                       {"partition", row.partition},
                       {"slurm_state", found == p.ours.end() ? std::string() : found->second.state},
                       {"reason", reason}};
  const int64_t job_id = row.job_id;
  const int64_t now = p.now;
  if (auto st = store_.write([row, job_id, event, detail, now](WriteTxn& txn) -> Status {
        if (auto st2 = txn.put_slurm_job(row); !st2) return st2;
        if (job_id <= 0) return {};
        auto job = txn.job(job_id);
        if (!job) return job.error();
        if (!*job) return {};
        return jobs::note_job_event(txn, job_id, event, detail, now);
      });
      !st)
    return st;
  LogLine() << "jobctld: slurm: " << reason << " (job " << job_id << ")";
  ++p.done.ended;
  p.live_for_job.erase(job_id);
  // Its processes are gone: a lease its worker still holds is released now, not at the lease
  // timeout (the worker that checkpointed and handed its job back holds none).
  for (int64_t w : p.workers(slurm_id)) {
    if (!p.job_of_worker.count(w)) continue;
    auto n = jobs_.release_worker_leases(w, reason + " while its worker held the job");
    if (!n) return n.error();
    p.done.released += *n;
    p.job_of_worker.erase(w);
  }
  // Placed on it and never taken (cancelled while pending, failed at start): placement chooses again.
  if (job_id > 0) {
    auto job = store_.get_job(job_id);
    if (!job) return job.error();
    if (*job && (*job)->awaiting_lease() && slurm_choice(**job)) {
      // A batch job that failed before its worker took the job (not one cancelled or requeued):
      // after a few, the partition cannot run it now.
      const bool failed_start = event == "slurm_failed" || event == "slurm_node_failure" || event == "slurm_ended";
      if (failed_start && ++failed_starts_[job_id] >= kSubmitAttempts) {
        failed_starts_.erase(job_id);
        set_aside(row.partition, p.now,
                  std::to_string(kSubmitAttempts) + " batch jobs of job " + std::to_string(job_id) +
                      " ended before their worker took it");
      }
      auto moved = jobs_.unplace(job_id, reason + " before a worker took the job; placing it again");
      if (!moved) return moved.error();
      p.done.unplaced += *moved ? 1 : 0;
    }
  }
  return {};
}

void SlurmLauncher::set_aside(const std::string& partition, int64_t now, const std::string& why) {
  if (!partitions_) return;
  partitions_->set_aside(partition, now + kSetAsideMs);
  LogLine() << "jobctld: slurm: partition " << partition << " set aside for " << kSetAsideMs / 1000 << " s: " << why;
}

// ------------------------------------------------------------------ 4: adoption

Status SlurmLauncher::adopt(Pass& p) {
  for (const auto& [id, sj] : p.ours) {
    if (p.recorded.count(id) || sj.ended()) continue;
    SlurmJobRow r;
    r.slurm_job_id = id;
    r.job_id = job_of_name(sj.name);
    r.partition = sj.partition;
    r.gpus = sj.gpus;
    r.state = state_of(sj);
    r.submitted_ms = sj.submit_s > 0 ? sj.submit_s * 1000 : p.now;
    r.restarts_at_launch = sj.restart_count;
    r.reason = "adopted: in Slurm's queue with comment jobctl:" + settings_.tag + " but unknown to this daemon";
    if (auto st = store_.write([r](WriteTxn& txn) { return txn.put_slurm_job(r); }); !st) return st;
    LogLine() << "jobctld: slurm: adopted Slurm job " << id << " (job " << r.job_id << ")";
    ++p.done.adopted;
    p.recorded.insert(id);
    p.live_for_job.insert(r.job_id);
  }
  return {};
}

// ------------------------------------------------------------------ 5: submissions

Status SlurmLauncher::submit_placed(Pass& p) {
  auto waiting = store_.placed_waiting_jobs();
  if (!waiting) return waiting.error();
  std::set<int64_t> still_waiting;
  for (const auto& q : *waiting) {
    if (q.placement_option != store::OptionKind::slurm) continue;
    still_waiting.insert(q.id);
    if (p.live_for_job.count(q.id)) continue;  // its Slurm job is queued, running or still ending
    auto job = store_.get_job(q.id);
    if (!job) return job.error();
    if (!*job) continue;
    auto choice = slurm_choice(**job);
    if (!choice) continue;

    sl::BatchJob b;
    b.name = job_name(q.id);
    b.comment = "jobctl:" + settings_.tag;
    b.partition = choice->partition;
    b.gpus = std::max(1, q.resource_gpus);
    b.tasks = std::max(1, q.nodes);
    for (const auto& configured : settings_.partitions)
      if (configured.name == b.partition) b.tasks_per_node = configured.tasks_per_node;
    const double estimate_s = std::isfinite(choice->estimated_hours) ? std::max(0.0, choice->estimated_hours) * 3600 : 0;
    b.time_limit_s = sl::time_limit_for(estimate_s, settings_.time_margin, settings_.signal_lead_s, settings_.startup_s);
    b.signal_lead_s = settings_.signal_lead_s;
    b.account = settings_.account;
    b.qos = settings_.qos;
    b.extra = settings_.sbatch_options;
    auto worker = cloud::expand_command(settings_.worker_command, {{"server", server_url()}}, "slurm.worker_command");
    if (!worker) return worker.error();
    // The batch shell expands $SLURM_JOB_ID: the worker registers as this Slurm job, for this job
    // alone (a command job included: it runs nothing else). A gang's batch shell starts one worker
    // per task through srun; each task's shell expands its own $SLURM_PROCID, so the workers are
    // distinct machines to jobctld (their machine ids too) and each is one node.
    std::string worker_for_job =
        *worker + " --instance-provider slurm --instance-id \"$SLURM_JOB_ID" + (b.tasks > 1 ? ".$SLURM_PROCID" : "") +
        "\" --instance-type " + cloud::shell_quote(b.partition) + " --for-job " + std::to_string(q.id) +
        " --max-jobs 1" + (q.command ? " --allow-commands" : "");
    if (q.image)
      for (const std::string& f : settings_.containers.worker_flags()) worker_for_job += " " + cloud::shell_quote(f);
    b.command = b.tasks > 1 ? "srun --kill-on-bad-exit=0 /bin/sh -c " + cloud::shell_quote("exec " + worker_for_job)
                            : worker_for_job;

    auto submitted = commands_.submit(b);
    const int64_t now = p.now;
    const int64_t id = q.id;
    if (!submitted) {
      ++p.done.submit_failures;
      const int failures = ++submit_failures_[q.id];
      const std::string what = "submitting the Slurm job to partition " + b.partition + " failed (" +
                               std::to_string(failures) + " of " + std::to_string(kSubmitAttempts) +
                               "): " + submitted.error().message;
      LogLine() << "jobctld: slurm: job " << q.id << ": " << what;
      const json detail = {{"partition", b.partition}, {"attempt", failures}, {"error", submitted.error().message}};
      if (auto st = store_.write([id, detail, now](WriteTxn& txn) {
            return jobs::note_job_event(txn, id, "slurm_submit_failed", detail, now);
          });
          !st)
        return st;
      if (failures >= kSubmitAttempts) {
        submit_failures_.erase(q.id);
        set_aside(b.partition, now, "Slurm refused " + std::to_string(kSubmitAttempts) + " submissions");
        auto moved = jobs_.unplace(q.id, what + "; placing it again");
        if (!moved) return moved.error();
        p.done.unplaced += *moved ? 1 : 0;
      }
      continue;
    }
    submit_failures_.erase(q.id);
    SlurmJobRow r;
    r.slurm_job_id = *submitted;
    r.job_id = q.id;
    r.partition = b.partition;
    r.gpus = b.gpus;
    r.state = "pending";
    r.submitted_ms = now;
    r.reason = "submitted for job " + std::to_string(q.id);
    json detail = {{"slurm_job_id", r.slurm_job_id}, {"partition", r.partition}, {"gpus", r.gpus},
                   {"time_limit_s", b.time_limit_s}};
    if (b.tasks > 1) {
      detail["tasks"] = b.tasks;
      detail["nodes"] = sl::nodes_for(b.tasks, b.tasks_per_node);
    }
    // Should this write fail, the next pass adopts the Slurm job by its name: never a second sbatch.
    if (auto st = store_.write([r, id, detail, now](WriteTxn& txn) -> Status {
          if (auto st2 = txn.put_slurm_job(r); !st2) return st2;
          return jobs::note_job_event(txn, id, "slurm_submitted", detail, now);
        });
        !st)
      return st;
    LogLine() << "jobctld: slurm: submitted Slurm job " << r.slurm_job_id << " to partition " << r.partition
              << " for job " << q.id << " (time limit " << sl::slurm_time(b.time_limit_s) << ")";
    p.live_for_job.insert(q.id);
    p.recorded.insert(r.slurm_job_id);
    ++p.done.submitted;
  }
  for (auto it = submit_failures_.begin(); it != submit_failures_.end();)
    it = still_waiting.count(it->first) ? std::next(it) : submit_failures_.erase(it);
  return {};
}

}  // namespace jobctl::daemon::slurm
