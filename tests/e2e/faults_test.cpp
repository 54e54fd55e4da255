// Faults of jobctld's own machine that must change nothing for running jobs (docs/recovery.md,
// "Faults of jobctld's machine"), with jobctld and jobctl-worker as real processes running command
// jobs (a sleep) on a 3 s lease timeout:
//   - the data directory's file system full (a tmpfs mounted by the test, as root, filled by dd)
//     for three lease timeouts: submits are refused with 503, every running job keeps its lease;
//   - jobctld's wall clock stepped a minute forward, then two minutes back (an LD_PRELOAD library
//     the test builds, clock_shift_preload.cpp): no live lease expires;
//   - jobctld SIGKILLed and down for twice the lease timeout while the workers heartbeat: each
//     worker is active at once after the restart, and each job keeps its first lease.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "client/http_client.h"
#include "tests/e2e/recovery_support.h"
#include "tests/support/ci.h"
#include "tests/support/poll.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {
namespace {

constexpr int kLeaseTimeoutS = 3;

json sleep_job(const std::string& name, int seconds) {
  return {{"name", name}, {"command", {"/bin/sleep", std::to_string(seconds)}}};
}

// `n` workers that run command jobs, one job each at a time.
std::vector<std::unique_ptr<Process>> start_workers(const std::string& url, jobctl::testing::TempDir& tmp, int n) {
  std::vector<std::unique_ptr<Process>> out;
  for (int k = 0; k < n; ++k)
    out.push_back(std::make_unique<Process>(worker_argv(url, "worker-" + std::to_string(k),
                                                        tmp.file("work-" + std::to_string(k)), {"--allow-commands"})));
  return out;
}

std::vector<int64_t> submit_running(client::ApiClient& api, int n, int seconds) {
  std::vector<int64_t> ids;
  for (int k = 0; k < n; ++k) {
    auto r = api.submit_job(sleep_job("sleep-" + std::to_string(k), seconds).dump());
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    if (r) ids.push_back((*r)["id"].get<int64_t>());
  }
  EXPECT_TRUE(jobctl::testing::poll_until([&] {
    for (int64_t id : ids) {
      auto j = api.get_job(id);
      if (!j || j->value("state", "") != "running") return false;
    }
    return true;
  }, 60s));
  return ids;
}

std::string all_output(const std::vector<std::unique_ptr<Process>>& workers, Process& daemon) {
  std::string s;
  for (size_t k = 0; k < workers.size(); ++k) s += "--- worker " + std::to_string(k) + ":\n" + workers[k]->output();
  return s + "--- jobctld:\n" + daemon.output();
}

// Every job succeeded on its first lease: no recovery, no `preempted` event, one `leased`.
void expect_undisturbed(client::ApiClient& api, const std::vector<int64_t>& ids, const std::string& output) {
  for (int64_t id : ids) {
    const json job = wait_job(api, id, is_terminal, 90s);
    EXPECT_EQ(job.value("state", ""), "succeeded") << job.dump(2) << output;
    EXPECT_EQ(job.value("recoveries", -1), 0) << job["events"].dump(2);
    const auto types = event_types(job);
    EXPECT_EQ(std::count(types.begin(), types.end(), "preempted"), 0) << job["events"].dump(2);
    EXPECT_EQ(std::count(types.begin(), types.end(), "leased"), 1) << job["events"].dump(2);
  }
}

TEST(Faults, AFullDataDiskDisturbsNoRunningJob) {
  if (::geteuid() != 0) JOBCTL_SKIP_UNLESS_CI("mounting a tmpfs for the data directory needs root");
  jobctl::testing::TempDir tmp;
  const std::string data = tmp.file("data");
  std::filesystem::create_directories(data);
  ASSERT_EQ(::mount("tmpfs", data.c_str(), "tmpfs", 0, "size=48m"), 0) << std::strerror(errno);
  struct Unmount {
    std::string path;
    ~Unmount() { ::umount2(path.c_str(), MNT_DETACH); }
  } unmount{data};
  {
    Daemon d(data, "127.0.0.1:0", kLeaseTimeoutS);
    ASSERT_FALSE(d.url().empty());
    client::ApiClient api(d.url());
    auto workers = start_workers(d.url(), tmp, 3);
    const auto ids = submit_running(api, 3, 22);
    ASSERT_EQ(ids.size(), 3u) << all_output(workers, d.process());

    // Fill the file system to the last block.
    const std::string filler = data + "/filler";
    jobctl::testing::run_to_end({"/bin/dd", "if=/dev/zero", "of=" + filler, "bs=1M"}, 60s);
    jobctl::testing::run_to_end({"/bin/dd", "if=/dev/zero", "of=" + filler + "-tail", "bs=4k"}, 60s);
    // New work is refused with 503 while the store cannot write.
    ASSERT_TRUE(jobctl::testing::poll_until([&] {
      auto r = api.submit_job(sleep_job("refused", 1).dump());
      return !r && r.error().code == ErrorCode::storage_unavailable;
    }, 20s)) << all_output(workers, d.process());
    std::this_thread::sleep_for(std::chrono::seconds(3 * kLeaseTimeoutS));
    for (int64_t id : ids) {
      auto j = api.get_job(id);
      ASSERT_TRUE(j);
      EXPECT_EQ(j->value("state", ""), "running") << j->dump(2);
    }
    // The heartbeats answered meanwhile were held in memory, and the metric counts them.
    auto m = client::HttpClient(d.url()).request("GET", "/metrics");
    ASSERT_TRUE(m && m->status == 200) << (m ? m->body : m.error().message);
    const auto held = m->body.find("\njobctl_heartbeats_held_total ");
    ASSERT_NE(held, std::string::npos) << m->body;
    EXPECT_GE(std::atoll(m->body.c_str() + held + 30), 3) << "three running jobs heartbeat every second";
    std::filesystem::remove(filler);
    std::filesystem::remove(filler + "-tail");
    expect_undisturbed(api, ids, all_output(workers, d.process()));
    // And new work is taken again.
    EXPECT_TRUE(jobctl::testing::poll_until([&] { return bool(api.submit_job(sleep_job("after", 1).dump())); }, 20s));
    for (auto& w : workers) w->stop(SIGTERM, 30s);
  }
}

// Steps the clock of the processes started with clock_shift_env(): the shift file holds the
// signed milliseconds their CLOCK_REALTIME is moved by.
class ClockShift {
 public:
  explicit ClockShift(const std::string& path) : path_(path) { set_ms(0); }
  void set_ms(int64_t ms) {
    const int fd = ::open(path_.c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::pwrite(fd, &ms, sizeof ms, 0), static_cast<ssize_t>(sizeof ms));
    ::close(fd);
  }
  // jobctld's argv run through env with the library preloaded.
  std::vector<std::string> env_prefix() const {
    return {"/usr/bin/env", "LD_PRELOAD=" + env_or_fail("JOBCTL_CLOCK_SHIFT_PRELOAD"), "JOBCTL_CLOCK_SHIFT_FILE=" + path_};
  }

