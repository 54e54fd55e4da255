// The fleet soak (CTest label `soak`): a real, mixed fleet under a random stream of jobs and faults.
//
// Processes, all real, on loopback: jobctld (placement on, owned-GPU prices configured, the
// provisioner on jobctl-cloudsim), jobctl-cloudsim (its instances are jobctl-worker processes,
// simulated), and six jobctl-worker processes whose GPUs are faked from tests/fixtures/nvidia-smi:
// a 4 x V100 box, 2 x RTX 4090, an A100 80 GB, an H100, an L4 and a CPU-only worker. Every job
// trains for real (jobctl-train, on the CPU, one thread).
//
// The stream (seeded): at least 200 specs naming GPUs every way the docs allow ("A100",
// "A100-80GB", "rtx 4090", "4090", "NVIDIA H100 80GB HBM3", ...), "cpu", "any", several GPUs,
// deadlines, price caps, spot modes on cloud offers, and impossible ones (an unknown name, a model
// nobody has, more GPUs than any machine, more memory than any GPU). Faults at random times:
// kill -9 of a worker (restarted), SIGSTOP of a worker for longer than the lease timeout, a worker
// that registers and vanishes, a spot interruption notice, SIGKILL and restart of jobctld.
//
// At the end it checks, and prints as a table with the seed: every accepted job succeeded (or was
// cancelled by the test); every refusal's reason is true; no two leases of one job overlapped; the
// ledger's owned-GPU charges equal the leases' seconds times the per-GPU prices within 1%.
//
// Time: JOBCTL_SOAK_SECONDS (default 150) of submitting, then up to 90 s for the queue to drain:
// at most 4 minutes in the test command. Longer: JOBCTL_SOAK_SECONDS=1800 JOBCTL_SOAK_JOBS=2000.
// JOBCTL_SOAK_SEED replays a run (default 20; "random" picks one and prints it).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "client/http_client.h"
#include "cloud/command_template.h"
#include "cost/gpu_specs.h"
#include "cost/local_gpu.h"
#include "tests/e2e/recovery_support.h"
#include "tests/support/temp_dir.h"
#include "tests/support/poll.h"

