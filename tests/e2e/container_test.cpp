// Jobs in an image end to end (docs/job-protocol.md, "Jobs in an image"): real rootful podman, a
// real registry (Debian's docker-registry on 127.0.0.1, TLS from a certificate the test makes,
// htpasswd logins) and an image the test builds from this machine's own files (Debian's python3
// with python3-torch: tests/support/make_torch_image.sh) and pushes there, once for every test.
//
// TrainsInItsImageOnSpotAndResumesElsewhere: examples/pytorch/train.py as a command job in that
// image on cloudsim spot instances (the instances' workers run podman), the owner's registry login
// stored in jobctld, Fashion-MNIST mounted read-only from the host; a notice mid-run: the program
// checkpoints inside its container, a second instance pulls the image and resumes, the weights
// equal an uninterrupted run's, image_digest is the registry's digest, and the password is in no
// event, log, database file, `podman inspect` or /proc of the job.
//
// ItsUserMountsAndNothingElseOfTheHost: a root worker with --run-as: the program in the container
// runs as the mapped user, reads the allowed folder and cannot write it, cannot read the
// worker's token file or another job's folder, and sees no host process; a mount outside the
// allowed folders and a malformed image are refused at submit naming the field.
//
// AKilledWorkersContainerIsRemovedAtItsRestart: SIGKILL of the worker while its container runs a
// program that ignores SIGTERM leaves the container (podman's monitor owns it); the worker started
// again removes it, and the job is recovered once.
//
// AGangOfTwoNodesInItsImageMatchesItsTwoProcessRun: examples/pytorch/train_ddp.py as a gang of two
// nodes on two podman workers, each node's container on the host's network (where the
// rendezvous addresses are), the code a bundle each node unpacks: the final weights equal the
// program's 2-process run outside jobctl.
//
// ASlurmJobInItsImageRunsInPodmanInsideItsBatchJob: a job in the image placed on a partition of a
// real one-node Slurm cluster (scripts/slurm-cluster.sh): jobctld's slurm.containers starts the
// batch job's worker with --container-runtime podman, which runs train.py in the image.
//
// PullFailuresNameTheImage: an unknown image, an unreachable registry and a wrong password each
// fail the job with a reason naming the image; the wrong password is nowhere to be read.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <regex>
#include <string>

