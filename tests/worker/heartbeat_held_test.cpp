// A real jobctl-worker against a jobctld stand-in over loopback HTTP that holds every heartbeat's
// answer for 60 s: while the heartbeat hangs, the job's program — a command that writes far more
// than a pipe buffer — must keep making progress (the worker drains its output), and the worker's
// stop request and the program's SIGKILL deadline must be honoured (the job is killed after its
// grace and given back with a preempt report before any heartbeat is answered).
//
// The stand-in is net/'s server with the worker protocol's routes, speaking the shared typed
// messages (protocol/worker_messages.h). Progress is compared as counters the program writes,
// never as durations.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "net/json_body.h"
#include "net/router.h"
#include "net/server.h"
#include "protocol/worker_messages.h"
#include "tests/support/process.h"
#include "tests/support/temp_dir.h"

namespace jobctl {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr auto kHold = std::chrono::seconds(60);
constexpr int64_t kJobId = 7;
constexpr int64_t kWorkerId = 3;
constexpr int64_t kLineBytes = 512;
// Lines the program must write while the first heartbeat is held: 16 times a 64 KiB pipe buffer.
constexpr int64_t kLinesWhileHeld = 2048;

// A jobctld stand-in: registers one worker, leases it one command job, holds every heartbeat's
// answer for kHold, and records the reports.
class HoldingDaemon {
 public:
  explicit HoldingDaemon(std::string spec_json) : spec_json_(std::move(spec_json)) {
    router_.add("POST", "/v1/workers/register", [](const net::HttpRequest&, const net::PathParams&, net::Responder respond) {
      protocol::WorkerRegistered r;
      r.worker_id = kWorkerId;
      r.worker_secret = "held-test-secret";
      r.heartbeat_interval_s = 1;
      r.lease_timeout_s = 600;
      r.max_lease_wait_s = 1;
      respond(net::json_response(201, protocol::to_json(r)));
    });
    router_.add("POST", "/v1/workers/{id}/lease", [this](const net::HttpRequest&, const net::PathParams&,
                                                         net::Responder respond) {
      MutexLock lock(mu_);
      if (leased_) {
        net::HttpResponse none;
        none.status = 204;
        none.content_type.clear();
        return respond(std::move(none));
      }
      leased_ = true;
      protocol::LeaseOffer offer;
      offer.job_id = kJobId;
      offer.epoch = 1;
      offer.name = "held";
      offer.spec_json = spec_json_;
      respond(net::json_response(200, protocol::to_json(offer)));
    });
    router_.add("POST", "/v1/jobs/{id}/heartbeat",
                [this](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
                  auto body = net::parse_json_body(req.body);
                  auto hb = body ? protocol::heartbeat_report_from_json(*body, 1 << 20)
                                 : Expected<protocol::HeartbeatReport>(body.error());
                  MutexLock lock(mu_);
                  if (!hb) ++bad_heartbeats_;
                  held_.push_back(Held{Clock::now(), std::move(respond)});
                },
                net::Dispatch::io);
    router_.add("POST", "/v1/jobs/{id}/preempt",
                [this](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
                  auto body = net::parse_json_body(req.body);
                  auto rep = body ? protocol::preemption_report_from_json(*body)
                                  : Expected<protocol::PreemptionReport>(body.error());
                  MutexLock lock(mu_);
                  if (rep) preempt_reason_ = rep->reason;
                  else ++bad_reports_;
                  preempted_while_held_ = answered_heartbeats_ == 0;
                  respond(net::json_response(200, json::object()));
                });
    for (const char* report : {"/v1/jobs/{id}/complete", "/v1/jobs/{id}/fail"})
      router_.add("POST", report, [this](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
        MutexLock lock(mu_);
        other_reports_.push_back(req.path + " " + req.body);
        respond(net::json_response(200, json::object()));
      });
    // A fresh job has no earlier outputs to restore.
    router_.add("GET", "/v1/jobs/{id}/outputs", [](const net::HttpRequest&, const net::PathParams&, net::Responder respond) {
      respond(net::json_response(200, json{{"outputs", json::array()}}));
    });
    net::ServerOptions o;
    o.port = 0;
    o.shutdown_grace_ms = 2000;
    server_ = std::make_unique<net::HttpServer>(o, router_);
    auto port = server_->start();
    EXPECT_TRUE(port) << (port ? "" : port.error().message);
    if (port) url_ = "http://127.0.0.1:" + std::to_string(*port);
    releaser_ = std::thread([this] { release_when_due(); });
  }

