// How a lease's program becomes a container run (worker/container_launch.h), against folders the
// tests make: fake NVIDIA device nodes and libraries, allowed mount prefixes with a link leading
// out of them, and the podman command line that run makes (worker/podman_runtime.h).
#include "worker/container_launch.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"
#include "worker/podman_runtime.h"

namespace jobctl::worker {
namespace {

namespace fs = std::filesystem;

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "x";
}

bool contains(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// A machine with four GPUs: their nodes and the driver's control nodes under dev/, its
// libraries under lib/ beside one that is not the driver's.
HostGpuFiles fake_machine(const jobctl::testing::TempDir& tmp) {
  HostGpuFiles host;
  host.dev_dir = tmp.path() / "dev";
  for (const char* n : {"nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl", "nvidia-uvm"}) touch(host.dev_dir / n);
  host.library_dirs = {tmp.path() / "lib"};
  for (const char* n : {"libcuda.so.1", "libnvidia-ml.so.535.1", "libz.so.1"}) touch(tmp.path() / "lib" / n);
  host.cdi_dirs = {tmp.path() / "cdi"};
  host.programs = {tmp.path() / "bin/nvidia-smi"};
  touch(tmp.path() / "bin/nvidia-smi");
  return host;
}

TEST(ContainerGpus, OnlyTheLeasedGpusNodesWithTheDriversControlNodesAndLibrariesReadOnly) {
  jobctl::testing::TempDir tmp;
  const HostGpuFiles host = fake_machine(tmp);
  auto g = container_gpus({1, 3}, host);
  ASSERT_TRUE(g) << g.error().message;
  const std::string dev = host.dev_dir.string();
  EXPECT_EQ(g->devices, (std::vector<std::string>{dev + "/nvidia1", dev + "/nvidia3", dev + "/nvidiactl", dev + "/nvidia-uvm"}));
  std::vector<std::string> bound;
  for (const ContainerBind& b : g->binds) {
    EXPECT_FALSE(b.writable) << b.source;
    EXPECT_EQ(b.source, b.target);
    bound.push_back(fs::path(b.source).filename().string());
  }
  EXPECT_EQ(bound, (std::vector<std::string>{"libcuda.so.1", "libnvidia-ml.so.535.1", "nvidia-smi"}));
  // No GPU leased: nothing of the driver's.
  auto none = container_gpus({}, host);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->devices.empty());
  EXPECT_TRUE(none->binds.empty());
  // A leased GPU without its node is an error, not a container without it.
  auto missing = container_gpus({7}, host);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message.find("nvidia7"), std::string::npos) << missing.error().message;
}

TEST(ContainerGpus, AHostWithAnNvidiaCdiSpecGetsCdiNamesInstead) {
  jobctl::testing::TempDir tmp;
  const HostGpuFiles host = fake_machine(tmp);
  fs::create_directories(tmp.path() / "cdi");
  std::ofstream(tmp.path() / "cdi/nvidia.yaml") << "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n- name: \"0\"\n";
  auto g = container_gpus({0, 2}, host);
  ASSERT_TRUE(g) << g.error().message;
  EXPECT_EQ(g->devices, (std::vector<std::string>{"nvidia.com/gpu=0", "nvidia.com/gpu=2"}));
  EXPECT_TRUE(g->binds.empty()) << "the CDI spec brings the libraries";
}

TEST(MountBinds, OnlyUnderAllowedPrefixesWritableWhereAllowedAndNeverOverTheJobsFolder) {
  jobctl::testing::TempDir tmp;
  fs::create_directories(tmp.path() / "data/fmnist");
  fs::create_directories(tmp.path() / "scratch/run1");
  fs::create_directories(tmp.path() / "secret");
  fs::create_symlink(tmp.path() / "secret", tmp.path() / "data/escape");
  const fs::path job_dir = tmp.path() / "work/job-1-lease-1";
  fs::create_directories(job_dir);
  const std::vector<train::AllowedMount> allowed = {{(tmp.path() / "data").string(), false},
                                                    {(tmp.path() / "scratch").string(), true}};
  const std::string data = (tmp.path() / "data/fmnist").string();
  const std::string scratch = (tmp.path() / "scratch/run1").string();

  auto ok = mount_binds({{data, "/data", false}, {scratch, "/scratch", true}}, allowed, job_dir);
  ASSERT_TRUE(ok) << ok.error().message;
  ASSERT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[0], (ContainerBind{data, "/data", false}));
  EXPECT_EQ((*ok)[1], (ContainerBind{scratch, "/scratch", true}));

  auto refused = [&](const train::MountSpec& m, const std::string& says) {
    auto r = mount_binds({m}, allowed, job_dir);
    ASSERT_FALSE(r) << m.source << " at " << m.target;
    EXPECT_EQ(r.error().field, "mounts[0]");
    EXPECT_NE(r.error().message.find(says), std::string::npos) << r.error().message;
  };
  refused({(tmp.path() / "secret").string(), "/s", false}, "allows no mount there");
  refused({data, "/data", true}, "no writable mount");
  refused({(tmp.path() / "data/escape").string(), "/e", false}, "outside the folders this worker allows");
  refused({(tmp.path() / "data/absent").string(), "/a", false}, "cannot be found");
  refused({data, job_dir.string(), false}, "covers the job's own folder");
  refused({data, (tmp.path() / "work").string(), false}, "covers the job's own folder");
  refused({data, (job_dir / "work/data").string(), false}, "covers the job's own folder");
  // No prefix allowed: nothing mounts.
  EXPECT_FALSE(mount_binds({{data, "/data", false}}, {}, job_dir));
}