#include "cloud/sim_provider.h"
#include "process/run.h"
#include "tests/e2e/cloud_support.h"
#include "tests/e2e/ddp_support.h"
#include "tests/e2e/recovery_support.h"
#include "tests/security/worker_site.h"
#include "tests/support/ci.h"
#include "tests/support/slurm_cluster.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {
namespace {

namespace fs = std::filesystem;

constexpr const char* kRegistryUser = "alice";
constexpr const char* kRegistryPassword = "reg-pw-5b8e1f0c9a";  // searched for everywhere it must not be
// The examples' dataset, mounted read-only where they look for it (the workers allow /usr/share/datasets).
constexpr const char* kDatasetMount = "/usr/share/datasets/fashion-mnist:/usr/share/datasets/fashion-mnist";

process::RunResult sh(const std::string& command, std::chrono::seconds timeout = std::chrono::seconds(300)) {
  return jobctl::testing::run_to_end({"/bin/sh", "-c", command}, timeout);
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string shq(const std::string& s) { return cloud::shell_quote(s); }

// The registry and the image every test uses, made once.
class ImageSite {
 public:
  static ImageSite& get() {
    static ImageSite site;
    return site;
  }
  const std::string& unavailable() const { return unavailable_; }
  const std::string& registry() const { return registry_; }   // 127.0.0.1:PORT
  const std::string& image() const { return image_; }         // registry/team/torch:1
  const std::string& digest() const { return digest_; }       // the registry's manifest digest
  const std::string& cert_dir() const { return cert_dir_; }   // its CA, for --registry-cert-dir
  std::string summary() const { return summary_; }

  ~ImageSite() {
    if (registry_process_) registry_process_->stop(SIGTERM, std::chrono::seconds(5));
    if (!local_image_.empty()) sh("podman rmi -f " + shq(local_image_) + " " + shq(image_) + " >/dev/null 2>&1");
  }

 private:
  ImageSite() {
    using clock = std::chrono::steady_clock;
    if (!sh("podman info >/dev/null 2>&1").success()) {
      unavailable_ = "podman does not run here (scripts/setup.sh installs and sets it up)";
      return;
    }
    if (!sh("command -v docker-registry >/dev/null").success()) {
      unavailable_ = "docker-registry is not installed (scripts/setup.sh)";
      return;
    }
    if (!torch_available()) {
      unavailable_ = "Debian's python3-torch is not installed (scripts/setup.sh)";
      return;
    }
    const std::string d = dir_.path().string();
    cert_dir_ = dir_.file("certs");
    fs::create_directories(cert_dir_);
    // The registry's certificate, for 127.0.0.1; workers trust it through --registry-cert-dir.
    auto cert = sh("openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1"
                   " -keyout " + shq(d + "/key.pem") + " -out " + shq(d + "/cert.pem") + " 2>&1 && cp " +
                   shq(d + "/cert.pem") + " " + shq(cert_dir_ + "/ca.crt"));
    // A bcrypt htpasswd line (what the registry reads), from Debian's python3.
    auto htpasswd = sh("/usr/bin/python3 -W ignore -c \"import crypt; print('" + std::string(kRegistryUser) +
                       ":' + crypt.crypt('" + kRegistryPassword + "', crypt.mksalt(crypt.METHOD_BLOWFISH)))\" > " +
                       shq(d + "/htpasswd"));
    if (!cert.success() || !htpasswd.success()) {
      ADD_FAILURE() << "cannot make the registry's certificate or logins: " << cert.out << cert.err << htpasswd.err;
      return;
    }
    registry_ = "127.0.0.1:" + std::to_string(free_port());
    std::ofstream(d + "/registry.yml") << "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: "
                                       << d << "/data\nhttp:\n  addr: " << registry_ << "\n  tls:\n    certificate: " << d
                                       << "/cert.pem\n    key: " << d << "/key.pem\nauth:\n  htpasswd:\n    realm: jobctl-test\n"
                                       << "    path: " << d << "/htpasswd\n";
    registry_process_ = std::make_unique<jobctl::testing::Process>(
        std::vector<std::string>{"docker-registry", "serve", d + "/registry.yml"});
    const std::string curl = "curl -s -o /dev/null -w '%{http_code}' --cacert " + shq(d + "/cert.pem");
    const bool up = jobctl::testing::poll_until(
        [&] { return sh(curl + " https://" + registry_ + "/v2/").out == "401"; }, std::chrono::seconds(30));
    if (!up) {
      ADD_FAILURE() << "docker-registry did not answer on " << registry_ << ":\n" << registry_process_->output();
      return;
    }

    local_image_ = "localhost/jobctl-test-torch-" + std::to_string(::getpid()) + ":1";
    image_ = registry_ + "/team/torch:1";
    auto t0 = clock::now();
    auto built = sh(shq(jobctl::testing::env_or_fail("JOBCTL_SOURCE_DIR") + "/tests/support/make_torch_image.sh") + " " +
                    shq(local_image_));
    const double build_s = std::chrono::duration<double>(clock::now() - t0).count();
    if (!built.success()) {
      ADD_FAILURE() << "cannot build the image: " << built.describe() << "\n" << built.out << built.err;
      return;
    }
    auto size = sh("podman image inspect --format '{{.Size}}' " + shq(local_image_));
    // The push logs in with an auth file of the test's own (podman's format).
    const std::string auth = d + "/push-auth.json";
    auto wrote = sh("printf '{\"auths\":{\"%s\":{\"auth\":\"%s\"}}}' " + shq(registry_) + " \"$(printf %s " +
                    shq(std::string(kRegistryUser) + ":" + kRegistryPassword) + " | base64 -w0)\" > " + shq(auth));
    t0 = clock::now();
    auto pushed = sh("podman push --authfile " + shq(auth) + " --cert-dir " + shq(cert_dir_) + " " +
                     shq(local_image_) + " " + shq("docker://" + image_) + " 2>&1");
    const double push_s = std::chrono::duration<double>(clock::now() - t0).count();
    ::unlink(auth.c_str());
    if (!wrote.success() || !pushed.success()) {
      ADD_FAILURE() << "cannot push the image: " << pushed.describe() << "\n" << pushed.out;
      return;
    }
    // Only the registry holds it now: the first worker pulls it whole.
    sh("podman rmi -f " + shq(local_image_) + " >/dev/null 2>&1");
    auto head = sh(curl.substr(0, curl.find(" -o ")) + " -I --cacert " + shq(d + "/cert.pem") + " -u " +
                   shq(std::string(kRegistryUser) + ":" + kRegistryPassword) +
                   " -H 'Accept: application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json'"
                   " https://" + image_.substr(0, image_.find('/')) + "/v2/team/torch/manifests/1");
    std::smatch m;
    if (std::regex_search(head.out, m, std::regex("[Dd]ocker-[Cc]ontent-[Dd]igest: (sha256:[0-9a-f]{64})")))
      digest_ = m[1];
    EXPECT_EQ(digest_.size(), 71u) << "the registry's digest of the image: " << head.out << head.err;
    summary_ = "image " + image_ + " (" + std::to_string(std::stoll("0" + size.out) / 1000000) + " MB) built in " +
               std::to_string(static_cast<int>(build_s)) + " s, pushed in " + std::to_string(static_cast<int>(push_s)) + " s";
    std::cout << "container e2e: " << summary_ << "\n";
  }

  jobctl::testing::TempDir dir_;
  std::string unavailable_;
  std::string registry_, image_, local_image_, digest_, cert_dir_, summary_;
  std::unique_ptr<jobctl::testing::Process> registry_process_;
};

#define REQUIRE_IMAGE_SITE()                                                       \
  ImageSite& site = ImageSite::get();                                              \
  if (!site.unavailable().empty()) JOBCTL_SKIP_UNLESS_CI(site.unavailable());      \
  ASSERT_FALSE(site.digest().empty()) << "the image site did not come up"

// The containers labelled with this job (any lease), by name.
std::string containers_of(int64_t job) {
  return sh("podman ps -a --filter label=io.jobctl.job=" + std::to_string(job) + " --format '{{.Names}}'").out;
}

void store_registry_login(client::ApiClient& api, const std::string& registry, const std::string& password) {
  auto r = api.http().request("PUT", "/v1/registry-credentials/" + registry,
                              json{{"username", kRegistryUser}, {"password", password}}.dump());
  ASSERT_TRUE(r);
  ASSERT_LT(r->status, 300) << r->body;
}

// Everything of one running container a user of the machine could read: its configuration, and
// its program's environment and command line.
std::string container_surface(const std::string& name) {
  const std::string pid = sh("podman inspect --format '{{.State.Pid}}' " + shq(name)).out;
  std::string s = sh("podman inspect " + shq(name)).out;
  const std::string p = pid.substr(0, pid.find('\n'));
  s += read_bytes("/proc/" + p + "/environ") + read_bytes("/proc/" + p + "/cmdline");
  return s;
}

TEST(Containers, TrainsInItsImageOnSpotAndResumesElsewhere) {
  REQUIRE_IMAGE_SITE();
  jobctl::testing::TempDir tmp;
  const std::vector<std::string> train_args = {"train.py", "--steps", "400", "--checkpoint-every", "100",
                                               "--step-delay", "0.03"};
  // The uninterrupted run: the machine's own interpreter, the same program and arguments.
  const auto reference_run = jobctl::testing::run_to_end(
      {kDebianPython, source_path("examples/pytorch/train.py"), "--steps", "400", "--checkpoint-every", "0"});
  const json reference = result_line(reference_run.out);
  ASSERT_TRUE(reference.contains("weights_sha256")) << reference_run.out << reference_run.err;

  // The instances' workers run podman and trust the registry's CA; jobctld starts them with
  // --container-runtime podman and the allowed dataset folder (cloud.containers, allowed_mounts).
  CloudSim sim(tmp.file("cloudsim"), " --allow-commands --registry-cert-dir " + shq(site.cert_dir()));
  ASSERT_FALSE(sim.url().empty());
  const json config = {{"cloud",
                        {{"provider", "sim"},
                         {"tag", "image-e2e"},
                         {"poll_s", 1},
                         {"idle_timeout_s", 3},
                         {"containers", "podman"},
                         {"allowed_mounts", {"/usr/share/datasets"}},
                         {"sim", {{"url", sim.url()}}}}}};
  std::ofstream(tmp.file("jobctld.json")) << config.dump();
  Daemon d(tmp.file("data"), "127.0.0.1:0", 30, {"--config", tmp.file("jobctld.json")});
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  cloud::SimProvider cloudsim({sim.url(), 5000});
  store_registry_login(api, site.registry(), kRegistryPassword);

  // Submitted as a user would: the folder as a bundle, the image and the dataset mount as flags.
  const json spec = {{"name", "torch-in-image"},
                     {"estimate", {{"hours", 0.5}, {"gpu", "V100"}}},
                     {"resources", {{"gpu", "V100"}, {"gpus", 1}}},
                     {"placement", {{"mode", "cloud"}}}};
  std::ofstream(tmp.file("spec.json")) << spec.dump();
  std::vector<std::string> cli = {"--workdir", source_path("examples/pytorch"), "--image", site.image(),
                                  "--image-pull", "always", "--mount", kDatasetMount, tmp.file("spec.json"), "--",
                                  "python3"};
  cli.insert(cli.end(), train_args.begin(), train_args.end());
  const int64_t id = submit_with_cli(d.url(), cli);
  ASSERT_GT(id, 0);
  auto diagnostics = [&] {
    std::string s = "\n--- jobctld:\n" + d.process().output() + "\n--- cloudsim:\n" + sim.process().output();
    for (const auto& i : instances(api))
      s += "\n--- instance " + i.value("id", "") + ":\n" +
           read_bytes(tmp.file("cloudsim/instances/" + i.value("id", "") + "/worker.log"));
    return s;
  };

  json job = wait_job(api, id, [](const json& j) { return progress_step(j) >= 120 || is_terminal(j); }, 240s);
  ASSERT_GE(progress_step(job), 120) << job.dump(2) << diagnostics();
  ASSERT_EQ(job["placement"]["chosen"]["option"], "spot") << job["placement"].dump(2);
  const std::string first_container = "jobctl-job-" + std::to_string(id) + "-lease-" + std::to_string(job["lease_epoch"].get<int64_t>());
  ASSERT_NE(containers_of(id).find(first_container), std::string::npos) << containers_of(id) << diagnostics();
  const std::string surface = container_surface(first_container);
  EXPECT_NE(surface.find("JOBCTL_CHECKPOINT_DIR="), std::string::npos) << "the surface read is the job's";
  EXPECT_EQ(surface.find(kRegistryPassword), std::string::npos) << "the registry password in the container's inspect or /proc";
  std::string first;
  for (const auto& i : instances(api))
    if (i["job_id"] == id) first = i["id"];
  ASSERT_FALSE(first.empty()) << instances(api).dump(2);

  client::HttpClient http(sim.url());
  auto r = http.request("POST", "/instances/" + first + "/interrupt", "{}");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200) << r->body;
  job = wait_job(api, id, is_terminal, 300s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << diagnostics();
  EXPECT_EQ(job["recoveries"], 1);
  EXPECT_EQ(job["result"].value("weights_sha256", ""), reference["weights_sha256"]) << job["result"].dump();
  EXPECT_EQ(job.value("image_digest", json()).get<std::string>(), site.digest()) << job.dump(2);

  std::string second_log;
  for (const auto& i : instances(api))
    if (i["id"] != first && i["launched_for_job_id"] == id)
      second_log = read_bytes(tmp.file("cloudsim/instances/" + i["id"].get<std::string>() + "/worker.log"));
  EXPECT_NE(second_log.find("resuming from the checkpoint at step"), std::string::npos) << second_log;
  EXPECT_TRUE(std::regex_search(second_log, std::regex("image " + std::regex_replace(site.image(), std::regex("[.]"), "\\.") +
                                                       " sha256:[0-9a-f]{64} \\([0-9.]+ MB\\), pulled in")))
      << second_log;
  const std::string log = job_log_text(api, id);
  EXPECT_NE(log.find("[image] " + site.image() + ": " + site.digest()), std::string::npos) << log;
  EXPECT_NE(log.find("train.py: python /usr/bin/python3"), std::string::npos) << "the image's interpreter: " << log;
  // The password: nowhere but the registry and jobctld's sealed row.
  EXPECT_EQ(job.dump().find(kRegistryPassword), std::string::npos);
  EXPECT_EQ(log.find(kRegistryPassword), std::string::npos);
  EXPECT_EQ(diagnostics().find(kRegistryPassword), std::string::npos);
  for (const auto& f : fs::recursive_directory_iterator(tmp.path()))
    if (f.is_regular_file()) EXPECT_EQ(read_bytes(f.path().string()).find(kRegistryPassword), std::string::npos) << f.path();
  EXPECT_TRUE(containers_of(id).empty()) << containers_of(id);
  ASSERT_TRUE(all_instances_ended(api, cloudsim, "image-e2e", 60s)) << instances(api).dump(2);
  std::cout << "container e2e: " << site.summary() << "; resumed in the image from step "
            << job["result"].value("resumed_from", int64_t{-1}) << ", final weights "
            << job["result"]["weights_sha256"].get<std::string>() << " (uninterrupted: "
            << reference["weights_sha256"].get<std::string>() << "); image_digest " << site.digest() << "\n";
}

// The checks the program makes of its container, printed as its result.
constexpr const char* kProbe = R"(
import json, os, sys
def can(f):
    try:
        f(); return True
    except OSError as e:
        return e.strerror
token, other, data = sys.argv[1], sys.argv[2], sys.argv[3]
pids = [p for p in os.listdir('/proc') if p.isdigit()]
print(json.dumps({"event": "result", "uid": os.getuid(), "gid": os.getgid(),
    "read_data": can(lambda: open(data + '/train-labels-idx1-ubyte.gz', 'rb').read(8)),
    "write_data": can(lambda: open(data + '/planted', 'w').write('x')),
    "read_token": can(lambda: open(token).read()),
    "list_other_job": can(lambda: os.listdir(other)),
    "processes": len(pids)}))
)";

TEST(Containers, ItsUserMountsAndNothingElseOfTheHost) {
  REQUIRE_IMAGE_SITE();
  if (::geteuid() != 0) JOBCTL_SKIP_UNLESS_CI("needs root (a worker with --run-as and rootful podman)");
  jobctl::testing::TempDir tmp;
  security::TestUser user;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  store_registry_login(api, site.registry(), kRegistryPassword);
  // The worker's token file, and another job's folder with a file in it, beside the job's.
  const std::string token = tmp.file("worker-token");
  std::ofstream(token) << "jct_" << std::string(64, 'b');
  fs::permissions(token, fs::perms::owner_read | fs::perms::owner_write);
  const std::string work = tmp.file("work");
  fs::create_directories(work + "/job-999-lease-1");
  std::ofstream(work + "/job-999-lease-1/spec.json") << "{}";
  fs::permissions(tmp.path(), fs::perms::all);
  fs::permissions(work, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec | fs::perms::others_read |
                            fs::perms::others_exec);
  jobctl::testing::Process worker(worker_argv(d.url(), "boxed", work,
                                              {"--allow-commands", "--container-runtime", "podman", "--run-as",
                                               user.name(), "--allow-mount", "/usr/share/datasets", "--token-file",
                                               token, "--registry-cert-dir", site.cert_dir()}));
  ASSERT_TRUE(worker.wait_for_output("registered with", 60s)) << worker.output();

  const std::string data = "/usr/share/datasets/fashion-mnist";
  const json spec = {{"name", "probe"},
                     {"command", {"python3", "-c", kProbe, token, work + "/job-999-lease-1", "/data"}},
                     {"image", site.image()},
                     {"mounts", {{{"source", data}, {"target", "/data"}}}},
                     {"resources", {{"gpu", "cpu"}}}};
  auto submitted = api.submit_job(spec.dump());
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t id = (*submitted)["id"];
  const json job = wait_job(api, id, is_terminal, 180s);
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- worker:\n" << worker.output();
  const json& seen = job["result"];
  EXPECT_EQ(seen.value("uid", -1), static_cast<int>(user.credentials().uid)) << seen.dump();
  EXPECT_EQ(seen.value("read_data", json()), json(true)) << seen.dump();
  EXPECT_EQ(seen.value("write_data", json()), json("Read-only file system")) << seen.dump();
  EXPECT_EQ(seen.value("read_token", json()), json("No such file or directory")) << seen.dump();
  EXPECT_EQ(seen.value("list_other_job", json()), json("No such file or directory")) << seen.dump();
  EXPECT_LE(seen.value("processes", 100), 3) << "only the container's own processes: " << seen.dump();
  EXPECT_FALSE(fs::exists(data + "/planted"));

  // Refused at submit, naming the field: a mount no worker allows, a malformed image.
  json outside = spec;
  outside["mounts"][0]["source"] = "/etc";
  auto refused = api.submit_job(outside.dump());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().field, "mounts[0]") << refused.error().message;
  json malformed = spec;
  malformed["image"] = "Team/Torch:1";
  refused = api.submit_job(malformed.dump());
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().field, "image") << refused.error().message;
}

