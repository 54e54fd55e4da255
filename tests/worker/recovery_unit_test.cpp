// The worker's recovery pieces that need no daemon: the spot notice answer, GPU detection from
// /proc, the stop reason and the stop's wait, the kernel's OOM kill, and the lease's resume
// checkpoint.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "process/child.h"
#include "worker/capabilities.h"
#include "worker/checkpoint_transfer.h"
#include "worker/job_runner.h"
#include "worker/notice_poller.h"
#include "worker/oom_kill.h"
#include "worker/stop_source.h"

namespace jobctl::worker {
namespace {

TEST(Notice, OnlyATerminateOrStopActionIsANotice) {
  EXPECT_FALSE(parse_notice(404, "<html>Not Found</html>"));
  EXPECT_FALSE(parse_notice(200, "not json"));
  EXPECT_FALSE(parse_notice(200, R"({"action":"hibernate-maybe"})"));
  EXPECT_FALSE(parse_notice(500, R"({"action":"terminate"})"));
  auto n = parse_notice(200, R"({"action":"terminate","time":"2026-11-22T08:00:00Z"})");
  ASSERT_TRUE(n);
  EXPECT_EQ((*n)["time"], "2026-11-22T08:00:00Z");
  EXPECT_TRUE(parse_notice(200, R"({"action":"stop","time":"2026-11-22T08:00:00Z"})"));
}

TEST(Gpus, ReadsTheModelFromProcInformation) {
  auto g = parse_proc_gpu_information(
      "Model: \t\t Tesla V100-SXM2-16GB\nIRQ:   \t\t 34\nGPU UUID: \t GPU-1234\n");
  ASSERT_TRUE(g);
  EXPECT_EQ(g->model, "Tesla V100-SXM2-16GB");
  EXPECT_EQ(g->memory_mb, 0);
  EXPECT_FALSE(parse_proc_gpu_information("IRQ: 34\n"));
}

TEST(Stop, TheFirstReasonWins) {
  StopSource a;
  EXPECT_STREQ(a.reason(), "SIGTERM");
  a.request("spot interruption notice");
  a.request("something else");
  EXPECT_TRUE(a.requested());
  EXPECT_STREQ(a.reason(), "spot interruption notice");
  StopSource b;
  b.request();
  b.request("late");
  EXPECT_STREQ(b.reason(), "SIGTERM");
}

TEST(Stop, EndsAWaitAtOnce) {
  StopSource s;
  EXPECT_TRUE(s.wait_for(std::chrono::milliseconds(5)));  // no stop: the whole delay passed
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    s.request("test");
  });
  EXPECT_FALSE(s.wait_for(std::chrono::minutes(10)));  // returns when the stop comes, not after 10 min
  stopper.join();
  EXPECT_FALSE(s.wait_for(std::chrono::minutes(10)));  // already stopped: at once
}

// A checkpoint file that vanished before its upload (the trainer pruned it) is a local I/O
// error, never not_found: the uploader reads not_found as the daemon saying the job is gone and
// stops the job as if its lease were lost.
TEST(Upload, AVanishedLocalFileIsAnIoErrorNotALostJob) {
  auto r = read_file("/nonexistent/ckpt-000000000032.ckpt");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::io) << r.error().message;
}

// A trainer the kernel killed for memory says so (it used to read "killed by signal 9").
TEST(OomKill, ASigkillTheWorkerDidNotSendIsExplained) {
  EXPECT_EQ(parse_oom_kill_count("low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n"), 2);
  EXPECT_FALSE(parse_oom_kill_count("low 0\n"));
  process::ExitStatus killed;
  killed.signal = SIGKILL;
  killed.max_rss_kb = 3 * 1024 * 1024;
  const std::string proven = sigkill_explanation(killed, 0, 1, 512);
  EXPECT_NE(proven.find("killed by the kernel's out-of-memory killer"), std::string::npos) << proven;
  EXPECT_NE(proven.find("peak memory was 3072 MiB"), std::string::npos) << proven;
  EXPECT_NE(proven.find("512 MiB are available"), std::string::npos) << proven;
  const std::string likely = sigkill_explanation(killed, std::nullopt, std::nullopt, 0);
  EXPECT_NE(likely.find("most likely the kernel's out-of-memory killer"), std::string::npos) << likely;
  process::ExitStatus term;
  term.signal = SIGTERM;
  EXPECT_EQ(sigkill_explanation(term, 0, 1, 0), "");
  process::ExitStatus exited;
  exited.exited = true;
  exited.code = 1;
  EXPECT_EQ(sigkill_explanation(exited, 0, 1, 0), "");
  // The real thing: a child killed by SIGKILL, its peak memory measured.
  auto c = process::Child::spawn({"/bin/sh", "-c", "kill -9 $$"});
  ASSERT_TRUE(c);
  const process::ExitStatus st = (*c)->wait();
  EXPECT_EQ(st.signal, SIGKILL);
  EXPECT_GT(st.max_rss_kb, 0);
  EXPECT_NE(sigkill_explanation(st, oom_kill_count(), oom_kill_count(), available_memory_mb()).find("SIGKILL"),
            std::string::npos);
}

TEST(Lease, CarriesTheCheckpointToResumeFrom) {
  auto l = protocol::lease_offer_from_json(nlohmann::json::parse(
      R"({"job_id":4,"epoch":2,"name":"n","spec":{},"resume":{"step":300,"bytes":1234,"crc32c":"0a0b0c0d"}})"));
  ASSERT_TRUE(l);
  ASSERT_TRUE(l->resume);
  EXPECT_EQ(l->resume->step, 300);
  EXPECT_EQ(l->resume->bytes, 1234);
  EXPECT_EQ(l->resume->crc32c, 0x0a0b0c0du);
  EXPECT_FALSE(protocol::lease_offer_from_json(nlohmann::json::parse(R"({"job_id":4,"epoch":1,"resume":null})"))->resume);
}

}  // namespace
}  // namespace jobctl::worker
