// The worker agent against an in-process jobctld, running the real jobctl-train ($JOBCTL_TRAIN):
// success with a reported result, a trainer failure, cancel, and the worker's own stop request.
#include "worker/agent.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <mutex>
#include <ostream>
#include <streambuf>
#include <string>
#include <thread>

#include "tests/daemon/in_process_daemon.h"
#include "tests/support/shared_log.h"
#include "tests/support/temp_dir.h"
#include "worker/capabilities.h"
#include "tests/support/poll.h"

namespace jobctl::worker {
namespace {

using daemon::testing::Daemon;
using nlohmann::json;
using daemon::store::JobState;
namespace jobs = daemon::jobs;

const std::string kQuick =
    R"({"name":"quick","model":{"kind":"mlp","hidden":[32]},)"
    R"("data":{"dataset":"synthetic","samples":2000,"test_samples":500,"features":64},"train":{"epochs":2}})";
// Long enough to be interrupted: it is cancelled or stopped long before it could finish.
const std::string kLong =
    R"({"name":"long","model":{"kind":"mlp","hidden":[256,256]},)"
    R"("data":{"dataset":"synthetic","samples":20000,"features":256},"train":{"epochs":5000},)"
    R"("checkpoint":{"every_steps":0}})";

class AgentTest : public ::testing::Test {
 protected:
  static jobs::ServiceOptions svc_options() {
    jobs::ServiceOptions o;
    o.heartbeat_interval_s = 1;
    o.lease_timeout_s = 30;
    return o;
  }
  AgentTest() : daemon_({}, svc_options()) {}
  explicit AgentTest(const jobs::ServiceOptions& o) : daemon_({}, o) {}

  AgentOptions options(const std::string& trainer = "") {
    AgentOptions o;
    o.server = daemon_.url();
    o.name = "test-worker";
    cost::CpuFacts cpu;
    cpu.cores = 2;
    o.capabilities = capabilities_json({}, cpu, 1024);
    o.max_wait_s = 1;
    o.max_jobs = 1;
    const char* env = std::getenv("JOBCTL_TRAIN");
    o.runner.trainer = trainer.empty() ? (env ? env : "jobctl-train") : trainer;
    o.runner.work_dir = work_.path().string();
    o.runner.device = "cpu";
    o.runner.heartbeat_interval_ms = 300;
    o.runner.kill_grace_ms = 20000;
    return o;
  }

  // The worker logs from several threads to one stream (tests/support/shared_log.h).
  using SharedLog = jobctl::testing::SharedLog;

  // Runs an agent on a thread; join() returns its exit code.
  struct Running {
    SharedLog log;
    int rc = -1;
    std::thread thread;
    int join() {
      thread.join();
      return rc;
    }
  };
  std::unique_ptr<Running> start(AgentOptions o) {
    auto r = std::make_unique<Running>();
    Running* raw = r.get();
    raw->thread = std::thread([this, raw, o] { raw->rc = Agent(o, stop_, raw->log).run(); });
    return r;
  }

  int64_t submit(const std::string& spec) {
    auto r = daemon_.svc().submit_job(spec);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r->id : 0;
  }

  jobs::JobDetail job(int64_t id) { return *daemon_.svc().get_job(id); }

  bool wait_for_state(int64_t id, jobs::JobState s, int seconds) {
    return jobctl::testing::poll_until([&] { return job(id).job.state == s; }, std::chrono::seconds(seconds));
  }

  std::vector<std::string> events(int64_t id) {
    std::vector<std::string> out;
    for (const auto& e : job(id).events) out.push_back(e.type);
    return out;
  }