TEST(Containers, AKilledWorkersContainerIsRemovedAtItsRestart) {
  REQUIRE_IMAGE_SITE();
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  store_registry_login(api, site.registry(), kRegistryPassword);
  const auto worker_args = worker_argv(d.url(), "killed", tmp.file("work"),
                                       {"--allow-commands", "--container-runtime", "podman", "--registry-cert-dir",
                                        site.cert_dir(), "--machine-id", "killed-box"});
  auto worker = std::make_unique<jobctl::testing::Process>(worker_args);
  const json spec = {{"name", "sleeper"},
                     // It ignores SIGTERM: the worker's death reaches podman as one (PR_SET_PDEATHSIG),
                     // which forwards it to the program; a program that stops on it leaves nothing.
                     {"command", {"python3", "-c",
                                  "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                  "print('sleeping', flush=True)\ntime.sleep(600)"}},
                     {"image", site.image()},
                     {"resources", {{"gpu", "cpu"}}}};
  auto submitted = api.submit_job(spec.dump());
  ASSERT_TRUE(submitted) << submitted.error().message;
  const int64_t id = (*submitted)["id"];
  json job = wait_job(api, id, [](const json& j) { return j.value("state", "") == "running" || is_terminal(j); }, 180s);
  ASSERT_EQ(job.value("state", ""), "running") << job.dump(2) << worker->output();
  const std::string name = "jobctl-job-" + std::to_string(id) + "-lease-" + std::to_string(job["lease_epoch"].get<int64_t>());
  ASSERT_TRUE(jobctl::testing::poll_until([&] { return containers_of(id).find(name) != std::string::npos; }, 60s))
      << containers_of(id) << worker->output();

  // SIGKILL: the worker goes, its container stays (podman's monitor runs it).
  ::kill(worker->pid(), SIGKILL);
  worker->stop(SIGKILL, 10s);
  worker.reset();
  EXPECT_NE(containers_of(id).find(name), std::string::npos) << "podman's monitor keeps the container";
  worker = std::make_unique<jobctl::testing::Process>(worker_args);
  ASSERT_TRUE(worker->wait_for_output("registered with", 60s)) << worker->output();
  EXPECT_NE(worker->output().find("removed container " + name), std::string::npos) << worker->output();
  EXPECT_EQ(containers_of(id).find(name), std::string::npos) << containers_of(id);
  job = wait_job(api, id, [](const json& j) { return j.value("recoveries", 0) >= 1 || is_terminal(j); }, 60s);
  EXPECT_EQ(job.value("recoveries", 0), 1) << job.dump(2);
  auto cancelled = api.http().request("POST", "/v1/jobs/" + std::to_string(id) + "/cancel", "{}");
  ASSERT_TRUE(cancelled);
  job = wait_job(api, id, is_terminal, 60s);
  EXPECT_EQ(job.value("state", ""), "cancelled") << job.dump(2);
  EXPECT_TRUE(jobctl::testing::poll_until([&] { return containers_of(id).empty(); }, 30s)) << containers_of(id);
}

// train_ddp.py's arguments for the gang in an image: a few seconds of training.
std::vector<std::string> gang_args() {
  return {"--steps", "40", "--train-samples", "512", "--test-samples", "200", "--hidden", "32",
          "--batch-size", "64", "--log-every", "10", "--checkpoint-every", "20"};
}

TEST(Containers, AGangOfTwoNodesInItsImageMatchesItsTwoProcessRun) {
  REQUIRE_IMAGE_SITE();
  // The 2-process run outside jobctl (the machine's own interpreter), while the gang runs.
  auto reference = std::async(std::launch::async, [] { return run_ddp_reference(gang_args()); });
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  store_registry_login(api, site.registry(), kRegistryPassword);
  std::vector<std::unique_ptr<Process>> workers;
  for (const std::string name : {"node-a", "node-b"})
    workers.push_back(std::make_unique<Process>(
        worker_argv(d.url(), name, tmp.file("work-" + name),
                    {"--allow-commands", "--container-runtime", "podman", "--allow-mount", "/usr/share/datasets",
                     "--registry-cert-dir", site.cert_dir()})));
  auto outputs = [&] {
    std::string s;
    for (auto& w : workers) s += "\n--- worker:\n" + w->output();
    return s + "\n--- jobctld:\n" + d.process().output();
  };
  // A gang is judged at submit against the registered workers: both first.
  ASSERT_TRUE(jobctl::testing::poll_until([&] {
    auto w = api.list_workers();
    return w && w->value("workers", json::array()).size() == 2;
  }, 60s)) << outputs();

  // Submitted as a user would: the example's folder as a bundle (each node unpacks it), the image
  // and the dataset mount as flags.
  const json spec = {{"name", "ddp-in-image"}, {"resources", {{"gpu", "cpu"}, {"nodes", 2}}}};
  std::ofstream(tmp.file("spec.json")) << spec.dump();
  std::vector<std::string> cli = {"--workdir", source_path("examples/pytorch"), "--image", site.image(), "--mount",
                                  kDatasetMount, tmp.file("spec.json"), "--", "python3", "train_ddp.py"};
  for (const auto& a : gang_args()) cli.push_back(a);
  const int64_t id = submit_with_cli(d.url(), cli);
  ASSERT_GT(id, 0);
  const json job = wait_job(api, id, is_terminal, 240s);
  const std::string expected = ddp_weights_hash(reference.get());
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- log:\n" << job_log_text(api, id) << outputs();
  EXPECT_EQ(job["result"].value("weights_sha256", ""), expected) << job["result"].dump();
  EXPECT_EQ(job["result"].value("world_size", 0), 2) << job["result"].dump();
  EXPECT_EQ(job.value("recoveries", -1), 0) << job["events"].dump(1);
  EXPECT_EQ(job.value("image_digest", json()).get<std::string>(), site.digest()) << job.dump(2);
  // Both nodes ran in the image (each worker prepared it for its node), rank 1's lines in the log.
  for (auto& w : workers)
    EXPECT_NE(w->output().find("job " + std::to_string(id) + ": image " + site.image() + " sha256:"), std::string::npos)
        << w->output();
  const std::string log = job_log_text(api, id);
  EXPECT_NE(log.find("[rank 1] "), std::string::npos) << log;
  EXPECT_TRUE(jobctl::testing::poll_until([&] { return containers_of(id).empty(); }, 30s)) << containers_of(id);
  std::cout << "container e2e: a gang of 2 nodes in the image, final weights "
            << job["result"].value("weights_sha256", "") << " (2 processes outside jobctl: " << expected << ")\n";
}

// A job in an image placed on a Slurm partition (docs/slurm.md, "The batch job"): jobctld's
// `slurm.containers` and `slurm.allowed_mounts` start the batch job's worker with
// --container-runtime podman and the dataset folder allowed; it pulls the image and runs
// train.py in podman inside the batch job, in the image's interpreter.
TEST(Containers, ASlurmJobInItsImageRunsInPodmanInsideItsBatchJob) {
  REQUIRE_IMAGE_SITE();
  jobctl::testing::SlurmCluster cluster;
  JOBCTL_REQUIRE_SLURM(cluster);
  jobctl::testing::TempDir tmp;
  // The partition's V100s are the only option: priced as owned GPUs bought for nothing.
  const json config = {
      {"cost", {{"local_gpus", {{{"gpu_model", "V100"}, {"count", 2}, {"purchase_usd", 0}, {"power_kw", 0.001}}}}}},
      {"slurm",
       {{"conf_file", cluster.conf()},
        {"poll_s", 1},
        {"tag", "image-e2e"},
        {"partitions", {{{"name", "gpu"}, {"gpu_model", "V100"}}}},
        {"worker_command", env_or_fail("JOBCTL_WORKER") + " --server {server} --trainer " + env_or_fail("JOBCTL_TRAIN") +
                               " --work-dir " + tmp.file("work") + " --device cpu --threads 1 --wait-s 2" +
                               " --registry-cert-dir " + shq(site.cert_dir())},
        {"sbatch_options", {"--output=" + tmp.file("slurm-%j.out")}},
        {"startup_s", 900},
        {"containers", "podman"},
        {"allowed_mounts", {"/usr/share/datasets"}}}}};
  std::ofstream(tmp.file("jobctld.json")) << config.dump();
  Daemon d(tmp.file("data"), "127.0.0.1:0", 30, {"--config", tmp.file("jobctld.json")});
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  store_registry_login(api, site.registry(), kRegistryPassword);

  const json spec = {{"name", "slurm-in-image"}, {"resources", {{"gpu", "V100"}, {"gpus", 1}}}};
  std::ofstream(tmp.file("spec.json")) << spec.dump();
  const int64_t id = submit_with_cli(d.url(), {"--workdir", source_path("examples/pytorch"), "--image", site.image(),
                                               "--mount", kDatasetMount, tmp.file("spec.json"), "--", "python3",
                                               "train.py", "--steps", "30", "--checkpoint-every", "0"});
  ASSERT_GT(id, 0);
  const json job = wait_job(api, id, is_terminal, 240s);
  std::string batch_output;
  for (const auto& e : job.value("events", json::array()))
    if (e.value("type", "") == "slurm_submitted")
      batch_output += read_bytes(tmp.file("slurm-" + std::to_string(e["detail"].value("slurm_job_id", 0)) + ".out"));
  ASSERT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << "\n--- batch job:\n" << batch_output
                                                 << "\n--- jobctld:\n" << d.process().output() << cluster.logs();
  EXPECT_EQ(job["placement"]["chosen"]["option"], "slurm") << job["placement"].dump(2);
  EXPECT_EQ(job["result"].value("steps", 0), 30) << job["result"].dump();
  EXPECT_EQ(job.value("image_digest", json()).get<std::string>(), site.digest()) << job.dump(2);
  const std::string log = job_log_text(api, id);
  EXPECT_NE(log.find("[image] " + site.image() + ": " + site.digest()), std::string::npos) << log;
  EXPECT_NE(log.find("train.py: python /usr/bin/python3"), std::string::npos) << "the image's interpreter: " << log;
  // The worker the batch job ran was told to run podman, and did.
  EXPECT_NE(batch_output.find("job " + std::to_string(id) + ": image " + site.image() + " sha256:"), std::string::npos)
      << batch_output;
  EXPECT_TRUE(jobctl::testing::poll_until([&] { return containers_of(id).empty(); }, 30s)) << containers_of(id);
}

TEST(Containers, PullFailuresNameTheImage) {
  REQUIRE_IMAGE_SITE();
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  const std::string wrong_password = "wrong-pw-0d41c7e2";
  store_registry_login(api, site.registry(), wrong_password);
  jobctl::testing::Process worker(worker_argv(d.url(), "puller", tmp.file("work"),
                                              {"--allow-commands", "--container-runtime", "podman",
                                               "--registry-cert-dir", site.cert_dir()}));
  const std::string unknown = "localhost/jobctl-no-such-image:1";
  const std::string unreachable = "127.0.0.1:" + std::to_string(free_port()) + "/team/torch:1";
  for (const std::string& image : {unknown, unreachable, site.image()}) {
    const json spec = {{"name", "pull"}, {"command", {"python3", "-c", "print(1)"}}, {"image", image},
                       {"image_pull", "always"}, {"resources", {{"gpu", "cpu"}}}};
    auto submitted = api.submit_job(spec.dump());
    ASSERT_TRUE(submitted) << submitted.error().message;
    const int64_t id = (*submitted)["id"];
    const json job = wait_job(api, id, is_terminal, 120s);
    ASSERT_EQ(job.value("state", ""), "failed") << job.dump(2) << "\n--- worker:\n" << worker.output();
    const std::string error = job.value("error", "");
    EXPECT_NE(error.find("cannot pull image " + image), std::string::npos) << error;
    EXPECT_EQ(job.dump().find(wrong_password), std::string::npos);
    EXPECT_EQ(job_log_text(api, id).find(wrong_password), std::string::npos);
  }
  EXPECT_EQ(worker.output().find(wrong_password), std::string::npos);
  EXPECT_EQ(d.process().output().find(wrong_password), std::string::npos);
  for (const auto& f : fs::recursive_directory_iterator(tmp.path()))
    if (f.is_regular_file()) EXPECT_EQ(read_bytes(f.path().string()).find(wrong_password), std::string::npos) << f.path();
}

}  // namespace
}  // namespace jobctl::e2e
