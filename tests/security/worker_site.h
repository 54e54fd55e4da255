// What the security tests of a worker and its jobs' programs share (tests/security, label
// `security`): a Unix user made for one test (root only), and a site of a real jobctld with auth
// on, an admin, users who may submit command jobs and a worker token, whose command jobs run on a
// real jobctl-worker --allow-commands.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "process/user_credentials.h"
#include "tests/security/security_support.h"

namespace jobctl::security {

// A Unix user made for one test (root only), removed at its end.
class TestUser {
 public:
  TestUser() {
    name_ = "jct" + std::to_string(::getpid()) + "x" + std::to_string(counter()++);
    CommandResult r = run_command({"useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name_});
    EXPECT_TRUE(r.status.success()) << r.out << r.err;
    auto c = process::credentials_of(name_);
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    if (c) credentials_ = *c;
  }
  ~TestUser() { run_command({"userdel", name_}); }
  TestUser(const TestUser&) = delete;
  TestUser& operator=(const TestUser&) = delete;
  const std::string& name() const { return name_; }
  const process::Credentials& credentials() const { return credentials_; }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string name_;
  process::Credentials credentials_;
};

// jobctld with auth on, an admin (who may submit command jobs) and a worker token.
struct Site {
  explicit Site(const std::vector<std::string>& daemon_flags = {}) : data(dir.file("data")) {
    admin = create_token(data, "root", "admin");
    worker_token = create_token(data, "fleet", "worker");
    std::vector<std::string> flags = {"--auth"};
    flags.insert(flags.end(), daemon_flags.begin(), daemon_flags.end());
    d.emplace(data, flags);
    // Job folders are entered by the job's user, whoever that is.
    namespace fs = std::filesystem;
    fs::permissions(dir.path(), fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                                    fs::perms::others_read | fs::perms::others_exec);
  }
  const std::string& url() const { return d->url(); }

  // A `user` token of `user` that may submit command jobs (made by the admin over the API).
  std::string commands_token(const std::string& user) const {
    auto r = http_as(url(), admin).request(
        "POST", "/v1/tokens", json{{"user", user}, {"role", "user"}, {"permissions", {"commands"}}}.dump());
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : r.error().message);
    return r && r->status == 201 ? body_of(*r).value("token", "") : "";
  }

  std::vector<std::string> worker_argv(const std::vector<std::string>& extra) const {
    std::vector<std::string> a = {env_or_fail("JOBCTL_WORKER"), "--server", url(), "--name", "isolated",
                                  "--trainer", env_or_fail("JOBCTL_TRAIN"), "--work-dir", dir.file("work"),
                                  "--device", "cpu", "--wait-s", "1", "--allow-commands"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }

  // The worker's environment: its token.
  process::SpawnOptions worker_env() const { return {.env = {"JOBCTL_TOKEN=" + worker_token}}; }

  // Waits (up to `timeout`) for job `id`'s end: the job and its log, read with `token`.
  std::pair<json, std::string> finished(int64_t id, const std::string& token,
                                        std::chrono::seconds timeout = std::chrono::seconds(90)) const {
    const json job = wait_job(url(), token, id, [](const json& j) {
      const std::string s = j.value("state", "");
      return s == "succeeded" || s == "failed" || s == "cancelled";
    }, timeout);
    auto log = http_as(url(), token).request("GET", "/v1/jobs/" + std::to_string(id) + "/log");
    EXPECT_TRUE(log && log->status == 200);
    return {job, log && log->status == 200 ? body_of(*log).value("text", "") : ""};
  }

  // Submits a command job of `command` and waits for its end: the job and its log.
  std::pair<json, std::string> run_job(const std::vector<std::string>& command, const Process& worker) const {
    const int64_t id = submit(url(), admin, json{{"name", "probe"}, {"command", command},
                                                 {"resources", {{"gpu", "cpu"}}}}.dump());
    auto out = finished(id, admin);
    EXPECT_EQ(out.first.value("state", ""), "succeeded") << out.first.dump(1) << "\n--- worker:\n" << worker.output();
    return out;
  }

  TempDir dir;
  std::string data, admin, worker_token;
  std::optional<Jobctld> d;
};

// The python3 the run-as jobs of these tests run (Debian's).
inline constexpr const char* kPython = "/usr/bin/python3";

// The job's log so far, read with `token`.
inline std::string log_of(const Site& site, const std::string& token, int64_t id) {
  auto r = http_as(site.url(), token).request("GET", "/v1/jobs/" + std::to_string(id) + "/log");
  return r && r->status == 200 ? body_of(*r).value("text", "") : "";
}

}  // namespace jobctl::security
