// A node of a job across machines (a gang), on the worker's side: the rendezvous its program is
// given (and never inherited from the worker's own environment), a node of rank > 0 that leaves
// the job's progress, checkpoints and outputs to rank 0, and a lease taken away (a heartbeat
// answered 409 stale_epoch: the program is stopped, SIGTERM then SIGKILL, and nothing more is
// sent for the lease). Also where the other nodes reach this worker: its address and a free port.
//
// Real parts: the job's program is a real shell; the runner talks HTTP over loopback to a jobctld
// stand-in (net/'s server with the worker protocol's routes), which records what it was sent.
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <streambuf>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "net/json_body.h"
#include "net/router.h"
#include "net/server.h"
#include "protocol/worker_messages.h"
#include "tests/support/shared_log.h"
#include "tests/support/temp_dir.h"
#include "worker/gang_firewall.h"
#include "worker/job_launch.h"
#include "worker/job_runner.h"
#include "worker/rendezvous_endpoint.h"
#include "worker/stop_source.h"

namespace jobctl::worker {
namespace {

using nlohmann::json;

constexpr int64_t kGangJobId = 7;
constexpr int64_t kGangWorkerId = 3;

// The runner's log: written from several threads (the runner's, the heartbeat and upload threads).
using GangLog = jobctl::testing::SharedLog;

// A jobctld stand-in for one lease: it serves one stored output, answers heartbeats (or refuses
// them as stale), and records every heartbeat, report and upload.
class LeaseDaemon {
 public:
  // `upload_dir`: where the server streams uploads.
  LeaseDaemon(bool stale_heartbeats, const std::filesystem::path& upload_dir) : stale_heartbeats_(stale_heartbeats) {
    router_.add("GET", "/v1/jobs/{id}/outputs", [](const net::HttpRequest&, const net::PathParams&, net::Responder respond) {
      respond(net::json_response(200, json{{"outputs", {{{"path", "earlier.txt"}, {"bytes", 8}}}}}));
    });
    router_.add("GET", "/v1/jobs/{id}/outputs/file", [](const net::HttpRequest&, const net::PathParams&,
                                                         net::Responder respond) {
      net::HttpResponse r;
      r.content_type = "application/octet-stream";
      r.body = "restored";
      respond(std::move(r));
    });
    router_.add("POST", "/v1/jobs/{id}/heartbeat", [this](const net::HttpRequest& req, const net::PathParams&,
                                                         net::Responder respond) {
      auto body = net::parse_json_body(req.body);
      auto hb = body ? protocol::heartbeat_report_from_json(*body, 1 << 20)
                     : Expected<protocol::HeartbeatReport>(body.error());
      {
        MutexLock lock(mu_);
        if (hb) heartbeats_.push_back(std::move(*hb));
        else ++bad_messages_;
      }
      if (stale_heartbeats_)
        return respond(net::error_response(make_error(ErrorCode::stale_epoch, "the lease is no longer the job's")));
      respond(net::json_response(200, protocol::to_json(protocol::HeartbeatReply{})));
    });
    for (const char* report : {"complete", "fail", "preempt"})
      router_.add("POST", std::string("/v1/jobs/{id}/") + report,
                  [this, report](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
                    auto body = net::parse_json_body(req.body);
                    auto lease = body ? protocol::lease_ref_from_json(*body) : Expected<protocol::LeaseRef>(body.error());
                    MutexLock lock(mu_);
                    reports_.push_back(std::string(report) + " " + req.body);
                    if (!lease || lease->worker_id != kGangWorkerId) ++bad_messages_;
                    respond(net::json_response(200, json::object()));
                  });
    for (const char* upload : {"/v1/jobs/{id}/checkpoints/{step}", "/v1/jobs/{id}/outputs"})
      router_.add(net::RouteSpec{.method = "PUT",
                                 .pattern = upload,
                                 .handler =
                                     [this](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
                                       MutexLock lock(mu_);
                                       uploads_.push_back(req.target);
                                       respond(net::json_response(201, json::object()));
                                     },
                                 .body = net::RequestBody::to_file(),
                                 .access = {}});
    router_.set_fallback([this](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
      MutexLock lock(mu_);
      unexpected_.push_back(req.method + " " + req.target);
      respond(net::error_response(make_error(ErrorCode::not_found, "not in this stand-in")));
    });
    net::ServerOptions o;
    o.port = 0;
    o.shutdown_grace_ms = 1000;
    o.upload_dir = upload_dir.string();
    o.max_upload_bytes = 1 << 20;
    server_ = std::make_unique<net::HttpServer>(o, router_);
    auto port = server_->start();
    EXPECT_TRUE(port) << (port ? "" : port.error().message);
    if (port) url_ = "http://127.0.0.1:" + std::to_string(*port);
  }
  ~LeaseDaemon() { server_->stop(); }