namespace jobctl::e2e {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kLeaseTimeoutS = 6;

struct SoakOptions {
  uint64_t seed = 20;
  int min_jobs = 200;
  double submit_seconds = 150;
  double drain_seconds = 90;
};

SoakOptions soak_options() {
  SoakOptions o;
  if (const char* s = std::getenv("JOBCTL_SOAK_SEED"); s && *s) {
    o.seed = std::string(s) == "random" ? static_cast<uint64_t>(std::random_device{}()) : std::stoull(s);
  }
  if (const char* s = std::getenv("JOBCTL_SOAK_JOBS"); s && *s) o.min_jobs = std::max(1, std::stoi(s));
  if (const char* s = std::getenv("JOBCTL_SOAK_SECONDS"); s && *s) o.submit_seconds = std::stod(s);
  return o;
}

std::string fixture(const std::string& name) {
  return env_or_fail("JOBCTL_SOURCE_DIR") + "/tests/fixtures/nvidia-smi/" + name;
}

// The owned fleet: a worker per entry, and its owned-GPU price in jobctld's configuration.
struct OwnedWorker {
  std::string name;
  std::string fixture;  // empty: a CPU-only worker
  std::string gpu;      // the inventory's gpu_model
  int gpus = 1;
  double purchase_usd = 0;
  double power_kw = 0;
};

const std::vector<OwnedWorker>& owned_fleet() {
  static const std::vector<OwnedWorker> fleet = {
      {"v100x4", "v100-sxm2-16gb-x4", "V100", 4, 2000, 0.30},
      {"rtx4090x2", "rtx4090-x2", "RTX4090", 2, 1600, 0.45},
      {"a100-80gb", "a100-sxm4-80gb", "A100-80GB", 1, 15000, 0.40},
      {"h100", "h100-sxm", "H100", 1, 30000, 0.70},
      {"l4", "l4", "L4", 1, 2500, 0.072},
      {"cpu", "", "cpu", 1, 1000, 0.15},
  };
  return fleet;
}

cost::LocalGpuInventory inventory(const OwnedWorker& w) {
  cost::LocalGpuInventory g;
  g.gpu_model = w.gpu;
  g.count = w.gpus;
  g.purchase_usd = w.purchase_usd;
  g.lifetime_years = 4;
  g.utilisation = 0.5;
  g.power_kw = w.power_kw;
  g.electricity_usd_per_kwh = 0.15;
  return g;
}

// What one GPU-hour of a worker costs (amortised): what the ledger must charge per GPU leased.
double per_gpu_hour(const OwnedWorker& w) { return cost::local_hourly_cost(inventory(w), cost::LocalPricing::amortised); }

std::string write_config(jobctl::testing::TempDir& tmp, const std::string& cloudsim_url) {
  json gpus = json::array();
  for (const auto& w : owned_fleet()) {
    const auto g = inventory(w);
    gpus.push_back({{"gpu_model", g.gpu_model}, {"count", g.count}, {"purchase_usd", g.purchase_usd},
                    {"lifetime_years", g.lifetime_years}, {"utilisation", g.utilisation}, {"power_kw", g.power_kw},
                    {"electricity_usd_per_kwh", g.electricity_usd_per_kwh}});
  }
  const std::string path = tmp.file("jobctld.json");
  std::ofstream(path) << json{{"workers", {{"max_recoveries", 100}, {"max_lease_wait_s", 5}}},
                              {"cost", {{"pricing", "amortised"}, {"local_gpus", gpus}}},
                              {"placement", {{"cloud_provider", "sim"}, {"clouds", {"aws"}}, {"reevaluate_s", 2}}},
                              {"cloud",
                               {{"provider", "sim"}, {"tag", "soak"}, {"poll_s", 1}, {"idle_timeout_s", 3},
                                {"sim", {{"url", cloudsim_url}}}}}}
                             .dump()
                      << "\n";
  return path;
}

// ------------------------------------------------------------------------------------------------
// The job stream

struct Planned {
  std::string kind;                  // what the generator meant: "gpu-name", "cpu", "cloud-spot", ...
  json spec;
  std::optional<std::string> field;  // an impossible spec: the field its refusal must name
  bool cancel = false;               // the test cancels it once accepted
};

json small_job(std::mt19937_64& rng, const std::string& name) {
  std::uniform_int_distribution<int> samples(128, 512);
  const bool longer = std::uniform_real_distribution<double>(0, 1)(rng) < 0.08;  // seconds, not a blink
  return json{{"name", name},
              {"model", {{"kind", "mlp"}, {"hidden", {16}}}},
              {"data", {{"dataset", "synthetic"}, {"samples", longer ? 12000 : samples(rng)}, {"test_samples", 64},
                        {"features", 16}, {"classes", 4}, {"seed", static_cast<int>(rng() % 1000)}}},
              {"train", {{"epochs", 1}, {"batch_size", 32}, {"seed", 7}}},
              {"checkpoint", {{"every_steps", 50}, {"keep", 2}}}};
}

Planned next_spec(std::mt19937_64& rng, int i) {
  Planned p;
  p.spec = small_job(rng, "soak-" + std::to_string(i));
  p.cancel = rng() % 40 == 0;  // a few are cancelled by the test, at once or while they run
  auto pick = [&rng](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  json& res = p.spec["resources"];
  json& pl = p.spec["placement"];
  pl = json::object();
  if (u < 0.40) {  // a GPU by one of its names
    p.kind = "gpu-name";
    res = {{"gpu", pick({"V100", "v100", "Tesla V100-SXM2-16GB", "RTX4090", "rtx 4090", "4090", "NVIDIA GeForce RTX 4090",
                         "A100", "A100-80GB", "a100 80gb", "NVIDIA A100-SXM4-80GB", "H100", "H100-SXM",
                         "NVIDIA H100 80GB HBM3", "L4", "nvidia l4"})}};
  } else if (u < 0.52) {
    p.kind = "cpu";
    res = {{"gpu", "cpu"}};
  } else if (u < 0.64) {
    p.kind = "any";
    res = {{"gpu", "any"}};
  } else if (u < 0.72) {  // several GPUs of one machine
    p.kind = "multi-gpu";
    if (rng() % 2)
      res = {{"gpu", "V100"}, {"gpus", 2 + static_cast<int>(rng() % 3)}};
    else
      res = {{"gpu", "RTX4090"}, {"gpus", 2}};
  } else if (u < 0.80) {  // a deadline and a price cap above the owned prices
    p.kind = "deadline-cap";
    res = {{"gpu", pick({"any", "V100", "RTX4090", "L4"})}};
    pl["deadline_hours"] = std::vector<double>{0.5, 2, 24}[rng() % 3];
    pl["max_usd_per_hour"] = 5.0;
  } else if (u < 0.88) {  // the cloud, in every spot mode
    p.kind = "cloud";
    res = {{"gpu", pick({"V100", "T4"})}};
    pl["mode"] = "cloud";
    pl["spot"] = pick({"auto", "always", "never"});
  } else {  // impossible
    p.kind = "impossible";
    switch (rng() % 4) {
      case 0:
        res = {{"gpu", pick({"RTX4080", "A100-48GB", "H10", "Voodoo2"})}};
        p.field = "resources.gpu";
        break;
      case 1:  // a model nobody has: no worker, no aws offer
        res = {{"gpu", pick({"GH200", "K80", "H100-NVL", "RTX6000"})}};
        p.field = "resources.gpu";
        break;
      case 2:  // more GPUs than any machine or offer has
        res = {{"gpu", pick({"H100", "A100-80GB", "RTX4090"})}, {"gpus", 16}};
        p.field = "resources.gpus";
        break;
      default:  // more memory than any GPU has: three dense layers of 65,536
        p.spec["model"]["hidden"] = {65536, 65536, 65536};
        res = {{"gpu", pick({"any", "H100", "A100"})}};
        p.field = "resources";
        break;
    }
  }
  return p;
}

// ------------------------------------------------------------------------------------------------
// The fleet

class Fleet {
 public:
  explicit Fleet(jobctl::testing::TempDir& tmp) : tmp_(tmp) {
    cloudsim_ = std::make_unique<Process>(std::vector<std::string>{
        env_or_fail("JOBCTL_CLOUDSIM"), "--listen", "127.0.0.1:0", "--state-dir", tmp.file("cloudsim"),
        "--time-factor", "1", "--notice-seconds", "5", "--worker-command",
        cloud::shell_quote(env_or_fail("JOBCTL_WORKER")) + " --trainer " + cloud::shell_quote(env_or_fail("JOBCTL_TRAIN")) +
            " --device cpu --simulated --threads 1 --wait-s 2 --notice-interval-ms 200"});
    const json started = jobctl::testing::listening_line(*cloudsim_, 30s);
    if (!started.is_null()) cloudsim_url_ = started.value("url", "");
    if (cloudsim_url_.empty()) {
      ADD_FAILURE() << "jobctl-cloudsim did not start:\n" << cloudsim_->output();
      return;
    }
    config_ = write_config(tmp, cloudsim_url_);
    start_daemon("127.0.0.1:0");
    for (size_t i = 0; i < owned_fleet().size(); ++i) start_worker(i);
  }
  ~Fleet() {
    for (auto& w : workers_)
      if (w) w->stop(SIGTERM, 10s);
  }

  const std::string& url() const { return url_; }
  const std::string& cloudsim_url() const { return cloudsim_url_; }
  bool ok() const { return !url_.empty() && !cloudsim_url_.empty(); }
  size_t workers() const { return workers_.size(); }
  Process& worker(size_t i) { return *workers_[i]; }
  std::string daemon_output() { return daemon_ ? daemon_->process().output() : ""; }
  std::string worker_output(size_t i) { return workers_[i] ? workers_[i]->output() : ""; }

  void start_worker(size_t i) {
    const auto& w = owned_fleet()[i];
    std::vector<std::string> extra = {"--slots", std::to_string(std::max(1, w.gpus))};
    if (!w.fixture.empty()) extra = {"--fake-gpus", fixture(w.fixture)};
    auto argv = worker_argv(url_, w.name, tmp_.file("work-" + w.name), extra);
    // worker_argv says --device cpu: a fake-GPU worker must not (it trains on the CPU anyway).
    if (!w.fixture.empty()) {
      auto at = std::find(argv.begin(), argv.end(), "--device");
      argv.erase(at, at + 2);
    }
    if (workers_.size() <= i) workers_.resize(i + 1);
    if (workers_[i]) workers_[i]->stop(SIGKILL, 5s);
    workers_[i] = std::make_unique<Process>(argv);
  }

  // SIGKILL, then the same command line again (a new registration; the old worker is lost).
  void restart_daemon() {
    daemon_->process().stop(SIGKILL, 5s);
    start_daemon("127.0.0.1:" + std::to_string(port_));
  }

 private:
  void start_daemon(const std::string& listen) {
    daemon_ = std::make_unique<Daemon>(tmp_.file("data"), listen, kLeaseTimeoutS, std::vector<std::string>{"--config", config_});
    if (url_.empty()) {  // a restart listens on the same port: the URL the others use does not change
      url_ = daemon_->url();
      port_ = daemon_->port();
    }
  }

  jobctl::testing::TempDir& tmp_;
  std::unique_ptr<Process> cloudsim_;
  std::string cloudsim_url_;
  std::string config_;
  std::unique_ptr<Daemon> daemon_;
  std::string url_;
  int port_ = 0;
  std::vector<std::unique_ptr<Process>> workers_;
};

// ------------------------------------------------------------------------------------------------
// Checks

struct Lease {
  int64_t job_id = 0;
  int64_t worker_id = 0;
  int64_t epoch = 0;
  int64_t start_ms = 0;
  int64_t end_ms = -1;  // -1: still open
};

// The leases a job's events record, and whether any two overlapped (a lease granted while the
// previous one had not ended).
std::vector<Lease> leases_of(const json& job, int* overlaps) {
  std::vector<Lease> out;
  if (!job.is_object()) return out;
  for (const auto& e : job.value("events", json::array())) {
    const std::string type = e.value("type", "");
    if (type == "leased") {
      if (!out.empty() && out.back().end_ms < 0) ++*overlaps;
      Lease l;
      l.job_id = job.value("id", int64_t{0});
      const json detail = e.contains("detail") && e["detail"].is_object() ? e["detail"] : json::object();
      l.worker_id = detail.value("worker_id", int64_t{0});
      l.epoch = detail.value("epoch", int64_t{0});
      l.start_ms = e.value("time_ms", int64_t{0});
      out.push_back(l);
    } else if (!out.empty() && out.back().end_ms < 0 &&
               (type == "succeeded" || type == "failed" || type == "cancelled" || type == "preempted")) {
      out.back().end_ms = e.value("time_ms", int64_t{0});
    }
  }
  return out;
}

bool ended(const json& job) { return job.is_object() && is_terminal(job); }

std::string percent(double x) {
  std::ostringstream s;
  s << std::fixed << std::setprecision(2) << 100 * x << "%";
  return s.str();
}

TEST(FleetSoak, EveryJobRunsOrIsRefusedTrulyAndPaysTheRightPrice) {
  const SoakOptions opt = soak_options();
  std::cout << "fleet soak: seed " << opt.seed << " (replay: JOBCTL_SOAK_SEED=" << opt.seed << ")" << std::endl;
  jobctl::testing::TempDir tmp;
  Fleet fleet(tmp);
  ASSERT_TRUE(fleet.ok()) << fleet.daemon_output();
  {  // the fleet is there before the stream: a spec is judged against the workers registered
    client::ApiClient api(fleet.url());
    size_t registered = 0;
    jobctl::testing::poll_until([&] {
      auto w = api.list_workers();
      registered = w ? (*w)["workers"].size() : 0;
      return registered >= owned_fleet().size();
    }, 30s, 100ms);
    ASSERT_EQ(registered, owned_fleet().size()) << fleet.daemon_output();
  }
  std::mt19937_64 rng(opt.seed);
  const auto t0 = Clock::now();

  // ---- faults, on their own thread, each kind at least once, at seeded times
  enum class Fault { kill_worker, stop_worker, phantom, spot_notice, restart_daemon };
  std::vector<Fault> faults = {Fault::kill_worker,  Fault::kill_worker, Fault::stop_worker,
                               Fault::phantom,      Fault::spot_notice, Fault::restart_daemon};
  std::shuffle(faults.begin(), faults.end(), rng);
  std::vector<double> at;
  for (size_t i = 0; i < faults.size(); ++i)
    at.push_back(opt.submit_seconds * (0.1 + 0.8 * (static_cast<double>(i) + std::uniform_real_distribution<double>(0, 1)(rng)) /
                                                static_cast<double>(faults.size())));
  std::mutex daemon_mu;  // the daemon's restart against the submitter's calls
  std::map<std::string, int> done_faults;
  std::vector<std::string> fault_log;
  std::atomic<bool> stop_faults{false};
  std::atomic<bool> faults_done{false};
  std::atomic<bool> test_done{false};
  struct JoinAtExit {  // the fault thread ends with the test, whatever way the test ends
    std::atomic<bool>& done;
    std::thread& t;
    ~JoinAtExit() {
      done = true;
      if (t.joinable()) t.join();
    }
  };
  const uint64_t fault_seed = rng();
  std::thread fault_thread([&] {
    std::mt19937_64 frng(fault_seed);
    for (size_t i = 0; i < faults.size() && !stop_faults; ++i) {
      while (!stop_faults && std::chrono::duration<double>(Clock::now() - t0).count() < at[i])
        std::this_thread::sleep_for(100ms);
      if (stop_faults) break;
      const double when = std::chrono::duration<double>(Clock::now() - t0).count();
      std::ostringstream line;
      line << std::fixed << std::setprecision(1) << when << " s: ";
      switch (faults[i]) {
        case Fault::kill_worker: {
          const size_t w = frng() % fleet.workers();
          ::kill(fleet.worker(w).pid(), SIGKILL);
          std::this_thread::sleep_for(2s);
          fleet.start_worker(w);
          line << "kill -9 worker " << owned_fleet()[w].name << ", restarted 2 s later";
          ++done_faults["kill -9 of a worker"];
          break;
        }
        case Fault::stop_worker: {
          const size_t w = frng() % fleet.workers();
          ::kill(fleet.worker(w).pid(), SIGSTOP);
          std::this_thread::sleep_for(std::chrono::seconds(kLeaseTimeoutS + 3));
          ::kill(fleet.worker(w).pid(), SIGCONT);
          line << "SIGSTOP worker " << owned_fleet()[w].name << " for " << kLeaseTimeoutS + 3 << " s";
          ++done_faults["SIGSTOP of a worker > lease timeout"];
          break;
        }
        case Fault::phantom: {
          client::ApiClient api(fleet.url());
          auto r = api.register_worker(json{{"name", "phantom"},
                                            {"capabilities", {{"gpus", {{{"model", "NVIDIA GeForce RTX 4090"}, {"memory_mb", 24564}}}},
                                                              {"cpu_cores", 8}, {"memory_mb", 32768}}}});
          line << "a worker registers (1 x RTX 4090) and vanishes" << (r ? "" : ": " + r.error().message);
          if (r) ++done_faults["a worker that registers and vanishes"];
          break;
        }
        case Fault::spot_notice: {
          // A running spot instance, interrupted as the cloud would (its notice endpoint answers).
          bool sent = false;
          for (int attempt = 0; attempt < 60 && !sent && !stop_faults; ++attempt) {
            client::ApiClient api(fleet.url());
            auto list = api.list_instances();
            if (list)
              for (const auto& inst : (*list).value("instances", json::array())) {
                if (!inst.value("spot", false) || inst.value("state", "") != "running") continue;
                client::HttpClient sim(fleet.cloudsim_url());
                auto r = sim.request("POST", "/instances/" + inst.value("id", "") + "/interrupt", "{}");
                if (r && r->status == 200) {
                  sent = true;
                  line << "spot notice to instance " << inst.value("id", "");
                  break;
                }
              }
            if (!sent) std::this_thread::sleep_for(1s);
          }
          if (sent) ++done_faults["spot interruption notice"];
          else line << "spot notice: no running spot instance within 60 s";
          break;
        }
        case Fault::restart_daemon: {
          std::lock_guard<std::mutex> lock(daemon_mu);
          fleet.restart_daemon();
          line << "SIGKILL jobctld, restarted";
          ++done_faults["SIGKILL and restart of jobctld"];
          break;
        }
      }
      fault_log.push_back(line.str());
    }
    faults_done = true;
    // The processes this thread started die with it (PR_SET_PDEATHSIG follows the thread that
    // forked): it lives until the test ends.
    while (!test_done) std::this_thread::sleep_for(100ms);
  });

  JoinAtExit join_faults{test_done, fault_thread};

  // ---- the stream: a spot canary first (so a spot instance runs when the notice comes), then
  // random specs until both the count and the time are reached
  struct Submitted {
    Planned plan;
    int64_t id = 0;        // accepted
    long status = 0;       // the answer's HTTP status
    Error refusal;         // refused
  };
  std::vector<Submitted> stream;
  auto submit = [&](Planned plan, int i) {
    Submitted s;
    s.plan = std::move(plan);
    const std::string body = s.plan.spec.dump();
    for (int attempt = 0; attempt < 60; ++attempt) {
      std::optional<Expected<client::HttpResult>> r;
      {
        std::lock_guard<std::mutex> lock(daemon_mu);
        client::HttpClient http(fleet.url());
        r = http.request("POST", "/v1/jobs", body, 10000, {"Idempotency-Key: soak-" + std::to_string(i)});
      }
      if (!*r) {  // the daemon is down (restarting): the same key again, no duplicate
        std::this_thread::sleep_for(500ms);
        continue;
      }
      s.status = (*r)->status;
      if (s.status == 201) s.id = json::parse((*r)->body).value("id", int64_t{0});
      else s.refusal = client::error_from_answer(s.status, (*r)->body);
      break;
    }
    if (s.id && s.plan.cancel) {
      std::lock_guard<std::mutex> lock(daemon_mu);
      client::ApiClient api(fleet.url());
      (void)api.cancel_job(s.id);
    }
    stream.push_back(std::move(s));
  };
  {
    Planned canary;
    canary.kind = "cloud-spot-canary";
    canary.spec = small_job(rng, "spot-canary");
    canary.spec["data"]["samples"] = 60000;
    canary.spec["train"]["epochs"] = 5;
    canary.spec["resources"] = {{"gpu", "V100"}};
    canary.spec["placement"] = {{"mode", "cloud"}, {"spot", "always"}};
    submit(canary, -1);
  }
  std::exponential_distribution<double> gap(3.0);  // about 3 specs a second
  for (int i = 0; static_cast<int>(stream.size()) < opt.min_jobs + 1 ||
                  std::chrono::duration<double>(Clock::now() - t0).count() < opt.submit_seconds;
       ++i) {
    submit(next_spec(rng, i), i);
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(gap(rng), 2.0)));
  }
  while (!faults_done) std::this_thread::sleep_for(100ms);  // its last fault is due before the stream's end
  const double submitted_s = std::chrono::duration<double>(Clock::now() - t0).count();

