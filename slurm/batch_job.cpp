#include "slurm/batch_job.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace jobctl::slurm {

namespace {

constexpr int64_t kMaxTimeLimitS = int64_t{365} * 24 * 3600;

Status bad(const std::string& field, const std::string& message) {
  return make_error(ErrorCode::invalid_argument, field + " " + message, field);
}

bool has_newline(const std::string& s) { return s.find_first_of("\r\n") != std::string::npos; }

}  // namespace

Status validate(const BatchJob& j) {
  if (j.name.empty() || has_newline(j.name)) return bad("slurm.job_name", "must be one non-empty line");
  if (j.partition.empty() || has_newline(j.partition)) return bad("slurm.partition", "must be one non-empty line");
  if (j.command.empty()) return bad("slurm.command", "must not be empty");
  if (j.gpus < 0 || j.gpus > 64) return bad("slurm.gpus", "must be between 0 and 64");
  if (j.cpus < 0 || j.cpus > 4096) return bad("slurm.cpus", "must be between 0 and 4096");
  if (j.tasks < 1 || j.tasks > 64) return bad("slurm.tasks", "must be between 1 and 64");
  if (j.tasks_per_node < 1 || j.tasks_per_node > 64) return bad("slurm.tasks_per_node", "must be between 1 and 64");
  if (j.gpus * std::min(j.tasks, j.tasks_per_node) > 64)
    return bad("slurm.gpus", "x the tasks on one node must be at most 64");
  for (char c : j.gpu_type)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      return bad("slurm.gpu_type", "must be a GRES type name (letters, digits, '_', '-', '.')");
  if (j.time_limit_s < 60 || j.time_limit_s > kMaxTimeLimitS)
    return bad("slurm.time_limit_s", "must be between 60 and " + std::to_string(kMaxTimeLimitS));
  if (j.signal_lead_s < 0 || j.signal_lead_s > 65535)
    return bad("slurm.signal_lead_s", "must be between 0 and 65535 (Slurm's limit)");
  if (j.signal_lead_s >= j.time_limit_s)
    return bad("slurm.signal_lead_s", "must be shorter than the time limit (" + std::to_string(j.time_limit_s) + " s)");
  for (const auto& [field, value] : {std::pair{"slurm.comment", &j.comment}, std::pair{"slurm.account", &j.account},
                                     std::pair{"slurm.qos", &j.qos}, std::pair{"slurm.output", &j.output}})
    if (has_newline(*value)) return bad(field, "must be one line");
  for (const auto& e : j.extra)
    if (e.empty() || e[0] != '-' || has_newline(e))
      return bad("slurm.sbatch_options", "must be sbatch options, each starting with '-' ('" + e + "')");
  return {};
}

std::string slurm_time(int64_t seconds) {
  const int64_t minutes = std::max<int64_t>(1, (seconds + 59) / 60);
  if (minutes < 24 * 60) return std::to_string(minutes);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:00", static_cast<long long>(minutes / (24 * 60)),
                static_cast<long long>(minutes / 60 % 24), static_cast<long long>(minutes % 60));
  return buf;
}

int64_t time_limit_for(double estimate_s, double margin, int signal_lead_s, int startup_s) {
  const double run = std::max(0.0, estimate_s) * (1.0 + std::max(0.0, margin));
  const double total = run + std::max(0, signal_lead_s) + std::max(0, startup_s);
  const int64_t minutes = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(total / 60.0)));
  return std::min(minutes * 60, kMaxTimeLimitS);
}

int nodes_for(int tasks, int tasks_per_node) {
  const int per_node = std::max(1, std::min(tasks, tasks_per_node));
  return std::max(1, (tasks + per_node - 1) / per_node);
}

std::vector<std::string> sbatch_arguments(const BatchJob& j) {
  const int per_node = std::max(1, std::min(j.tasks, j.tasks_per_node));
  std::vector<std::string> a = {"--parsable", "--job-name=" + j.name, "--partition=" + j.partition,
                                "--nodes=" + std::to_string(nodes_for(j.tasks, j.tasks_per_node)),
                                "--ntasks=" + std::to_string(std::max(j.tasks, 1)),
                                "--time=" + slurm_time(j.time_limit_s),
                                // One worker: the batch shell is it. A gang: every task's worker.
                                (j.tasks > 1 ? "--signal=TERM@" : "--signal=B:TERM@") + std::to_string(j.signal_lead_s),
                                // Preemption and `scontrol requeue` need a requeueable job; jobctld
                                // sees the requeue and decides where the job goes next.
                                "--requeue"};
  if (j.tasks > 1) a.push_back("--ntasks-per-node=" + std::to_string(per_node));
  if (!j.comment.empty()) a.push_back("--comment=" + j.comment);
  if (j.gpus > 0)
    a.push_back("--gres=gpu:" + (j.gpu_type.empty() ? "" : j.gpu_type + ":") + std::to_string(j.gpus * per_node));
  if (j.cpus > 0) a.push_back("--cpus-per-task=" + std::to_string(j.cpus));
  if (!j.account.empty()) a.push_back("--account=" + j.account);
  if (!j.qos.empty()) a.push_back("--qos=" + j.qos);
  if (!j.output.empty()) a.push_back("--output=" + j.output);
  a.insert(a.end(), j.extra.begin(), j.extra.end());
  // --wrap: the script travels with the submission, no file on a shared folder. `exec` makes the
  // command the batch process, so the B: signal reaches it directly.
  a.push_back("--wrap=exec " + j.command);
  return a;
}

}  // namespace jobctl::slurm