 private:
  std::string path_;
};

class ShiftedDaemon : public jobctl::testing::ServerProcess {
 public:
  ShiftedDaemon(const ClockShift& shift, const std::string& data_dir)
      : ServerProcess(argv(shift, data_dir)) {}

 private:
  static std::vector<std::string> argv(const ClockShift& shift, const std::string& data_dir) {
    auto a = shift.env_prefix();
    for (const auto& s : {env_or_fail("JOBCTLD"), std::string("--listen"), std::string("127.0.0.1:0"),
                          std::string("--data-dir"), data_dir, std::string("--heartbeat-interval-s"), std::string("1"),
                          std::string("--lease-timeout-s"), std::to_string(kLeaseTimeoutS)})
      a.push_back(s);
    return a;
  }
};

int64_t wall_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

TEST(Faults, AWallClockSteppedForwardAndBackExpiresNoLiveLease) {
  jobctl::testing::TempDir tmp;
  ClockShift shift(tmp.file("clock-shift"));
  ShiftedDaemon d(shift, tmp.file("data"));
  ASSERT_FALSE(d.url().empty());
  client::ApiClient api(d.url());
  auto workers = start_workers(d.url(), tmp, 3);
  const auto ids = submit_running(api, 3, 20);
  ASSERT_EQ(ids.size(), 3u) << all_output(workers, d.process());

  // The library works: a job submitted after the step is stamped with jobctld's shifted time.
  auto stamped_at = [&](int64_t step_ms) {
    shift.set_ms(step_ms);
    auto r = api.submit_job(json{{"name", "probe"}, {"command", {"/bin/true"}}}.dump());
    EXPECT_TRUE(r);
    if (!r) return int64_t{0};
    (void)api.cancel_job((*r)["id"].get<int64_t>());
    return (*r).value("created_ms", int64_t{0}) - wall_now_ms();
  };
  EXPECT_GT(stamped_at(60'000), 50'000);  // a minute forward
  std::this_thread::sleep_for(std::chrono::seconds(2 * kLeaseTimeoutS));
  EXPECT_LT(stamped_at(-60'000), -50'000);  // two minutes back from there
  std::this_thread::sleep_for(std::chrono::seconds(2 * kLeaseTimeoutS));
  for (int64_t id : ids) {
    auto j = api.get_job(id);
    ASSERT_TRUE(j);
    EXPECT_EQ(j->value("state", ""), "running") << j->dump(2) << all_output(workers, d.process());
  }
  expect_undisturbed(api, ids, all_output(workers, d.process()));
  for (auto& w : workers) w->stop(SIGTERM, 30s);
}

TEST(Faults, AnOutageOfTwiceTheLeaseTimeoutLeavesEveryHeartbeatingWorkerActive) {
  jobctl::testing::TempDir tmp;
  auto d1 = std::make_unique<Daemon>(tmp.file("data"), "127.0.0.1:0", kLeaseTimeoutS);
  ASSERT_FALSE(d1->url().empty());
  const std::string url = d1->url();
  const int port = d1->port();
  auto workers = start_workers(url, tmp, 2);
  std::vector<int64_t> ids;
  {
    client::ApiClient api(url);
    ids = submit_running(api, 2, 20);
    ASSERT_EQ(ids.size(), 2u) << all_output(workers, d1->process());
  }
  ::kill(d1->pid(), SIGKILL);
  d1->process().stop(SIGKILL, 5s);
  std::this_thread::sleep_for(std::chrono::seconds(2 * kLeaseTimeoutS));  // the workers' heartbeats fail

  Daemon d2(tmp.file("data"), "127.0.0.1:" + std::to_string(port), kLeaseTimeoutS);
  ASSERT_FALSE(d2.url().empty());
  client::ApiClient api(d2.url());
  // Never `lost`, from the restart on; each heard from (its "last seen" after the restart) within
  // a heartbeat interval or two, and from then on, for two lease timeouts, seen within the
  // timeout: state and "last seen" agree.
  const int64_t restarted_ms = wall_now_ms();
  auto all_active = [&](bool heard_since_restart) {
    auto r = api.list_workers();
    EXPECT_TRUE(r);
    if (!r) return false;
    bool heard = true;
    for (const auto& w : (*r)["workers"]) {
      EXPECT_EQ(w.value("state", ""), "active") << w.dump(2) << all_output(workers, d2.process());
      const int64_t seen = w.value("last_seen_ms", int64_t{0});
      if (heard_since_restart) EXPECT_LE(wall_now_ms() - seen, kLeaseTimeoutS * 1000) << w.dump(2);
      heard = heard && seen >= restarted_ms - 1000;
    }
    return heard;
  };
  ASSERT_TRUE(jobctl::testing::poll_until([&] { return all_active(false); }, 5s, 100ms));
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2 * kLeaseTimeoutS);
  while (std::chrono::steady_clock::now() < until) {
    all_active(true);
    std::this_thread::sleep_for(250ms);
  }
  expect_undisturbed(api, ids, all_output(workers, d2.process()));
  for (auto& w : workers) w->stop(SIGTERM, 30s);
}

// Replaces the first `from` by `to` (as long) in the file; false when not found.
bool patch_file(const std::string& path, const std::string& from, const std::string& to) {
  std::string bytes = read_bytes(path);
  const size_t at = bytes.find(from);
  if (at == std::string::npos) return false;
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(to.data(), static_cast<std::streamsize>(to.size()));
  return bool(f);
}

jobctl::process::RunResult check_database(const std::string& data_dir) {
  return jobctl::testing::run_to_end({env_or_fail("JOBCTLD"), "--check", "--data-dir", data_dir}, 60s);
}

// Every stored document carries a checksum: a digit changed inside a job's spec (the text still
// parses as JSON) is named by `jobctld --check` (table, row, file; exit 1) and, by a jobctld
// started on the file, answered as an error naming it on the job's GET while GET /v1/jobs lists
// the other jobs and marks that one damaged. A damaged page is reported, a sound file exits 0, and
// a start on a file SQLite finds malformed names the file and what to do.
TEST(Faults, ADamagedDatabaseIsNamedByCheckAndAtStart) {
  jobctl::testing::TempDir tmp;
  const std::string data = tmp.file("data");
  int64_t victim = 0;
  std::vector<int64_t> ids;
  {
    Daemon d(data, "127.0.0.1:0", kLeaseTimeoutS);
    ASSERT_FALSE(d.url().empty());
    client::ApiClient api(d.url());
    for (const char* name : {"first", "victim-job", "third"}) {
      auto r = api.submit_job(sleep_job(name, std::string(name) == "victim-job" ? 4321 : 1).dump());
      ASSERT_TRUE(r) << r.error().message;
      ids.push_back((*r)["id"].get<int64_t>());
      if (std::string(name) == "victim-job") victim = ids.back();
    }
    ASSERT_TRUE(d.process().stop(SIGTERM, 30s));
  }
  auto sound = check_database(data);
  EXPECT_TRUE(sound.success()) << sound.out << sound.err;
  EXPECT_NE(sound.out.find(": ok"), std::string::npos) << sound.out;

  const std::string db = data + "/jobctl.db";
  // One digit of the spec's command: still JSON, still a valid spec, another job's text.
  bool patched = patch_file(db, "\"/bin/sleep\",\"4321\"", "\"/bin/sleep\",\"4329\"");
  if (std::filesystem::exists(db + "-wal"))
    patched = patch_file(db + "-wal", "\"/bin/sleep\",\"4321\"", "\"/bin/sleep\",\"4329\"") || patched;
  ASSERT_TRUE(patched) << "the spec's text was not found in the database files";
  const std::string named = "table jobs, row " + std::to_string(victim) + ": the stored spec is damaged";
  auto damaged_row = check_database(data);
  EXPECT_EQ(damaged_row.status.code, 1) << damaged_row.describe() << damaged_row.out << damaged_row.err;
  EXPECT_NE(damaged_row.out.find(named), std::string::npos) << damaged_row.out;
  EXPECT_NE(damaged_row.out.find(db), std::string::npos) << damaged_row.out;

  {
    Daemon d(data, "127.0.0.1:0", kLeaseTimeoutS);
    ASSERT_FALSE(d.url().empty()) << d.process().output();
    client::ApiClient api(d.url());
    auto bad = api.get_job(victim);
    ASSERT_FALSE(bad) << bad->dump(2);
    EXPECT_NE(bad.error().message.find(named), std::string::npos) << bad.error().message;
    EXPECT_EQ(bad.error().message.find("4329"), std::string::npos) << bad.error().message;
    for (int64_t id : ids) {
      if (id == victim) continue;
      auto good = api.get_job(id);
      ASSERT_TRUE(good) << good.error().message;
      EXPECT_EQ(good->value("state", ""), "queued") << good->dump(2);
    }
    auto list = api.list_jobs(std::nullopt, 100, "");
    ASSERT_TRUE(list) << list.error().message;
    ASSERT_EQ((*list)["jobs"].size(), 3u) << list->dump(2);
    for (const json& j : (*list)["jobs"]) {
      if (j["id"].get<int64_t>() == victim) {
        EXPECT_NE(j.value("damaged", "").find(named), std::string::npos) << j.dump(2);
      } else {
        EXPECT_FALSE(j.contains("damaged")) << j.dump(2);
        EXPECT_EQ(j.value("state", ""), "queued") << j.dump(2);
      }
    }
    ASSERT_TRUE(d.process().stop(SIGTERM, 30s));
  }

  // A page's header: the b-tree page type byte of page 1 (the schema's, at offset 100) made invalid.
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(100);
    const char bad = '\x77';
    f.write(&bad, 1);
    ASSERT_TRUE(f);
  }
  auto damaged_page = check_database(data);
  EXPECT_EQ(damaged_page.status.code, 1) << damaged_page.describe() << damaged_page.out << damaged_page.err;
  EXPECT_NE(damaged_page.out.find(db), std::string::npos) << damaged_page.out;
  auto start = jobctl::testing::run_to_end({env_or_fail("JOBCTLD"), "--listen", "127.0.0.1:0", "--data-dir", data}, 30s);
  EXPECT_FALSE(start.success()) << start.out;
  EXPECT_NE(start.err.find("the database file " + db + " is damaged"), std::string::npos) << start.err;
  EXPECT_NE(start.err.find("jobctld --check --data-dir"), std::string::npos) << start.err;
  EXPECT_NE(start.err.find("docs/operations.md"), std::string::npos) << start.err;
}

}  // namespace
}  // namespace jobctl::e2e