TEST(ContainerRun, TheJobsFolderAtItsOwnPathItsEnvironmentOnlyAndLabelsForItsLease) {
  jobctl::testing::TempDir tmp;
  RunnerOptions options;
  options.work_dir = tmp.file("work");
  options.worker_name = "gpu-box-1";
  options.gpu_files = fake_machine(tmp);
  options.gpu_indices = {2, 3};
  const fs::path dir = tmp.path() / "work/job-7-lease-3";
  JobProgram program;
  program.argv = {"python3", "train.py"};
  program.cwd = dir / "work";
  program.image = "registry.example.com/team/train:1";
  program.memory_limit_bytes = 512ull << 20;
  const std::vector<std::string> env = {"LR=0.1",         "JOBCTL_TOKEN",          "JOBCTL_JOB_ID=7",
                                        "JOBCTL_RESUME_FROM", "CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_VISIBLE_DEVICES=2,3"};
  auto run = container_run(7, 3, program, options, dir, env, std::nullopt, std::pair<uint32_t, uint32_t>{1234, 1235});
  ASSERT_TRUE(run) << run.error().message;
  EXPECT_EQ(run->name, "jobctl-job-7-lease-3");
  EXPECT_EQ(run->image, program.image);
  EXPECT_EQ(run->argv, program.argv);
  EXPECT_EQ(run->workdir, program.cwd.string());
  EXPECT_EQ(run->user, (std::pair<uint32_t, uint32_t>{1234, 1235}));
  EXPECT_EQ(run->memory_bytes, 512ull << 20);
  EXPECT_FALSE(run->host_network) << "a job on one machine keeps the runtime's own network";
  ASSERT_FALSE(run->binds.empty());
  EXPECT_EQ(run->binds.front(), (ContainerBind{dir.string(), dir.string(), true}));
  // Set variables only (a removed one is simply absent), the GPUs numbered from 0 inside.
  EXPECT_EQ(run->env, (std::vector<std::string>{"LR=0.1", "JOBCTL_JOB_ID=7", "CUDA_DEVICE_ORDER=PCI_BUS_ID",
                                                "CUDA_VISIBLE_DEVICES=0,1"}));
  EXPECT_TRUE(contains(run->devices, options.gpu_files.dev_dir.string() + "/nvidia2"));
  EXPECT_FALSE(contains(run->devices, options.gpu_files.dev_dir.string() + "/nvidia0"));
  const std::vector<std::pair<std::string, std::string>> labels = {
      {"io.jobctl.job", "7"}, {"io.jobctl.epoch", "3"}, {"io.jobctl.worker", "gpu-box-1"},
      {"io.jobctl.worker-dir", fs::absolute(options.work_dir).string()}};
  EXPECT_EQ(run->labels, labels);

  // A gang's node: the host's network (its rendezvous), its rank in the name.
  protocol::GangRendezvous gang{.rank = 1, .nodes = 2, .addrs = {"10.0.0.1", "10.0.0.2"}, .master_addr = "10.0.0.1",
                                .master_port = 29500, .gpus_per_node = 2};
  auto node = container_run(7, 3, program, options, dir, env, gang, std::nullopt);
  ASSERT_TRUE(node) << node.error().message;
  EXPECT_TRUE(node->host_network);
  EXPECT_EQ(node->name, "jobctl-job-7-lease-3-rank-1");
  EXPECT_FALSE(node->user) << "no --run-as: the image's user";
}