  ~HoldingDaemon() {
    {
      MutexLock lock(mu_);
      quit_ = true;
    }
    cv_.signal_all();
    releaser_.join();
    answer_all_held();
    server_->stop();
  }

  const std::string& url() const { return url_; }

  int heartbeats_seen() {
    MutexLock lock(mu_);
    return static_cast<int>(held_.size()) + answered_heartbeats_;
  }
  int heartbeats_answered() {
    MutexLock lock(mu_);
    return answered_heartbeats_;
  }
  int bad_messages() {
    MutexLock lock(mu_);
    return bad_heartbeats_ + bad_reports_;
  }
  std::optional<std::string> preempt_reason() {
    MutexLock lock(mu_);
    return preempt_reason_;
  }
  bool preempted_while_held() {
    MutexLock lock(mu_);
    return preempted_while_held_;
  }
  std::vector<std::string> other_reports() {
    MutexLock lock(mu_);
    return other_reports_;
  }

 private:
  struct Held {
    Clock::time_point arrived;
    net::Responder respond;
  };

  // Answers each held heartbeat kHold after it arrived.
  void release_when_due() {
    MutexLock lock(mu_);
    while (!quit_) {
      while (!held_.empty() && Clock::now() - held_.front().arrived >= kHold) {
        answer(held_.front());
        held_.erase(held_.begin());
        ++answered_heartbeats_;
      }
      cv_.wait_for(mu_, 100ms);
    }
  }
  void answer_all_held() {
    MutexLock lock(mu_);
    for (auto& h : held_) answer(h);
    held_.clear();
  }
  static void answer(Held& h) {
    h.respond(net::json_response(200, protocol::to_json(protocol::HeartbeatReply{})));
  }

  const std::string spec_json_;
  net::Router router_;
  std::unique_ptr<net::HttpServer> server_;
  std::string url_;
  std::thread releaser_;

