// A command job's program against the worker that runs it (docs/security.md, "What a job program
// can reach"), with real jobctld, jobctl-worker --allow-commands and real programs:
//   J1 the program read the worker's API token from /proc/<worker>/environ (unsetenv in the child
//      did not clear the worker's own block), and could read its memory (the worker secret)
//      through /proc/<worker>/mem: the worker was dumpable; `--token` showed in its cmdline;
//   J2 a program that left its process group (setsid, double fork) kept running after its job
//      ended, seeing every later job, and after its worker was killed;
//   J3 there was no way to run job programs as a user other than the worker's.
// A program running as root can read any process's memory, so where the tests run as root the
// worker of J1 runs as a user the test creates (the same user as its job, as on a shared
// machine); J3 and the run-as half of J2 need root and are skipped otherwise.
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>

#include "process/user_credentials.h"
#include "tests/security/security_support.h"
#include "tests/security/worker_site.h"
#include "tests/support/poll.h"

namespace jobctl::security {
namespace {

namespace fs = std::filesystem;

// Reads the worker's (its parent's) environ, cmdline and memory, looking for argv[1].
constexpr const char* kProcProbe = R"(import os, sys
ppid = os.getppid(); needle = sys.argv[1].encode()
print("own-env", "token-found" if "JOBCTL_TOKEN" in os.environ else "no-token", flush=True)
def attempt(name, read):
    try:
        data = read()
        print(name, "read", "token-found" if needle in data else "no-token", flush=True)
    except OSError as e:
        print(name, "denied", e.errno, flush=True)
def memory():
    found = b""
    with open("/proc/%d/mem" % ppid, "rb", 0) as mem:
        for line in open("/proc/%d/maps" % ppid):
            span, perms = line.split()[:2]
            if "r" not in perms: continue
            lo, hi = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(lo)
                if needle in mem.read(hi - lo): found = needle
            except OSError:
                pass
    return found
attempt("environ", lambda: open("/proc/%d/environ" % ppid, "rb").read())
attempt("cmdline", lambda: open("/proc/%d/cmdline" % ppid, "rb").read())
attempt("mem", memory)
)";

TEST(JobIsolation, AJobProgramFindsNoCredentialInTheWorkersProcFiles) {
  Site site;
  // As root the program could read anything: then worker and program run as an unprivileged user.
  std::optional<TestUser> user;
  process::SpawnOptions as_user;
  if (::geteuid() == 0) {
    user.emplace();
    as_user.run_as = user->credentials();
    fs::create_directories(site.dir.file("work"));
    ::chown(site.dir.file("work").c_str(), user->credentials().uid, user->credentials().gid);
  }
  as_user.env = {"JOBCTL_TOKEN=" + site.worker_token};
  Process worker(site.worker_argv({}), as_user);
  ASSERT_TRUE(worker.ok());
  const auto [job, log] = site.run_job({kPython, "-c", kProcProbe, site.worker_token}, worker);
  EXPECT_EQ(log.find(site.worker_token), std::string::npos);
  EXPECT_NE(log.find("own-env no-token"), std::string::npos) << log;
  EXPECT_NE(log.find("environ denied"), std::string::npos) << log;
  EXPECT_NE(log.find("mem denied"), std::string::npos) << log;
  // The command line stays readable by everyone; the token is not on it.
  EXPECT_NE(log.find("cmdline read no-token"), std::string::npos) << log;
  EXPECT_EQ(log.find("token-found"), std::string::npos) << log;
  // Root may read it: the token's bytes are gone from the worker's environment block too.
  if (::geteuid() == 0) {
    std::ifstream environ("/proc/" + std::to_string(worker.pid()) + "/environ", std::ios::binary);
    std::stringstream block;
    block << environ.rdbuf();
    EXPECT_FALSE(block.str().empty());
    EXPECT_EQ(block.str().find(site.worker_token), std::string::npos) << "the token is still in the worker's environ";
  }
}

TEST(JobIsolation, ATokenOnTheCommandLineOrInAFileOthersMayReadIsRefused) {
  Site site;
  auto start = [&](const std::vector<std::string>& extra) {
    auto r = process::run(site.worker_argv(extra), {.timeout = std::chrono::seconds(20)});
    EXPECT_TRUE(r);
    return r ? *r : process::RunResult{};
  };
  const process::RunResult flag = start({"--token", site.worker_token});
  EXPECT_FALSE(flag.timed_out) << "the worker ran with --token";
  EXPECT_EQ(flag.status.shell_code(), 2) << flag.err;
  EXPECT_NE(flag.err.find("--token is refused"), std::string::npos) << flag.err;

  const std::string file = site.dir.file("token");
  std::ofstream(file) << site.worker_token << "\n";
  ::chmod(file.c_str(), 0644);
  const process::RunResult open_file = start({"--token-file", file});
  EXPECT_FALSE(open_file.timed_out) << "the worker ran with a token file of mode 0644";
  EXPECT_EQ(open_file.status.shell_code(), 2) << open_file.err;
  EXPECT_NE(open_file.err.find("chmod 600"), std::string::npos) << open_file.err;
}

bool process_alive(pid_t pid) {
  std::string stat;
  std::getline(std::ifstream("/proc/" + std::to_string(pid) + "/stat"), stat);
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return false;  // gone
  const char state = stat.size() > close + 2 ? stat[close + 2] : '?';
  return state != 'Z' && state != 'X';
}

// Leaves a `sleep 300` behind in a session of its own (double fork), prints its pid, then sleeps
// argv[1] seconds (the job still running) and exits 0.
constexpr const char* kImplant = R"(import os, sys, time
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setsid()
    if os.fork() > 0: os._exit(0)
    os.write(w, str(os.getpid()).encode()); os.close(w)
    null = os.open("/dev/null", os.O_RDWR)
    for fd in (0, 1, 2): os.dup2(null, fd)
    os.execvp("sleep", ["sleep", "300"])
os.close(w)
implant = os.read(r, 64).decode()
os.waitpid(pid, 0)
print("implant", implant, flush=True)
time.sleep(float(sys.argv[1]))
)";

