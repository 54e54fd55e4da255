// A gang's rendezvous port against another job of the same user on the same machine
// (docs/security.md, "A gang's rendezvous"), with real jobctld, two real root jobctl-worker
// --run-as the same user the test makes, a real 2-node gang whose rank 0 listens on
// JOBCTL_MASTER_PORT and whose rank 1 connects, and a real probe job: before, the probe connected
// and its bytes reached rank 0; now it is refused, the gang's own node connects, and no
// jobctl_gang nftables table remains after the gang. Needs root and nft (skipped otherwise, a
// failure under CI=true where nft is missing).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/security/security_support.h"
#include "tests/security/worker_site.h"
#include "tests/support/ci.h"
#include "tests/support/poll.h"

namespace jobctl::security {
namespace {

// Both ranks: rank 0 listens on the master port and prints what each connection sends; rank 1
// connects (retrying while rank 0 starts) and sends "rank1". Each runs until argv[1] exists.
constexpr const char* kGangNode = R"(import os, select, socket, sys, time
flag = sys.argv[1]
rank, port = int(os.environ["JOBCTL_NODE_RANK"]), int(os.environ["JOBCTL_MASTER_PORT"])
deadline = time.time() + 80
if rank == 0:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", port))
    s.listen(8)
    print("listening on", port, flush=True)
    while not os.path.exists(flag) and time.time() < deadline:
        if select.select([s], [], [], 0.2)[0]:
            c, _ = s.accept()
            c.settimeout(5)
            try: print("received", c.recv(64).decode(errors="replace"), flush=True)
            except OSError as e: print("receive failed", e, flush=True)
            c.close()
else:
    while time.time() < deadline:
        try:
            c = socket.create_connection((os.environ["JOBCTL_MASTER_ADDR"], port), timeout=2)
            c.sendall(b"rank1")
            c.close()
            print("connected to the master", flush=True)
            break
        except OSError: time.sleep(0.2)
    while not os.path.exists(flag) and time.time() < deadline: time.sleep(0.2)
)";

// Another job: connects to 127.0.0.1:argv[1] and sends "probe".
constexpr const char* kProbe = R"(import socket, sys
try:
    c = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
    c.sendall(b"probe")
    c.close()
    print("probe connected", flush=True)
except OSError as e:
    print("probe refused:", e, flush=True)
)";

std::string gang_tables() {
  CommandResult r = run_command({"nft", "list", "tables"});
  std::string found;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    if (line.find("jobctl_gang_") != std::string::npos) found += line + "\n";
  return found;
}

