// jobctl-worker: registers this machine with jobctld and runs leased jobs through jobctl-train.
#include <unistd.h>

#include <filesystem>
#include <iostream>

#include <CLI/CLI.hpp>

#include "worker/agent.h"
#include "worker/capabilities.h"
#include "worker/stop_source.h"

namespace {

// jobctl-train is looked for next to this executable by default.
std::string default_trainer() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "jobctl-train";
  return (self.parent_path() / "jobctl-train").string();
}

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "worker";
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace jobctl::worker;
  CLI::App app{"jobctl-worker: runs jobctld's jobs on this machine"};
  AgentOptions opts;
  opts.name = host_name();
  opts.runner.trainer = default_trainer();
  opts.runner.work_dir = (std::filesystem::temp_directory_path() / "jobctl-worker").string();
  std::string device = "auto";
  app.add_option("--server", opts.server, "jobctld URL, e.g. http://127.0.0.1:8080")
      ->envname("JOBCTL_SERVER")
      ->required();
  app.add_option("--name", opts.name, "name shown by `jobctl workers` (default: host name)");
  app.add_option("--trainer", opts.runner.trainer, "path of jobctl-train (default: next to this program)");
  app.add_option("--work-dir", opts.runner.work_dir, "folder for job specs, checkpoints and results");
  app.add_option("--device", device, "cpu, cuda or auto (default): what jobs run on")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  app.add_option("--data-dir", opts.runner.data_dir, "Fashion-MNIST folder passed to jobctl-train");
  app.add_option("--wait-s", opts.max_wait_s, "long-poll length in seconds (default 30)");
  app.add_option("--max-jobs", opts.max_jobs, "exit after this many jobs (default: no limit)");
  app.add_flag("--keep-work-dirs", opts.runner.keep_work_dirs, "keep the folders of succeeded jobs");
  CLI11_PARSE(app, argc, argv);
  opts.runner.device = device;

  StopSource stop;
  stop.install_signal_handlers();

  std::vector<Gpu> gpus;
  if (device != "cpu") gpus = detect_gpus();
  if (device == "cuda" && gpus.empty()) {
    std::cerr << "jobctl-worker: --device cuda but nvidia-smi found no GPU\n";
    return 2;
  }
  opts.capabilities = capabilities_json(gpus, detect_cpu_cores(), detect_memory_mb());
  std::error_code ec;
  std::filesystem::create_directories(opts.runner.work_dir, ec);
  if (ec) {
    std::cerr << "jobctl-worker: cannot create " << opts.runner.work_dir << ": " << ec.message() << "\n";
    return 2;
  }
  if (::access(opts.runner.trainer.c_str(), X_OK) != 0 && opts.runner.trainer.find('/') != std::string::npos) {
    std::cerr << "jobctl-worker: jobctl-train not found at " << opts.runner.trainer
              << " (use --trainer PATH)\n";
    return 2;
  }
  Agent agent(opts, stop, std::cerr);
  return agent.run();
}