  Mutex mu_;
  CondVar cv_;
  bool quit_ JOBCTL_GUARDED_BY(mu_) = false;
  bool leased_ JOBCTL_GUARDED_BY(mu_) = false;
  std::vector<Held> held_ JOBCTL_GUARDED_BY(mu_);
  int answered_heartbeats_ JOBCTL_GUARDED_BY(mu_) = 0;
  int bad_heartbeats_ JOBCTL_GUARDED_BY(mu_) = 0;
  int bad_reports_ JOBCTL_GUARDED_BY(mu_) = 0;
  std::optional<std::string> preempt_reason_ JOBCTL_GUARDED_BY(mu_);
  bool preempted_while_held_ JOBCTL_GUARDED_BY(mu_) = false;
  std::vector<std::string> other_reports_ JOBCTL_GUARDED_BY(mu_);
};

// The number the program last wrote to `path` (-1 before it wrote one).
int64_t read_counter(const std::string& path) {
  std::ifstream in(path);
  int64_t n = -1;
  if (!(in >> n)) return -1;
  return n;
}

bool process_alive(pid_t pid) { return pid > 0 && ::kill(pid, 0) == 0; }

TEST(HeartbeatHeld, OutputIsDrainedAndTheStopAndDeadlineAreHonouredWhileJobctldHoldsTheHeartbeat) {
  testing::TempDir work;
  const std::string counter = (work.path() / "counter").string();
  const std::string pid_file = (work.path() / "pid").string();
  // The program ignores SIGTERM (only the worker's SIGKILL after the 1 s grace ends it), writes
  // its pid, then lines of kLineBytes as fast as it can, each numbered in `counter` after it
  // was written (so the counter cannot pass a line blocked on a full pipe). Shell built-ins only.
  const std::string script = "trap '' TERM; echo $$ > " + pid_file + "; pad=$(printf '%0" +
                             std::to_string(kLineBytes - 12) + "d' 0); i=0; while :; do i=$((i+1)); " +
                             "printf '%10d %s\\n' $i $pad; echo $i > " + counter + "; done";
  const json spec = {{"name", "held"}, {"command", {"/bin/sh", "-c", script}}, {"checkpoint", {{"grace_s", 1}}}};
  HoldingDaemon daemon(spec.dump());
  ASSERT_FALSE(daemon.url().empty());

  testing::Process worker({testing::env_or_fail("JOBCTL_WORKER"), "--server", daemon.url(), "--name", "held",
                           "--work-dir", (work.path() / "jobs").string(), "--device", "cpu", "--allow-commands",
                           "--max-jobs", "1", "--wait-s", "1"});
  ASSERT_TRUE(worker.ok());

  // The first heartbeat arrives and is held. (The limits on these waits only keep a broken
  // worker from hanging the test; nothing is measured against them.)
  const auto hold_ends = [&] { return daemon.heartbeats_answered() > 0; };
  const auto worker_ended = [&] { return worker.wait_for_output("jobctl-worker: stopped", 0ms); };
  const auto give_up_at = Clock::now() + 1min;
  while (daemon.heartbeats_seen() == 0 && !worker_ended() && Clock::now() < give_up_at)
    std::this_thread::sleep_for(20ms);
  ASSERT_GT(daemon.heartbeats_seen(), 0) << worker.output();
  int64_t at_hold = read_counter(counter);
  while (at_hold < 0) at_hold = read_counter(counter);  // read between the truncation and the write

  // While it is held, the program keeps writing: many pipe buffers' worth, before the worker
  // gives up on that heartbeat (its client's timeout, which it would log as a failed heartbeat).
  const auto gave_up = [&] {
    return worker.collector()
        ->wait_for_line([](std::string_view l) { return l.find("heartbeat for job") != std::string_view::npos; }, 0ms)
        .has_value();
  };
  int64_t now = at_hold;
  for (;;) {
    if (const int64_t read = read_counter(counter); read >= 0) now = read;
    if (now >= at_hold + kLinesWhileHeld) break;
    ASSERT_FALSE(gave_up()) << "the program stalled at line " << now << " (line " << at_hold
                            << " when the heartbeat was held) until the worker gave up on the heartbeat";
    ASSERT_FALSE(hold_ends()) << "the hold ended with the program at line " << now;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_FALSE(gave_up()) << "the program advanced only after the worker gave up on the held heartbeat";
  EXPECT_EQ(daemon.heartbeats_answered(), 0);

  // The worker is asked to stop, the heartbeat still held: the program ignores its SIGTERM, so only
  // the worker's SIGKILL at the end of the grace ends it; then the job is given back.
  const pid_t program = static_cast<pid_t>(read_counter(pid_file));
  ASSERT_TRUE(process_alive(program));
  ASSERT_EQ(::kill(worker.pid(), SIGTERM), 0);
  while (!daemon.preempt_reason() && !hold_ends() && !worker_ended()) std::this_thread::sleep_for(20ms);
  const auto reason = daemon.preempt_reason();
  ASSERT_TRUE(reason) << "no preempt report before the hold ended\n" << worker.output();
  EXPECT_TRUE(daemon.preempted_while_held()) << "the preempt report came only after a heartbeat was answered";
  EXPECT_NE(reason->find("worker stopping"), std::string::npos) << *reason;
  EXPECT_NE(reason->find("signal 9"), std::string::npos) << "not killed at the deadline: " << *reason;
  EXPECT_FALSE(process_alive(program));
  EXPECT_TRUE(daemon.other_reports().empty());
  EXPECT_EQ(daemon.bad_messages(), 0);

  const auto status = worker.stop(SIGTERM, 60s);
  ASSERT_TRUE(status) << worker.output();
  EXPECT_TRUE(status->success()) << status->describe();
  EXPECT_EQ(daemon.heartbeats_answered(), 0) << "the whole test ran inside the first hold";
}

}  // namespace
}  // namespace jobctl