// The implant's pid from a job's log; -1 when absent.
pid_t implant_of(const std::string& log) {
  const size_t at = log.find("implant ");
  return at == std::string::npos ? -1 : static_cast<pid_t>(std::stol(log.substr(at + 8)));
}

// Expects the implant to be gone (killed by then: a moment for the kernel to finish the kill);
// `after`: what should have ended it, for the message. Kills it if not.
void expect_implant_ended(pid_t implant, const std::string& after, const Process& worker) {
  ASSERT_GT(implant, 0);
  const bool alive = !jobctl::testing::poll_until([&] { return !process_alive(implant); }, 10s, 20ms);
  if (alive) ::kill(implant, SIGKILL);
  EXPECT_FALSE(alive) << "the job's implant (pid " << implant << ") outlived " << after << "\n--- worker:\n"
                      << worker.output();
}

TEST(JobIsolation, WhatAJobStartedEndsWithTheJobEvenOutsideItsSession) {
  Site site;
  // The worker's own cgroup v2 where the machine has one it may write; its session otherwise
  // (which this program leaves, so the run-as test below holds that case).
  Process worker(site.worker_argv({}), {.env = {"JOBCTL_TOKEN=" + site.worker_token}});
  ASSERT_TRUE(worker.ok());
  const auto [job, log] = site.run_job({kPython, "-c", kImplant, "0"}, worker);
  if (worker.output().find("no writable cgroup v2") != std::string::npos)
    GTEST_SKIP() << "no writable cgroup v2 here: the run-as test holds the fallback";
  expect_implant_ended(implant_of(log), "the job", worker);
}

TEST(JobIsolation, WhatAJobOfAKilledWorkerStartedEndsWhenTheNextWorkerStarts) {
  Site site;
  std::string first_output;
  {
    Process first(site.worker_argv({}), {.env = {"JOBCTL_TOKEN=" + site.worker_token}});
    ASSERT_TRUE(first.ok());
    const int64_t id = submit(site.url(), site.admin,
                              json{{"name", "implant"}, {"command", {kPython, "-c", kImplant, "300"}},
                                   {"resources", {{"gpu", "cpu"}}}}.dump());
    ASSERT_GT(id, 0);
    ASSERT_TRUE(first.wait_for_output("] implant ", 60s)) << first.output();
    if (first.output().find("no writable cgroup v2") != std::string::npos)
      GTEST_SKIP() << "no writable cgroup v2 here: a killed worker's job processes are not tracked";
    first.stop(SIGKILL, 10s);  // no chance to end its job
    first_output = first.output();
  }
  const pid_t implant = implant_of(first_output.substr(first_output.find("] implant ") + 2));
  ASSERT_GT(implant, 0) << first_output;
  ASSERT_TRUE(process_alive(implant)) << "the implant ended with the worker; nothing to test";
  Process second(site.worker_argv({}), {.env = {"JOBCTL_TOKEN=" + site.worker_token}});
  ASSERT_TRUE(second.ok());
  expect_implant_ended(implant, "the next worker's start", second);
}

TEST(JobIsolation, WithRunAsWithoutACgroupWhatAJobStartedEndsWithTheJob) {
  if (::geteuid() != 0) GTEST_SKIP() << "--run-as needs root (the worker changes the program's user)";
  Site site;
  TestUser user;
  Process worker(site.worker_argv({"--run-as", user.name(), "--job-cgroup", "off"}),
                 {.env = {"JOBCTL_TOKEN=" + site.worker_token}});
  ASSERT_TRUE(worker.ok());
  const auto [job, log] = site.run_job({kPython, "-c", kImplant, "0"}, worker);
  expect_implant_ended(implant_of(log), "the job", worker);
}

// Prints its uid and tries to read the worker's token file (argv[1]).
constexpr const char* kIdentityProbe = R"(import os, sys
print("uid", os.getuid(), flush=True)
try:
    print("token-file read", open(sys.argv[1]).read(), flush=True)
except OSError as e:
    print("token-file denied", e.errno, flush=True)
)";

TEST(JobIsolation, WithRunAsTheProgramRunsAsThatUserAndCannotReadTheWorkersTokenFile) {
  if (::geteuid() != 0) GTEST_SKIP() << "--run-as needs root (the worker changes the program's user)";
  Site site;
  TestUser user;
  const std::string token_file = site.dir.file("worker-token");
  std::ofstream(token_file) << site.worker_token << "\n";
  ::chmod(token_file.c_str(), 0600);
  Process worker(site.worker_argv({"--run-as", user.name(), "--token-file", token_file}));
  ASSERT_TRUE(worker.ok());
  const auto [job, log] = site.run_job({kPython, "-c", kIdentityProbe, token_file}, worker);
  EXPECT_NE(log.find("uid " + std::to_string(user.credentials().uid) + "\n"), std::string::npos) << log;
  EXPECT_NE(log.find("token-file denied"), std::string::npos) << log;
  EXPECT_EQ(log.find(site.worker_token), std::string::npos) << log;
}

}  // namespace
}  // namespace jobctl::security
