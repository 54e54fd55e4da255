// jobctl-train: trains one job spec; see docs/train-cli.md for the flags, the JSON lines on
// stdout, the files, the signals and the exit codes.
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "base/clock.h"
#include "train/app/cli_options.h"
#include "train/app/kernel_selection.h"
#include "train/app/memory_check.h"
#include "train/app/signals.h"
#include "train/checkpoint/checkpoint_store.h"
#include "train/checkpoint/file_system.h"
#include "train/data/dataset.h"
#include "train/kernels/gemm_throughput.h"
#include "train/kernels/make_backend.h"
#include "train/spec/job_spec.h"
#include "train/spec/model_stats.h"
#include "train/trainer/progress_json.h"
#include "train/trainer/trainer.h"
#include "train/trainer/training_run.h"

namespace {

using namespace jobctl::train;

enum ExitCode : int {
  kOk = 0,
  kInternal = 1,
  kUsage = 2,
  kData = 3,
  kCheckpoint = 4,
  kDevice = 5,
  kMemory = 6,
};

class StdoutSink final : public EventSink {
 public:
  void emit(const std::string& line) override {
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);  // the worker reads progress as it happens
  }
};

int fail(int code, const std::string& message) {
  StdoutSink().emit(error_json_line(message));
  std::fprintf(stderr, "jobctl-train: %s\n", message.c_str());
  return code;
}

// A checkpoint this run cannot resume from: the worker falls back to an older one.
int fail_resume(const std::string& message) {
  StdoutSink().emit(resume_refused_json_line(message));
  std::fprintf(stderr, "jobctl-train: %s\n", message.c_str());
  return kCheckpoint;
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  for (const auto& a : args)
    if (a == flag || a.rfind(flag + "=", 0) == 0) return true;
  return false;
}

// The job protocol's environment (docs/job-protocol.md) stands in for flags not given:
// JOBCTL_CHECKPOINT_DIR for --out, JOBCTL_RESUME_FROM for --resume.
std::vector<std::string> with_protocol_env(std::vector<std::string> args) {
  const char* dir = std::getenv("JOBCTL_CHECKPOINT_DIR");
  if (dir && *dir && !has_flag(args, "--out")) {
    args.push_back("--out");
    args.push_back(dir);
  }
  const char* from = std::getenv("JOBCTL_RESUME_FROM");
  if (from && *from && !has_flag(args, "--resume")) {
    args.push_back("--resume");
    args.push_back(from);
  }
  return args;
}

int run(const std::vector<std::string>& args, const KernelReport& kernels) {
  auto cli = parse_cli(args);
  if (!cli) return fail(kUsage, cli.error().message + "\n" + usage_text());
  if (cli->help) {
    std::fputs(usage_text().c_str(), stdout);
    return kOk;
  }
  if (cli->measure_cpu) {
    const GemmThroughput t = measure_core_gemm_throughput();
    StdoutSink().emit(to_json_line(CpuThroughputEvent{t.core_gflops, t.rounds, t.seconds, kernels.kernels}));
    return kOk;
  }

  std::ifstream spec_file(cli->spec_path, std::ios::binary);
  if (!spec_file) return fail(kUsage, "cannot read the spec file " + cli->spec_path);
  std::stringstream text;
  text << spec_file.rdbuf();
  auto spec = parse_job_spec(text.str());
  if (!spec) {
    const auto& e = spec.error();
    return fail(kUsage, "invalid spec" + (e.field.empty() ? std::string() : " (field " + e.field + ")") + ": " + e.message);
  }

  auto choice = parse_device_choice(cli->device);
  if (!choice) return fail(kUsage, choice.error().message);
  BackendOptions backend_options;
  backend_options.cpu_threads = cli->threads;
  auto backend = make_backend(*choice, backend_options);
  if (!backend) return fail(kDevice, backend.error().message);
  const std::string device = (*backend)->kind() == DeviceKind::cuda ? "cuda" : "cpu";

  // Before the first large allocation: a job this machine cannot hold ends here, saying so.
  const auto need = host_memory_need(*spec, model_stats(*spec), (*backend)->kind() != DeviceKind::cuda);
  if (auto st = check_host_memory(need, available_host_memory()); !st) return fail(kMemory, st.error().message);

  auto data = load_data(spec->data, cli->data_dir);
  if (!data) return fail(kData, data.error().message);

  auto trainer = Trainer::create(*spec, **backend, data->train, data->test);
  if (!trainer) return fail(kUsage, trainer.error().message);

  PosixFileSystem fs;
  if (auto st = fs.create_directories(cli->out_dir); !st) return fail(kInternal, st.error().message);
  CheckpointStore store(fs, cli->out_dir, spec->checkpoint.keep);

  std::string resumed_from;
  std::string checkpoint_kernels;
  if (!cli->resume.empty()) {
    TrainingState state;
    if (cli->resume == "auto") {
      auto loaded = store.load_newest_valid();
      if (!loaded) return fail(kCheckpoint, "--resume auto: " + loaded.error().message);
      for (const auto& s : loaded->skipped)
        std::fprintf(stderr, "jobctl-train: skipped an invalid checkpoint: %s\n", s.c_str());
      resumed_from = loaded->path;
      state = std::move(loaded->state);
    } else {
      auto loaded = store.load(cli->resume);
      if (!loaded) return fail_resume("--resume: " + loaded.error().message);
      resumed_from = cli->resume;
      state = std::move(*loaded);
    }
    if (auto st = (*trainer)->restore(state); !st)
      return fail_resume("--resume " + resumed_from + ": " + st.error().message);
    checkpoint_kernels = state.kernels;
  }
  // The products' kernels: on the CPU the BLAS's, on a GPU the device's own.
  const std::string run_kernels = device == "cuda" ? (*backend)->device_name() : kernels.kernels;
  if (!checkpoint_kernels.empty() && checkpoint_kernels != run_kernels)
    std::fprintf(stderr,
                 "jobctl-train: %s was written with the kernels %s; this run continues with %s, so its steps are "
                 "not bit-identical to an uninterrupted run\n",
                 resumed_from.c_str(), checkpoint_kernels.c_str(), run_kernels.c_str());

  RunOptions options;
  options.device = device;
  options.resumed_from = resumed_from;
  options.kernels = run_kernels;
  if (device != "cuda") {
    options.kernels_selection = kernels.selection;
    options.kernels_check = kernels.self_check;
  }
  options.checkpoint_kernels = checkpoint_kernels;
  options.log_every = cli->log_every;
  options.max_steps = cli->max_steps;
  options.every_steps = spec->checkpoint.every_steps;
  options.every_seconds = spec->checkpoint.every_seconds;
  jobctl::SystemClock clock;
  SignalControl control;
  StdoutSink sink;
  auto outcome = run_training(**trainer, store, fs, clock, control, sink, options);
  if (!outcome) return fail(kInternal, outcome.error().message);
  return kOk;
}

}  // namespace

int main(int argc, char** argv) {
  // First of all: it may execute the program again, with OpenBLAS told which kernels to load; a
  // stop or checkpoint signal meanwhile waits for the handlers.
  hold_signals();
  const KernelReport kernels = select_kernels(argv);
  // Before anything slow (data loading): a SIGTERM that arrives early is then honoured at the
  // first step boundary instead of killing the process without a checkpoint.
  install_signal_handlers();
  try {
    return run(with_protocol_env(std::vector<std::string>(argv + 1, argv + argc)), kernels);
  } catch (const std::exception& e) {
    return fail(kInternal, std::string("internal error: ") + e.what());
  }
}