TEST(GangRendezvous, AnotherJobOfTheSameUserCannotConnectToARunningGangsMasterPort) {
  if (::geteuid() != 0) GTEST_SKIP() << "--run-as needs root (the worker changes the program's user)";
  if (auto nft = process::run({"nft", "--version"}); !nft || !nft->success())
    JOBCTL_SKIP_UNLESS_CI(std::string("nft not found: run scripts/setup.sh (it installs nftables)"));
  Site site;
  TestUser user;
  const std::string mallory = site.commands_token("mallory");
  // Two slots each: a gang's nodes go to two workers, the probe to the second slot of one (a job
  // of the same user on the same machine while the gang runs).
  // Two workers of one machine: registered under names of their own (one name and address is
  // one worker, re-registered).
  auto named = [&](const std::string& name) {
    std::vector<std::string> argv = site.worker_argv({"--run-as", user.name(), "--slots", "2"});
    for (auto& arg : argv)
      if (arg == "isolated") arg = name;
    return argv;
  };
  Process a(named("node-a"), site.worker_env());
  Process b(named("node-b"), site.worker_env());
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string flag = site.dir.file("gang-done");
  const int64_t gang = submit(site.url(), mallory,
                              json{{"name", "gang"},
                                   {"command", {kPython, "-c", kGangNode, flag}},
                                   {"resources", {{"gpu", "cpu"}, {"nodes", 2}}}}
                                  .dump());
  ASSERT_GT(gang, 0);
  auto workers = [&] { return "\n--- worker a:\n" + a.output() + "\n--- worker b:\n" + b.output(); };
  ASSERT_TRUE(jobctl::testing::poll_until(
      [&] { return log_of(site, mallory, gang).find("received rank1") != std::string::npos; }, std::chrono::seconds(60)))
      << "the gang's rank 1 did not reach its master port:\n" << log_of(site, mallory, gang) << workers();
  const std::string gang_log = log_of(site, mallory, gang);
  const auto at = gang_log.find("listening on ");
  ASSERT_NE(at, std::string::npos) << gang_log;
  const std::string port = std::to_string(std::stoi(gang_log.substr(at + 13)));
  EXPECT_NE(gang_tables(), "") << "no jobctl_gang table while the gang runs" << workers();

  const int64_t probe = submit(site.url(), mallory,
                               json{{"name", "probe"}, {"command", {kPython, "-c", kProbe, port}},
                                    {"resources", {{"gpu", "cpu"}}}}
                                   .dump());
  ASSERT_GT(probe, 0);
  const auto [probe_job, probe_log] = site.finished(probe, mallory);
  EXPECT_EQ(probe_job.value("state", ""), "succeeded") << probe_job.dump(1) << workers();
  EXPECT_NE(probe_log.find("probe refused"), std::string::npos)
      << "another job of the same user connected to the gang's master port:\n" << probe_log;
  EXPECT_EQ(probe_log.find("probe connected"), std::string::npos) << probe_log;

  std::ofstream(flag) << "done\n";
  const auto [gang_job, final_log] = site.finished(gang, mallory);
  EXPECT_EQ(final_log.find("received probe"), std::string::npos)
      << "the probe's bytes reached the gang's rank 0:\n" << final_log;
  EXPECT_NE(final_log.find("connected to the master"), std::string::npos) << final_log;
  // The table goes when rank 0's lease ends (after its report).
  EXPECT_TRUE(jobctl::testing::poll_until([] { return gang_tables().empty(); }, std::chrono::seconds(10)))
      << "left after the gang ended:\n" << gang_tables() << workers();
}

// A table left by a worker that is gone (killed before it could remove it) is removed when a
// worker starts; one of a worker that still runs (this test's pid stands for one) is kept.
TEST(GangRendezvous, AWorkerRemovesAtItsStartTheTablesOfWorkersThatAreGone) {
  if (::geteuid() != 0) GTEST_SKIP() << "--run-as needs root (the worker changes the program's user)";
  if (auto nft = process::run({"nft", "--version"}); !nft || !nft->success())
    JOBCTL_SKIP_UNLESS_CI(std::string("nft not found: run scripts/setup.sh (it installs nftables)"));
  // A pid above pid_max never runs.
  int64_t pid_max = 0;
  std::ifstream("/proc/sys/kernel/pid_max") >> pid_max;
  ASSERT_GT(pid_max, 0);
  const std::string gone = "jobctl_gang_" + std::to_string(pid_max + 1) + "_7_1";
  const std::string alive = "jobctl_gang_" + std::to_string(::getpid()) + "_8_1";
  for (const auto& t : {gone, alive})
    ASSERT_TRUE(run_command({"nft", "add", "table", "inet", t}).status.success()) << t;
  Site site;
  TestUser user;
  Process worker(site.worker_argv({"--run-as", user.name()}), site.worker_env());
  ASSERT_TRUE(worker.ok());
  EXPECT_TRUE(jobctl::testing::poll_until([&] { return gang_tables().find(gone) == std::string::npos; },
                                          std::chrono::seconds(10)))
      << gang_tables() << "\n--- worker:\n" << worker.output();
  EXPECT_NE(gang_tables().find(alive), std::string::npos) << gang_tables();
  run_command({"nft", "delete", "table", "inet", alive});
  run_command({"nft", "delete", "table", "inet", gone});
}

}  // namespace
}  // namespace jobctl::security