  const std::string& url() const { return url_; }
  std::vector<protocol::HeartbeatReport> heartbeats() {
    MutexLock lock(mu_);
    return heartbeats_;
  }
  std::vector<std::string> reports() {
    MutexLock lock(mu_);
    return reports_;
  }
  std::vector<std::string> uploads() {
    MutexLock lock(mu_);
    return uploads_;
  }
  std::vector<std::string> unexpected() {
    MutexLock lock(mu_);
    return unexpected_;
  }
  int bad_messages() {
    MutexLock lock(mu_);
    return bad_messages_;
  }

 private:
  const bool stale_heartbeats_;
  net::Router router_;
  std::unique_ptr<net::HttpServer> server_;
  std::string url_;
  Mutex mu_;
  std::vector<protocol::HeartbeatReport> heartbeats_ JOBCTL_GUARDED_BY(mu_);
  std::vector<std::string> reports_ JOBCTL_GUARDED_BY(mu_);
  std::vector<std::string> uploads_ JOBCTL_GUARDED_BY(mu_);
  std::vector<std::string> unexpected_ JOBCTL_GUARDED_BY(mu_);
  int bad_messages_ JOBCTL_GUARDED_BY(mu_) = 0;
};

RunnerOptions gang_runner_options(const std::string& url, const std::filesystem::path& work) {
  RunnerOptions o;
  o.work_dir = work.string();
  o.allow_commands = true;
  o.heartbeat_interval_ms = 100;
  o.kill_grace_ms = 20000;
  o.transfer.server = url;
  o.transfer.retry.max_attempts = 1;
  return o;
}

protocol::GangRendezvous two_node_gang(int rank) {
  return protocol::GangRendezvous{.rank = rank,
                                  .nodes = 2,
                                  .addrs = {"127.0.0.1", "gpu-box-2"},
                                  .master_addr = "127.0.0.1",
                                  .master_port = 29511,
                                  .gpus_per_node = 4};
}

// The JOBCTL_ variables a program launched for `gang` sees.
std::map<std::string, std::string> launched_environment(const std::filesystem::path& dir,
                                                        const std::optional<protocol::GangRendezvous>& gang) {
  JobProgram program;
  program.argv = {"/usr/bin/env"};
  program.cwd = dir;
  program.label = "env";
  RunnerOptions options;
  std::ostringstream log;
  auto job = launch_job(kGangJobId, 1, program, options, dir, std::nullopt, gang, log);
  EXPECT_TRUE(job) << (job ? "" : job.error().message);
  std::map<std::string, std::string> env;
  if (!job) return env;
  std::string out, err;
  const process::ExitStatus st = job->child->read_all(out, err);
  job->containment->end_all();
  EXPECT_TRUE(st.success()) << st.describe() << err;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("JOBCTL_", 0) == 0) env[line.substr(0, line.find('='))] = line.substr(line.find('=') + 1);
  return env;
}

TEST(GangNode, TheProgramIsGivenTheRendezvousAndNeverInheritsOne) {
  testing::TempDir work;
  // A stale rendezvous in the worker's own environment (a worker started from a gang's program).
  ASSERT_EQ(::setenv("JOBCTL_NODE_RANK", "5", 1), 0);
  ASSERT_EQ(::setenv("JOBCTL_MASTER_PORT", "1234", 1), 0);

  const auto gang = launched_environment(work.path(), two_node_gang(1));
  EXPECT_EQ(gang.at("JOBCTL_NODE_RANK"), "1");
  EXPECT_EQ(gang.at("JOBCTL_NUM_NODES"), "2");
  EXPECT_EQ(gang.at("JOBCTL_NODE_ADDRS"), "127.0.0.1,gpu-box-2");
  EXPECT_EQ(gang.at("JOBCTL_MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(gang.at("JOBCTL_MASTER_PORT"), "29511");
  EXPECT_EQ(gang.at("JOBCTL_GPUS_PER_NODE"), "4");
  EXPECT_EQ(gang.at("JOBCTL_JOB_ID"), std::to_string(kGangJobId));

  const auto alone = launched_environment(work.path(), std::nullopt);
  for (const char* name : {"JOBCTL_NODE_RANK", "JOBCTL_NUM_NODES", "JOBCTL_NODE_ADDRS", "JOBCTL_MASTER_ADDR",
                           "JOBCTL_MASTER_PORT", "JOBCTL_GPUS_PER_NODE"})
    EXPECT_EQ(alone.count(name), 0u) << name << " reached a job on one machine: " << alone.at(name);
  EXPECT_EQ(alone.count("JOBCTL_JOB_ID"), 1u);
  ::unsetenv("JOBCTL_NODE_RANK");
  ::unsetenv("JOBCTL_MASTER_PORT");
}

TEST(GangNode, ARankAboveZeroLeavesProgressCheckpointsAndOutputsToRankZero) {
  testing::TempDir work;
  LeaseDaemon daemon(/*stale_heartbeats=*/false, work.path());
  ASSERT_FALSE(daemon.url().empty());
  // A program that does what rank 0 does: progress, a checkpoint, an output, a result. It also
  // shows the stored output came back and what rank it was told.
  const std::string script =
      "echo \"told rank $JOBCTL_NODE_RANK of $JOBCTL_NUM_NODES\"; "
      "echo \"restored: $(cat \"$JOBCTL_OUTPUT_DIR/earlier.txt\")\"; "
      "echo '{\"event\":\"start\",\"total_steps\":2}'; "
      "echo '{\"event\":\"progress\",\"step\":1,\"total_steps\":2,\"loss\":0.5}'; "
      "echo ck > ck.bin; echo '{\"event\":\"checkpoint\",\"path\":\"ck.bin\",\"step\":1}'; "
      "echo made > \"$JOBCTL_OUTPUT_DIR/made.txt\"; "
      "echo 'on stderr' >&2; "
      "echo '{\"event\":\"result\",\"final_loss\":0.25}'";
  Lease lease;
  lease.job_id = kGangJobId;
  lease.epoch = 4;
  lease.name = "gang";
  lease.spec_json = json{{"name", "gang"}, {"command", {"/bin/sh", "-c", script}}}.dump();
  lease.gang = two_node_gang(1);

  GangLog log;
  StopSource stop;
  client::ApiClient api(daemon.url());
  JobRunner runner(api, kGangWorkerId, gang_runner_options(daemon.url(), work.path()), stop, log);
  EXPECT_EQ(runner.run(lease), RunOutcome::succeeded) << log.str();

  // Reported under its own lease, with the program's result.
  const auto reports = daemon.reports();
  ASSERT_EQ(reports.size(), 1u) << log.str();
  EXPECT_EQ(reports[0].rfind("complete ", 0), 0u) << reports[0];
  const json complete = json::parse(reports[0].substr(reports[0].find(' ') + 1));
  EXPECT_EQ(complete["epoch"], 4);
  EXPECT_EQ(complete["result"]["final_loss"], 0.25);
  // No checkpoint and no output stored; the checkpoint line was ignored, saying so.
  EXPECT_TRUE(daemon.uploads().empty()) << daemon.uploads().front();
  EXPECT_NE(log.str().find("not uploaded: rank 1 leaves the job's checkpoints to rank 0"), std::string::npos)
      << log.str();
  EXPECT_NE(log.str().find("rank 1 uploads no outputs"), std::string::npos) << log.str();
  // No heartbeat carried progress; the progress lines came as log lines, every line prefixed.
  std::vector<std::string> lines;
  for (const auto& hb : daemon.heartbeats()) {
    EXPECT_FALSE(hb.progress_json) << *hb.progress_json;
    EXPECT_EQ(hb.lease.worker_id, kGangWorkerId);
    EXPECT_EQ(hb.lease.epoch, 4);
    for (const auto& line : hb.log) lines.push_back(line.text);
  }
  ASSERT_FALSE(lines.empty()) << log.str();
  for (const auto& line : lines) EXPECT_EQ(line.rfind("[rank 1] ", 0), 0u) << line;
  const auto has_line = [&](const std::string& text) {
    return std::find(lines.begin(), lines.end(), text) != lines.end();
  };
  EXPECT_TRUE(has_line("[rank 1] told rank 1 of 2"));
  EXPECT_TRUE(has_line("[rank 1] restored: restored"));  // the stored outputs came back all the same
  EXPECT_TRUE(has_line(R"([rank 1] {"event":"progress","step":1,"total_steps":2,"loss":0.5})"));
  EXPECT_TRUE(has_line(R"([rank 1] {"event":"start","total_steps":2})"));
  EXPECT_TRUE(has_line("[rank 1] on stderr"));
  EXPECT_EQ(daemon.bad_messages(), 0);
  EXPECT_TRUE(daemon.unexpected().empty()) << daemon.unexpected().front();
}

TEST(GangNode, ALeaseTakenAwayStopsTheProgramAndNothingMoreIsSentForIt) {
  testing::TempDir work;
  LeaseDaemon daemon(/*stale_heartbeats=*/true, work.path());
  ASSERT_FALSE(daemon.url().empty());
  const std::string marker = (work.path() / "terminated").string();
  // On SIGTERM the program writes a checkpoint and an output, then carries on: only the worker's
  // SIGKILL after the grace ends it.
  const std::string script =
      "trap 'echo term > " + marker +
      "; echo ck > ck.bin; echo \"{\\\"event\\\":\\\"checkpoint\\\",\\\"path\\\":\\\"ck.bin\\\",\\\"step\\\":5}\"; "
      "echo late > \"$JOBCTL_OUTPUT_DIR/late.txt\"' TERM; "
      "echo '{\"event\":\"start\",\"total_steps\":100}'; while :; do sleep 0.05; done";
  Lease lease;
  lease.job_id = kGangJobId;
  lease.epoch = 2;
  lease.name = "taken";
  lease.spec_json =
      json{{"name", "taken"}, {"command", {"/bin/sh", "-c", script}}, {"checkpoint", {{"grace_s", 1}}}}.dump();
  lease.gang = two_node_gang(0);

  GangLog log;
  StopSource stop;
  client::ApiClient api(daemon.url());
  JobRunner runner(api, kGangWorkerId, gang_runner_options(daemon.url(), work.path()), stop, log);
  EXPECT_EQ(runner.run(lease), RunOutcome::lease_lost) << log.str();

  std::ifstream terminated(marker);
  std::string word;
  EXPECT_TRUE(terminated >> word) << "the program got no SIGTERM\n" << log.str();
  EXPECT_EQ(word, "term");
  EXPECT_NE(log.str().find("lease lost"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("did not stop in time; killing it"), std::string::npos) << log.str();
  // One heartbeat (the refused one), no report, no checkpoint or output upload.
  EXPECT_EQ(daemon.heartbeats().size(), 1u);
  EXPECT_TRUE(daemon.reports().empty()) << daemon.reports().front();
  EXPECT_TRUE(daemon.uploads().empty()) << daemon.uploads().front();
  EXPECT_NE(log.str().find("not uploaded: the lease is lost"), std::string::npos) << log.str();
  EXPECT_EQ(daemon.bad_messages(), 0);
  EXPECT_TRUE(daemon.unexpected().empty()) << daemon.unexpected().front();
}

TEST(RendezvousEndpoint, TheFreePortCanBeBound) {
  auto port = free_tcp_port("127.0.0.1");
  ASSERT_TRUE(port) << port.error().message;
  EXPECT_GE(*port, 1);
  EXPECT_LE(*port, 65535);
  const int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(*port));
  EXPECT_EQ(::bind(s, reinterpret_cast<const sockaddr*>(&addr), sizeof addr), 0) << "port " << *port;
  EXPECT_EQ(::listen(s, 1), 0);
  ::close(s);
  // A name resolves to the address it binds on (from /etc/hosts: no name server is asked).
  EXPECT_TRUE(free_tcp_port("localhost"));
}

TEST(RendezvousEndpoint, AnAddressNotOfThisMachineHasNoFreePort) {
  std::ifstream nonlocal("/proc/sys/net/ipv4/ip_nonlocal_bind");
  int allowed = 0;
  if (nonlocal >> allowed && allowed != 0) GTEST_SKIP() << "this machine binds addresses not its own";
  auto r = free_tcp_port("192.0.2.1");  // TEST-NET-1: never this machine's
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, ErrorCode::io);
  EXPECT_NE(r.error().message.find("192.0.2.1"), std::string::npos) << r.error().message;
}

TEST(RendezvousEndpoint, TheLocalAddressTowardALoopbackDaemonIsLoopback) {
  auto a = local_address_toward("http://127.0.0.1:8080");
  ASSERT_TRUE(a) << a.error().message;
  EXPECT_EQ(*a, "127.0.0.1");
  auto named = local_address_toward("https://localhost");
  ASSERT_TRUE(named) << named.error().message;
  EXPECT_TRUE(*named == "127.0.0.1" || *named == "::1") << *named;
  auto bad = local_address_toward("ftp://127.0.0.1");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::invalid_argument);
}

TEST(RendezvousEndpoint, AnAddressIsAHostNameOrIpWithoutSpacesOrCommas) {
  for (const char* good : {"10.0.3.7", "gpu-box-1.example.com", "::1", "fe80::1%eth0"})
    EXPECT_TRUE(check_rendezvous_address(good)) << good;
  for (const std::string& bad : {std::string(), std::string("gpu box"), std::string("a,b"), std::string("a\tb"),
                                std::string(256, 'a')}) {
    auto st = check_rendezvous_address(bad);
    ASSERT_FALSE(st) << bad;
    EXPECT_EQ(st.error().field, "address");
  }
}

// --gang-gid-range: FIRST-LAST, each gang's group drawn from it by job id.
TEST(GangGidRange, ParsesARangeRefusesBadOnesAndDrawsOneGroupPerJob) {
  auto r = parse_gang_gid_range("2000000000-2099999999");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->first, 2000000000u);
  EXPECT_EQ(r->last, 2099999999u);
  for (const char* bad : {"", "5-3", "999-2000", "2000-1999", "1000", "1000-", "-2000", "1000-2000x", "a-b",
                          "1000-4294967295"}) {
    auto refused = parse_gang_gid_range(bad);
    ASSERT_FALSE(refused) << bad;
    EXPECT_NE(refused.error().message.find("--gang-gid-range"), std::string::npos);
  }
  const GangGidRange small{5000, 5009};
  EXPECT_EQ(gang_gid(small, 1), 5001u);
  EXPECT_EQ(gang_gid(small, 9), 5009u);
  EXPECT_EQ(gang_gid(small, 10), 5000u);  // ids 10 apart share one: the size of the range
  EXPECT_NE(gang_gid(small, 3), gang_gid(small, 4));
  const std::string table = gang_table_name(42, 3);
  EXPECT_EQ(table, "jobctl_gang_" + std::to_string(::getpid()) + "_42_3");
}

}  // namespace
}  // namespace jobctl::worker