  // ---- drain: every accepted job ends (impossible ones accepted by mistake are cancelled here)
  client::ApiClient api(fleet.url());
  std::map<int64_t, json> final_jobs;
  const auto drain_deadline = Clock::now() + std::chrono::duration<double>(opt.drain_seconds);
  for (const auto& s : stream) {
    if (!s.id) continue;
    json j;
    do {
      auto r = api.get_job(s.id);
      if (r) j = *r;
      if (ended(j)) break;
      std::this_thread::sleep_for(200ms);
    } while (Clock::now() < drain_deadline);
    final_jobs[s.id] = j;
  }
  std::vector<int64_t> cancelled_by_test;
  for (auto& [id, j] : final_jobs)
    if (!ended(j)) {
      (void)api.cancel_job(id);
      cancelled_by_test.push_back(id);
      if (auto r = api.get_job(id)) j = *r;
    }

  // ---- checks
  int accepted = 0, succeeded = 0, failed = 0, refused = 0, wrong_refusals = 0, accepted_impossible = 0,
      cancelled_on_purpose = 0;
  std::vector<std::string> problems;
  for (const auto& s : stream) {
    if (s.id) {
      ++accepted;
      const json& j = final_jobs[s.id];
      const std::string state = j.is_object() ? j.value("state", "") : "";
      if (state == "succeeded") ++succeeded;
      else if (state == "failed") ++failed;
      if (s.plan.cancel && state == "cancelled") {
        ++cancelled_on_purpose;
      } else if (s.plan.field) {
        ++accepted_impossible;
        problems.push_back("accepted an impossible spec (" + *s.plan.field + "): job " + std::to_string(s.id) + " " +
                           s.plan.spec["resources"].dump());
      } else if (state != "succeeded") {
        problems.push_back("job " + std::to_string(s.id) + " (" + s.plan.kind + ", " + s.plan.spec["resources"].dump() +
                           ") ended " + (state.empty() ? "unknown" : state) + ": " +
                           (j.is_object() ? j.value("error", json()).dump() : "") +
                           (ended(j) ? "" : " (not finished in time)"));
      }
    } else {
      ++refused;
      // True: the generator meant it to be impossible, and the refusal names that field.
      const bool field_ok = s.plan.field && s.refusal.field.rfind(*s.plan.field, 0) == 0;
      const bool status_ok = s.status >= 400 && s.status < 500;
      if (!field_ok || !status_ok) {
        ++wrong_refusals;
        problems.push_back("refused (HTTP " + std::to_string(s.status) + ", field " + s.refusal.field + ": " +
                           s.refusal.message + ") a " + s.plan.kind + " spec " + s.plan.spec["resources"].dump() +
                           (s.plan.field ? " meant to be refused on " + *s.plan.field : " meant to run"));
      }
    }
  }

