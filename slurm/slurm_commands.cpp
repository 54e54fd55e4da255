#include "slurm/slurm_commands.h"

#include <chrono>

#include "process/run.h"

namespace jobctl::slurm {

SlurmCommands::SlurmCommands(SlurmCommandsOptions options) : options_(std::move(options)) {}

namespace {

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// Slurm's words for "the controller is not there": retry later, not a bad request.
bool controller_unreachable(const std::string& err) {
  return contains(err, "Unable to contact slurm controller") || contains(err, "Connection refused") ||
         contains(err, "Socket timed out") || contains(err, "Zero Bytes were transmitted") ||
         contains(err, "Munge") || contains(err, "munge") || contains(err, "Communication connection failure");
}

}  // namespace

Expected<SlurmCommands::Output> SlurmCommands::run(const std::string& program,
                                                  const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {options_.bin_dir.empty() ? program : options_.bin_dir + "/" + program};
  argv.insert(argv.end(), args.begin(), args.end());
  process::RunOptions run_options{.timeout = std::chrono::seconds(options_.timeout_s)};
  if (!options_.conf_file.empty()) run_options.env.push_back("SLURM_CONF=" + options_.conf_file);
  auto r = process::run(argv, run_options);
  // No such program here: Slurm's client commands are not installed (or bin_dir is wrong).
  if (!r && r.error().code == ErrorCode::not_found)
    return make_error(ErrorCode::unavailable, r.error().message, "slurm." + program);
  if (!r) return r.error();
  if (r->timed_out)
    return make_error(ErrorCode::timeout, program + " did not answer within " + std::to_string(options_.timeout_s) + " s",
                      "slurm." + program);
  if (!r->success()) {
    const ErrorCode code = controller_unreachable(r->err) ? ErrorCode::unavailable : ErrorCode::invalid_argument;
    return make_error(code, program + " failed (" + r->describe() + ")", "slurm." + program);
  }
  return Output{std::move(r->out), std::move(r->err)};
}

Expected<int64_t> SlurmCommands::submit(const BatchJob& job) const {
  if (auto st = validate(job); !st) return st.error();
  auto out = run("sbatch", sbatch_arguments(job));
  if (!out) return out.error();
  return parse_sbatch_parsable(out->out);
}

Status SlurmCommands::cancel(int64_t job_id) const {
  auto out = run("scancel", {std::to_string(job_id)});
  if (!out && out.error().code == ErrorCode::invalid_argument &&
      (contains(out.error().message, "Invalid job id") || contains(out.error().message, "already completing or completed") ||
       contains(out.error().message, "Job/step already completing")))
    return {};
  if (!out) return out.error();
  return {};
}

Status SlurmCommands::requeue(int64_t job_id) const {
  auto out = run("scontrol", {"requeue", std::to_string(job_id)});
  if (!out) return out.error();
  return {};
}

Expected<std::vector<SlurmJob>> SlurmCommands::jobs() const {
  auto out = run("squeue", {"--json", "--states=all"});
  if (!out) return out.error();
  return parse_squeue_json(out->out);
}

Expected<std::vector<SlurmNode>> SlurmCommands::nodes() const {
  auto out = run("sinfo", {"--json"});
  if (!out) return out.error();
  return parse_sinfo_json(out->out);
}

}  // namespace jobctl::slurm