TEST(PodmanRuntime, RunsWithoutPrivilegesItsMountsAndLimitsAndNothingOfTheWorkersEnvironment) {
  auto runtime = make_podman_runtime({.program = "true"});  // `true` answers `version`: no podman needed
  ASSERT_TRUE(runtime) << runtime.error().message;
  ContainerRun run;
  run.name = "jobctl-job-7-lease-3";
  run.labels = {{"io.jobctl.job", "7"}};
  run.image = "127.0.0.1:5000/team/train:1";
  run.argv = {"python3", "train.py", "--steps", "3"};
  run.env = {"LR=0.1"};
  run.workdir = "/w/job-7-lease-3/work";
  run.binds = {{"/w/job-7-lease-3", "/w/job-7-lease-3", true}, {"/srv/data", "/data", false}};
  run.user = std::pair<uint32_t, uint32_t>{1234, 1235};
  run.memory_bytes = 1 << 20;
  run.pids_limit = 512;
  run.devices = {"/dev/nvidia0"};
  const std::vector<std::string> a = (*runtime)->run_command(run);
  auto after = [&](const std::string& flag, const std::string& value) {
    for (size_t i = 0; i + 1 < a.size(); ++i)
      if (a[i] == flag && a[i + 1] == value) return true;
    return false;
  };
  EXPECT_EQ(a[0], "true");
  EXPECT_EQ(a[1], "run");
  EXPECT_TRUE(contains(a, "--init")) << "a PID 1 that forwards SIGTERM";
  EXPECT_TRUE(contains(a, "--rm"));
  EXPECT_TRUE(after("--cap-drop", "all"));
  EXPECT_TRUE(after("--security-opt", "no-new-privileges"));
  EXPECT_TRUE(after("--pull", "never")) << "prepare_image pulled it, with the owner's credential";
  EXPECT_TRUE(after("--name", "jobctl-job-7-lease-3"));
  EXPECT_TRUE(after("--label", "io.jobctl.job=7"));
  EXPECT_TRUE(after("--user", "1234:1235"));
  EXPECT_TRUE(after("--memory", "1048576b"));
  EXPECT_TRUE(after("--pids-limit", "512"));
  EXPECT_TRUE(after("--volume", "/w/job-7-lease-3:/w/job-7-lease-3:rw"));
  EXPECT_TRUE(after("--volume", "/srv/data:/data:ro"));
  EXPECT_TRUE(after("--device", "/dev/nvidia0"));
  EXPECT_TRUE(after("--env", "LR=0.1"));
  EXPECT_TRUE(after("--workdir", "/w/job-7-lease-3/work"));
  EXPECT_FALSE(contains(a, "--network")) << "no gang: the runtime's own network";
  EXPECT_FALSE(contains(a, "--env-host"));
  // The image, then the program's argv as it is, after "--".
  const auto dashes = std::find(a.begin(), a.end(), "--");
  ASSERT_NE(dashes, a.end());
  EXPECT_EQ(std::vector<std::string>(dashes + 1, a.end()),
            (std::vector<std::string>{"127.0.0.1:5000/team/train:1", "python3", "train.py", "--steps", "3"}));
}

TEST(AllowedMounts, PrefixesMatchWholeFoldersAndWritesOnlyWhereAllowed) {
  auto ro = train::parse_allowed_mount("/srv/data/");
  ASSERT_TRUE(ro);
  EXPECT_EQ(*ro, (train::AllowedMount{"/srv/data", false}));
  auto rw = train::parse_allowed_mount("/scratch:rw");
  ASSERT_TRUE(rw);
  EXPECT_TRUE(rw->writable);
  for (const char* bad : {"srv/data", "/srv/../etc", "/srv/data:rx", "", ":rw", "/a/./b"}) {
    auto r = train::parse_allowed_mount(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.error().field, "--allow-mount");
  }
  const std::vector<train::AllowedMount> allowed = {*ro, *rw};
  EXPECT_TRUE(train::mount_allowed("/srv/data", false, allowed));
  EXPECT_TRUE(train::mount_allowed("/srv/data/fmnist", false, allowed));
  EXPECT_FALSE(train::mount_allowed("/srv/database", false, allowed)) << "by whole components";
  EXPECT_FALSE(train::mount_allowed("/srv/data/fmnist", true, allowed));
  EXPECT_TRUE(train::mount_allowed("/scratch/run1", true, allowed));
  EXPECT_FALSE(train::mount_allowed("/etc", false, allowed));
  EXPECT_TRUE(train::path_within("/anything", "/"));
}

}  // namespace
}  // namespace jobctl::worker
