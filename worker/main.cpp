// jobctl-worker: registers this machine with jobctld and runs leased jobs: jobctl-train for the
// built-in models, the user's own program for a command job (with --allow-commands).
#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <filesystem>
#include <memory>
#include <iostream>
#include <limits>

#include <CLI/CLI.hpp>

#include "process/user_credentials.h"
#include "worker/agent.h"
#include "worker/capabilities.h"
#include "worker/gang_firewall.h"
#include "worker/job_containment.h"
#include "worker/container_launch.h"
#include "worker/notice_poller.h"
#include "worker/image_cache.h"
#include "worker/podman_runtime.h"
#include "worker/rendezvous_endpoint.h"
#include "worker/stop_source.h"
#include "worker/token_source.h"

namespace {

// jobctl-train by default: next to this executable (an installed layout), else where a build
// tree puts it (<build>/train/ beside <build>/worker/), else by name on PATH.
std::string default_trainer() {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "jobctl-train";
  for (const auto& candidate : {self.parent_path() / "jobctl-train",
                                self.parent_path().parent_path() / "train" / "jobctl-train"})
    if (::access(candidate.c_str(), X_OK) == 0) return candidate.string();
  return "jobctl-train";
}

std::string host_name() {
  char buf[256] = {0};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "worker";
  return buf;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace jobctl::worker;
  // First of all: no process of this user (a job program among them) may read this one's memory
  // or environment through /proc or ptrace; its /proc files become root's (docs/security.md).
  ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  // The token from the environment leaves it at once, its bytes overwritten.
  std::optional<std::string> env_token = take_environment_variable("JOBCTL_TOKEN");
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
  app.add_option("--trainer", opts.runner.trainer, "path of jobctl-train (default: next to this program, else <build>/train/ of its build tree, else on PATH)");
  app.add_option("--work-dir", opts.runner.work_dir, "folder for job specs, checkpoints and results");
  app.add_option("--device", device, "cpu, cuda or auto (default): what jobs run on")
      ->check(CLI::IsMember({"cpu", "cuda", "auto"}));
  app.add_option("--data-dir", opts.runner.data_dir, "Fashion-MNIST folder passed to jobctl-train");
  app.add_option("--wait-s", opts.max_wait_s, "long-poll length in seconds (default 30)");
  app.add_option("--max-jobs", opts.max_jobs, "exit after this many jobs (default: no limit)");
  app.add_flag("--keep-work-dirs", opts.runner.keep_work_dirs, "keep the folders of succeeded jobs");
  app.add_flag("--allow-commands", opts.runner.allow_commands,
               "run command jobs: the users' own programs, with this worker's user's rights unless --run-as "
               "(docs/security.md); without it the worker never leases one");
  std::string run_as;
  app.add_option("--run-as", run_as,
                 "run job programs as this Unix user (name or uid), not as the worker's: the way to run a "
                 "shared worker (needs root; docs/security.md)");
  std::string gang_gid_range = "2000000000-2099999999";
  app.add_option("--gang-gid-range", gang_gid_range,
                 "with --run-as: groups FIRST-LAST a gang's programs run with, one per gang (by job id), so that "
                 "rank 0's rendezvous port admits the gang alone (nftables; docs/security.md); off: the port stays "
                 "open (default 2000000000-2099999999)");
  std::string job_cgroup = "auto";
  app.add_option("--job-cgroup", job_cgroup,
                 "cgroup v2 folder under which each job gets a cgroup of its own (ended as a whole when the "
                 "job ends; memory.max from memory_mb); auto (default): this worker's own cgroup; off: none "
                 "(the job's session and, with --run-as, its user's processes are ended instead)");
  int slots = 0;
  app.add_option("--slots", slots, "jobs run at once (default: one per GPU; 1 on a CPU worker)")
      ->check(CLI::Range(1, 256));
  app.add_option("--threads", opts.runner.threads,
                 "jobctl-train --threads (default: its own, all cores); keep it fixed for bit-exact resumes")
      ->check(CLI::Range(0, 1024));
  std::string notice_url;
  int notice_interval_s = 5;
  app.add_option("--notice-url", notice_url,
                 "spot interruption notice endpoint to poll (AWS style: 404 until a notice)");
  app.add_option("--notice-interval-s", notice_interval_s, "seconds between notice polls (default 5)")
      ->check(CLI::Range(1, 3600));
  int notice_interval_ms = 0;
  app.add_option("--notice-interval-ms", notice_interval_ms, "milliseconds between notice polls (tests; overrides -s)")
      ->check(CLI::Range(10, 3600000));
  std::string instance_id, instance_type, instance_provider;
  bool spot = false;
  int64_t for_job = 0;
  app.add_option("--instance-id", instance_id, "cloud instance this worker runs on (registered with it)");
  app.add_option("--instance-type", instance_type, "its instance type, e.g. p3.2xlarge");
  app.add_option("--instance-provider", instance_provider,
                 "what started the instance (\"slurm\" for a Slurm batch job jobctld submitted)");
  app.add_flag("--spot", spot, "the instance is a spot instance");
  app.add_option("--for-job", for_job,
                 "the one job this instance was started for: registered with it, so jobctld offers this worker "
                 "no other (jobctld's Slurm batch jobs pass it, and the cloud instances it launches for a "
                 "command job)")
      ->check(CLI::Range(int64_t{1}, std::numeric_limits<int64_t>::max()));
  std::string machine_id = "auto";
  app.add_option("--machine-id", machine_id,
                 "this machine's identity: a worker registering with the same one replaces this one at once "
                 "(its leases are released, its entry shown gone), as after a restart. Default \"auto\": "
                 "<provider>:<instance id> on a cloud instance or Slurm job, else /etc/machine-id and the "
                 "worker's name; \"\" for none")
      ->envname("JOBCTL_MACHINE_ID");
  auto* address_option = app.add_option(
      "--address", opts.address,
      "host name or IP where the other machines of a job across machines (a gang) reach this one; registered "
      "as capabilities.address. Default: the local address of this machine's connection toward --server");
  int upload_attempts = 5;
  app.add_option("--upload-attempts", upload_attempts, "tries per checkpoint upload (pauses from 0.25 s doubling, with jitter)")
      ->check(CLI::Range(1, 100));
  std::string token_file;
  app.add_option("--token-file", token_file,
                 "file holding the API token (role worker) when jobctld has auth on; only its owner may read "
                 "it (mode 0600). Default: $JOBCTL_TOKEN, which the worker wipes from its environment");
  std::string token_flag;
  auto* token_option =
      app.add_option("--token", token_flag, "refused: a token on the command line is visible to every user (ps)");
  std::string fake_gpus;
  app.add_option("--fake-gpus", fake_gpus,
                 "run PROGRAM with nvidia-smi's arguments instead of nvidia-smi and register the GPUs it "
                 "prints; jobs train on the CPU and the worker is shown as simulated (tests, demos; "
                 "tests/fixtures/nvidia-smi has programs for 16 GPU models)");
  bool simulated = false;
  app.add_flag("--simulated", simulated,
               "register as simulated: this machine is not what it claims (jobctl-cloudsim's instances), so "
               "its step times calibrate nothing");
  std::string container_runtime = "none";
  app.add_option("--container-runtime", container_runtime,
                 "run jobs that name an image in containers of this runtime: podman (rootful, with runc: "
                 "scripts/setup.sh), or none (default: such jobs are not offered to this worker; docs/job-protocol.md)")
      ->check(CLI::IsMember({"podman", "none"}));
  jobctl::worker::PodmanOptions podman;
  app.add_option("--podman", podman.program, "the podman program (default: podman on PATH)");
  app.add_option("--registry-cert-dir", podman.registry_cert_dir,
                 "folder of CA certificates (*.crt) for private registries' TLS (podman --cert-dir)");
  std::vector<std::string> allow_mounts;
  app.add_option("--allow-mount", allow_mounts,
                 "a host folder jobs in an image may mount (a job's spec: mounts), read-only; PREFIX:rw allows "
                 "writable mounts too. Repeatable; none by default");
  int64_t image_cache_mb = 0;
  app.add_option("--image-cache-mb", image_cache_mb,
                 "bound the images kept for jobs in an image to this many MB: after each pull (and at start) the "
                 "least recently used images the worker pulled for jobs are removed, never one a container or a "
                 "lease uses (default 0: unbounded)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--container-pids-limit", opts.runner.container_pids_limit,
                 "processes one job's container may have (default 32768)")
      ->check(CLI::Range(16, 4194304));
  CLI11_PARSE(app, argc, argv);
  for (const std::string& a : allow_mounts) {
    auto m = jobctl::train::parse_allowed_mount(a);
    if (!m) {
      std::cerr << "jobctl-worker: " << m.error().message << "\n";
      return 2;
    }
    opts.runner.allowed_mounts.push_back(std::move(*m));
  }
  opts.runner.device = device;
  opts.runner.transfer.retry.max_attempts = upload_attempts;
  if (address_option->count() > 0)
    if (auto st = check_rendezvous_address(opts.address); !st) {
      std::cerr << "jobctl-worker: --" << st.error().message << "\n";
      return 2;
    }
  if (token_option->count() > 0) {
    std::cerr << "jobctl-worker: --token is refused: the command line of a process is visible to every user "
                 "(ps, /proc/<pid>/cmdline); use --token-file FILE (mode 0600) or JOBCTL_TOKEN\n";
    return 2;
  }
  if (!token_file.empty()) {
    auto token = read_token_file(token_file);
    if (!token) {
      std::cerr << "jobctl-worker: " << token.error().message << "\n";
      return 2;
    }
    opts.token = std::move(*token);
  } else if (env_token) {
    opts.token = std::move(*env_token);
  }
  opts.runner.transfer.bearer_token = opts.token;
  if (!run_as.empty()) {
    auto who = jobctl::process::credentials_of(run_as);
    if (!who) {
      std::cerr << "jobctl-worker: --run-as: " << who.error().message << "\n";
      return 2;
    }
    if (who->uid == 0) {
      std::cerr << "jobctl-worker: --run-as " << run_as << " is root; name an unprivileged user\n";
      return 2;
    }
    if (::geteuid() != 0) {
      std::cerr << "jobctl-worker: --run-as needs the worker to run as root (it changes the user of each job program)\n";
      return 2;
    }
    opts.runner.run_as = std::move(*who);
    if (gang_gid_range != "off") {
      auto range = parse_gang_gid_range(gang_gid_range);
      if (!range) {
        std::cerr << "jobctl-worker: " << range.error().message << "\n";
        return 2;
      }
      opts.runner.gang_gids = *range;
      remove_orphaned_gang_tables(std::cerr);
    }
  }
  if (job_cgroup == "auto") {
    // This worker's own cgroup, where it may make folders; otherwise none (the fallback).
    if (auto own = own_cgroup_dir(); own && ::access(own->c_str(), W_OK) == 0) opts.runner.cgroup_parent = *own;
    else std::cerr << "jobctl-worker: no writable cgroup v2 of its own; a job's processes are ended by session"
                   << (opts.runner.run_as ? " and user" : "") << "\n";
  } else if (job_cgroup != "off") {
    if (::access(job_cgroup.c_str(), W_OK) != 0 || ::access((job_cgroup + "/cgroup.procs").c_str(), F_OK) != 0) {
      std::cerr << "jobctl-worker: --job-cgroup " << job_cgroup << " is not a writable cgroup v2 folder\n";
      return 2;
    }
    opts.runner.cgroup_parent = job_cgroup;
  }
  if (!opts.runner.cgroup_parent.empty()) end_orphaned_job_cgroups(opts.runner.cgroup_parent, std::cerr);

  opts.runner.worker_name = opts.name;
  if (container_runtime == "podman") {
    podman.private_dir = std::filesystem::absolute(opts.runner.work_dir) / ".registry-auth";
    std::error_code mk;
    std::filesystem::create_directories(opts.runner.work_dir, mk);
    auto runtime = make_podman_runtime(podman);
    if (!runtime) {
      std::cerr << "jobctl-worker: --container-runtime podman: " << runtime.error().message << "\n";
      return 2;
    }
    opts.runner.containers = std::move(*runtime);
    remove_leftover_containers(*opts.runner.containers, opts.runner.work_dir, std::cerr);
    if (image_cache_mb > 0) {
      static const jobctl::SystemClock cache_clock;
      opts.runner.image_cache = std::make_shared<ImageCache>(
          opts.runner.containers, image_cache_mb * 1000000, std::filesystem::absolute(opts.runner.work_dir) / "image-uses.json",
          cache_clock, std::cerr);
      opts.runner.image_cache->start();
    }
  } else if (!opts.runner.allowed_mounts.empty() || image_cache_mb > 0) {
    std::cerr << "jobctl-worker: --allow-mount and --image-cache-mb are for jobs in an image: give --container-runtime podman\n";
    return 2;
  }

  StopSource stop;
  stop.install_signal_handlers();

  std::vector<Gpu> gpus;
  if (!fake_gpus.empty()) {
    if (device == "cuda") {
      std::cerr << "jobctl-worker: --fake-gpus trains on the CPU; it cannot be combined with --device cuda\n";
      return 2;
    }
    auto fake = detect_fake_gpus(fake_gpus);
    if (!fake) {
      std::cerr << "jobctl-worker: " << fake.error().message << "\n";
      return 2;
    }
    gpus = std::move(*fake);
    opts.runner.device = device = "cpu";
    simulated = true;
  } else if (device != "cpu") {
    gpus = detect_gpus();
  }
  if (device == "cuda" && gpus.empty()) {
    std::cerr << "jobctl-worker: --device cuda but nvidia-smi found no GPU\n";
    return 2;
  }
  if (::access(opts.runner.trainer.c_str(), X_OK) != 0 && opts.runner.trainer.find('/') != std::string::npos) {
    std::cerr << "jobctl-worker: jobctl-train not found at " << opts.runner.trainer
              << " (use --trainer PATH)\n";
    return 2;
  }
  jobctl::cost::CpuFacts cpu = detect_cpu();
  // A CPU machine's peak, measured: the formula's clock may be a VM's base clock or a laptop's
  // idle one (cost/cpu_peak.h, cpu_machine_peak_tflops). GPU machines are timed by their GPUs, and a
  // simulated worker's step times calibrate nothing (it stands for another machine).
  if (gpus.empty() && !simulated) {
    if (auto t = measure_cpu_throughput(opts.runner.trainer)) {
      cpu.measured_tflops = measured_machine_tflops(*t, cpu.cores);
      std::cerr << "jobctl-worker: CPU measured at " << cpu.measured_tflops << " TFLOP/s FP32 (" << cpu.cores
                << " cores x " << t->core_gflops << " GFLOP/s, one core's best on the models' products with "
                << (t->kernels.empty() ? "its kernels" : t->kernels) << ")\n";
    } else {
      std::cerr << "jobctl-worker: " << t.error().message
                << "; the CPU's peak is taken from its clock and vector width alone\n";
    }
  }
  opts.capabilities = capabilities_json(gpus, cpu, detect_memory_mb(), simulated);
  // Offered command jobs only when it runs them: a worker without --allow-commands never leases one.
  if (opts.runner.allow_commands) opts.capabilities["commands"] = true;
  // Offered jobs in an image only with a runtime, and only those whose mounts it allows.
  if (opts.runner.containers && opts.runner.allow_commands) {
    opts.capabilities["containers"] = std::string(opts.runner.containers->name());
    nlohmann::json mounts = nlohmann::json::array();
    for (const auto& m : opts.runner.allowed_mounts) mounts.push_back({{"prefix", m.prefix}, {"writable", m.writable}});
    if (!mounts.empty()) opts.capabilities["mounts"] = std::move(mounts);
  }
  const std::string machine =
      machine_id == "auto" ? default_machine_id(opts.name, instance_provider, instance_id) : machine_id;
  if (!machine.empty()) opts.capabilities["machine_id"] = machine;
  if (!instance_id.empty() || !instance_type.empty() || !instance_provider.empty() || for_job > 0) {
    nlohmann::json inst = {{"spot", spot}};
    if (!instance_id.empty()) inst["id"] = instance_id;
    if (!instance_type.empty()) inst["instance_type"] = instance_type;
    if (!instance_provider.empty()) inst["provider"] = instance_provider;
    if (for_job > 0) inst["job_id"] = for_job;
    opts.capabilities["instance"] = inst;
  }
  // One slot per GPU, a job pinned to the GPUs its lease names; a CPU worker runs one job unless
  // told otherwise.
  opts.slots = slots > 0 ? slots : std::max<int>(1, static_cast<int>(gpus.size()));
  for (size_t i = 0; i < gpus.size(); ++i) opts.gpus.push_back(static_cast<int>(i));
  std::error_code ec;
  std::filesystem::create_directories(opts.runner.work_dir, ec);
  if (ec) {
    std::cerr << "jobctl-worker: cannot create " << opts.runner.work_dir << ": " << ec.message() << "\n";
    return 2;
  }
  std::unique_ptr<NoticePoller> notices;
  if (!notice_url.empty())
    notices = std::make_unique<NoticePoller>(
        notice_url, notice_interval_ms > 0 ? notice_interval_ms : notice_interval_s * 1000, stop, std::cerr);
  Agent agent(opts, stop, std::cerr);
  const int rc = agent.run();
  if (notices) notices->stop();
  return rc;
}