  jobctl::testing::TempDir work_;
  Daemon daemon_;
  StopSource stop_;
};

TEST_F(AgentTest, RunsAJobAndReportsItsResult) {
  const int64_t id = submit(kQuick);
  auto agent = start(options());
  EXPECT_EQ(agent->join(), 0);
  auto d = job(id);
  ASSERT_EQ(d.job.state, jobs::JobState::succeeded) << agent->log.str();
  ASSERT_TRUE(d.job.result_json);
  json result = json::parse(*d.job.result_json);
  EXPECT_TRUE(result["test_accuracy"].is_number()) << result.dump();
  EXPECT_TRUE(result["final_loss"].is_number()) << result.dump();
  EXPECT_GT(result["steps"].get<int64_t>(), 0);
  ASSERT_TRUE(d.job.progress_json);
  EXPECT_TRUE(json::parse(*d.job.progress_json).contains("step"));
  EXPECT_EQ(events(id), (std::vector<std::string>{"submitted", "leased", "started", "succeeded"}));
}

TEST_F(AgentTest, ATrainerFailureFailsTheJobWithTheReason) {
  const int64_t id = submit(
      R"({"model":{"kind":"mlp"},"data":{"dataset":"fashion-mnist","path":"/nonexistent/fmnist"},"train":{"epochs":1}})");
  auto agent = start(options());
  EXPECT_EQ(agent->join(), 0);
  auto d = job(id);
  ASSERT_EQ(d.job.state, jobs::JobState::failed) << agent->log.str();
  ASSERT_TRUE(d.job.error);
  EXPECT_NE(d.job.error->find("exit code 3"), std::string::npos) << *d.job.error;
}

// A trainer the kernel kills (SIGKILL the worker did not send: the OOM killer's signal) fails the
// job with an error that says what most likely happened.
TEST_F(AgentTest, AKernelKillIsExplained) {
  const int64_t id = submit(kQuick);
  const std::string trainer = work_.file("killed-trainer.sh");
  {
    std::ofstream f(trainer);
    f << "#!/bin/sh\nkill -9 $$\n";
  }
  std::filesystem::permissions(trainer, std::filesystem::perms::owner_all);
  auto agent = start(options(trainer));
  EXPECT_EQ(agent->join(), 0);
  auto d = job(id);
  ASSERT_EQ(d.job.state, jobs::JobState::failed) << agent->log.str();
  ASSERT_TRUE(d.job.error);
  EXPECT_NE(d.job.error->find("out-of-memory killer"), std::string::npos) << *d.job.error;
}

// A job that needs more memory than the machine has is refused by jobctl-train before it
// allocates anything (exit code 6), and the job's error says so.
TEST_F(AgentTest, AJobTooBigForTheMachineFailsWithAClearError) {
  const int64_t id = submit(R"({"model":{"kind":"mlp","hidden":[65536,65536,65536,65536,65536,65536,65536,65536]},
                                 "data":{"dataset":"synthetic"},"train":{"epochs":1}})");
  auto agent = start(options());
  EXPECT_EQ(agent->join(), 0);
  auto d = job(id);
  ASSERT_EQ(d.job.state, jobs::JobState::failed) << agent->log.str();
  ASSERT_TRUE(d.job.error);
  EXPECT_NE(d.job.error->find("exit code 6 (not enough memory on this machine)"), std::string::npos) << *d.job.error;
  EXPECT_NE(d.job.error->find("not enough memory: this job needs about"), std::string::npos) << *d.job.error;
}

TEST_F(AgentTest, AMissingTrainerFailsTheJob) {
  const int64_t id = submit(kQuick);
  auto agent = start(options("/nonexistent/jobctl-train"));
  EXPECT_EQ(agent->join(), 0);
  auto d = job(id);
  ASSERT_EQ(d.job.state, jobs::JobState::failed);
  EXPECT_NE(d.job.error->find("cannot start jobctl-train"), std::string::npos) << *d.job.error;
}

TEST_F(AgentTest, CancelStopsTheTrainer) {
  const int64_t id = submit(kLong);
  auto agent = start(options());
  ASSERT_TRUE(wait_for_state(id, jobs::JobState::running, 60)) << "never started";
  ASSERT_TRUE(daemon_.svc().cancel_job(id));
  // kLong trains for hours: the agent returning at all shows the cancel stopped the trainer.
  EXPECT_EQ(agent->join(), 0);
  EXPECT_EQ(job(id).job.state, jobs::JobState::cancelled);
  EXPECT_NE(agent->log.str().find("was cancelled"), std::string::npos) << agent->log.str();
}

// Heartbeats every 30 s (and at each epoch's end, every few seconds here), checkpoints every few
// tens of milliseconds: a job cancelled between two heartbeats has its next checkpoint upload
// refused (the lease ended) before any heartbeat says why.
class AgentSlowHeartbeatTest : public AgentTest {
 protected:
  static jobs::ServiceOptions slow_heartbeats() {
    jobs::ServiceOptions o = svc_options();
    o.heartbeat_interval_s = 30;
    o.lease_timeout_s = 120;
    return o;
  }
  AgentSlowHeartbeatTest() : AgentTest(slow_heartbeats()) {}
};

// The worker asks at once, and says the job was cancelled, not that its lease was lost.
TEST_F(AgentSlowHeartbeatTest, ACancelSeenFirstAsARefusedUploadIsReportedAsACancel) {
  const int64_t id = submit(
      R"({"name":"checkpoints-often","model":{"kind":"mlp","hidden":[1024]},)"
      R"("data":{"dataset":"synthetic","samples":200000,"test_samples":500,"features":64},"train":{"epochs":5000},)"
      R"("checkpoint":{"every_steps":20,"keep":2}})");
  auto o = options();
  o.runner.heartbeat_interval_ms = 30'000;
  auto agent = start(o);
  ASSERT_TRUE(wait_for_state(id, jobs::JobState::running, 60)) << "never started";
  ASSERT_TRUE(daemon_.svc().cancel_job(id));
  EXPECT_EQ(agent->join(), 0);
  EXPECT_EQ(job(id).job.state, jobs::JobState::cancelled);
  const std::string log = agent->log.str();
  const size_t refused = log.find("checkpoint upload refused"), told = log.find("was cancelled by its owner");
  ASSERT_NE(refused, std::string::npos) << log;
  ASSERT_NE(told, std::string::npos) << log;
  EXPECT_LT(refused, told) << "the path under test (an upload refused before a heartbeat said cancel) was not taken:\n"
                           << log;
  EXPECT_EQ(log.find("lease lost"), std::string::npos) << log;
}

TEST_F(AgentTest, StoppingTheWorkerGivesTheJobBack) {
  const int64_t id = submit(kLong);
  auto o = options();
  o.max_jobs = 0;
  auto agent = start(o);
  ASSERT_TRUE(wait_for_state(id, jobs::JobState::running, 60)) << "never started";
  stop_.request();
  EXPECT_EQ(agent->join(), 0);
  auto d = job(id);
  EXPECT_EQ(d.job.state, jobs::JobState::queued) << agent->log.str();
  EXPECT_EQ(d.job.recoveries, 1);
  EXPECT_EQ(events(id), (std::vector<std::string>{"submitted", "leased", "started", "preempted", "requeued"}));
}

}  // namespace
}  // namespace jobctl::worker