  // Leases: none overlapped; the ledger's owned-GPU charges equal the leases' seconds x per-GPU
  // prices x GPUs leased.
  std::map<int64_t, const OwnedWorker*> owned_by_worker;
  auto workers = api.list_workers();
  ASSERT_TRUE(workers) << workers.error().message << "\n--- jobctld:\n" << fleet.daemon_output();
  for (const auto& w : (*workers)["workers"])
    for (const auto& o : owned_fleet())
      if (w.value("name", "") == o.name && !w["capabilities"].contains("instance")) owned_by_worker[w["id"]] = &o;
  int overlaps = 0;
  double expected_local = 0;
  int64_t lease_count = 0;
  for (const auto& [id, j] : final_jobs) {
    const int gpus = j.is_object() && j["resources"].is_object() ? j["resources"].value("gpus", 1) : 1;
    for (const Lease& l : leases_of(j, &overlaps)) {
      ++lease_count;
      auto o = owned_by_worker.find(l.worker_id);
      if (o == owned_by_worker.end() || l.end_ms < 0) continue;  // a cloud instance's lease: billed per instance
      const double seconds = std::ceil(static_cast<double>(l.end_ms - l.start_ms) / 1000.0);
      expected_local += seconds * per_gpu_hour(*o->second) / 3600.0 * gpus;
    }
  }
  auto spend = api.http().request("GET", "/v1/reports/spend?group_by=placement");
  ASSERT_TRUE(spend && spend->status == 200) << (spend ? spend->body : spend.error().message);
  double ledger_local = 0, ledger_cloud = 0;
  for (const auto& g : json::parse(spend->body).value("groups", json::array()))
    (g.value("key", "") == "local" ? ledger_local : ledger_cloud) += g.value("usd", 0.0);
  const double ledger_error = expected_local > 0 ? std::fabs(ledger_local - expected_local) / expected_local : 1.0;
  if (overlaps) problems.push_back(std::to_string(overlaps) + " overlapping leases");
  if (ledger_error > 0.01)
    problems.push_back("ledger $" + std::to_string(ledger_local) + " against leases x per-GPU prices $" +
                       std::to_string(expected_local));
  for (const char* kind : {"kill -9 of a worker", "SIGSTOP of a worker > lease timeout", "a worker that registers and vanishes",
                           "spot interruption notice", "SIGKILL and restart of jobctld"})
    if (!done_faults.count(kind)) problems.push_back(std::string("fault not injected: ") + kind);

  // ---- the table
  std::ostringstream t;
  t << "fleet soak, seed " << opt.seed << ": " << stream.size() << " specs in " << std::fixed << std::setprecision(0)
    << submitted_s << " s, drained by " << std::chrono::duration<double>(Clock::now() - t0).count() << " s\n";
  auto row = [&t](const std::string& k, const std::string& v) { t << "  " << std::left << std::setw(48) << k << v << "\n"; };
  row("accepted", std::to_string(accepted) + " (" + std::to_string(succeeded) + " succeeded, " +
                      std::to_string(cancelled_on_purpose) + " cancelled by the test, " + std::to_string(failed) +
                      " failed, " + std::to_string(cancelled_by_test.size()) + " unfinished at the end)");
  row("refused at submit (4xx)", std::to_string(refused) + " (" + std::to_string(refused - wrong_refusals) +
                                     " with a true reason)");
  row("impossible specs accepted", std::to_string(accepted_impossible));
  std::string fault_summary;
  for (const auto& [k, n] : done_faults) fault_summary += (fault_summary.empty() ? "" : ", ") + k + " x" + std::to_string(n);
  row("faults", fault_summary);
  row("leases / overlapping leases", std::to_string(lease_count) + " / " + std::to_string(overlaps));
  {
    std::ostringstream v;
    v << std::setprecision(4) << "$" << ledger_local << " vs $" << expected_local << " (" << percent(ledger_error) << ")";
    row("ledger (owned GPUs) vs leases x per-GPU price", v.str());
    std::ostringstream c;
    c << std::setprecision(4) << "$" << ledger_cloud;
    row("ledger (cloud instances)", c.str());
  }
  for (const auto& f : fault_log) row("  fault", f);
  std::cout << t.str() << std::flush;
  if (!problems.empty()) {
    std::ostringstream p;
    for (size_t i = 0; i < problems.size() && i < 40; ++i) p << "  " << problems[i] << "\n";
    ADD_FAILURE() << problems.size() << " problem(s); replay with JOBCTL_SOAK_SEED=" << opt.seed << "\n" << p.str();
  }
  EXPECT_GE(static_cast<int>(stream.size()), opt.min_jobs);
}

}  // namespace
}  // namespace jobctl::e2e
