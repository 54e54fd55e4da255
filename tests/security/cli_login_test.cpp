// A token saved by `jobctl login` is bound to its server (attack A6: after logging in to one
// server, `jobctl --server OTHER ls` sent the saved token to OTHER; plain `jobctl ls` ignored the
// saved server). The real jobctl binary, a real jobctld, and a listener of the test's own that
// records what it is sent.
#include <sys/stat.h>

#include <atomic>
#include <mutex>

#include "tests/security/security_support.h"
#include "tests/support/recording_server.h"

namespace jobctl::security {
namespace {

// A server that records every request's head and answers an empty job list.
struct Recorder : jobctl::testing::RecordingServer {
  Recorder()
      : RecordingServer([](const std::string&) {
          return response(200, "application/json", R"({"jobs":[],"next":null})");
        }) {}
};

TEST(CliLogin, ASavedTokenGoesOnlyToItsServerAndIsTheDefaultServer) {
  TempDir dir;
  const std::string data = dir.file("data");
  const std::string alice = create_token(data, "alice", "user");
  Jobctld d(data, {"--auth"});
  ASSERT_TRUE(d.ok());
  Recorder other;
  // A clean user environment: a config folder of its own; no server or token from outside.
  const std::vector<std::string> env = {"XDG_CONFIG_HOME=" + dir.file("config"), "HOME=" + dir.file("home"),
                                        "JOBCTL_SERVER=", "JOBCTL_TOKEN="};
  const std::string jobctl = env_or_fail("JOBCTL_CLI");

  CommandResult login = run_command({jobctl, "--server", d.url(), "login", "--token", alice}, env);
  ASSERT_TRUE(login.status.success()) << login.err;
  struct stat st {};
  ASSERT_EQ(::stat((dir.file("config") + "/jobctl/config.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);

  CommandResult elsewhere = run_command({jobctl, "--server", other.url(), "ls"}, env);
  EXPECT_TRUE(elsewhere.status.success()) << elsewhere.err;
  ASSERT_NE(other.seen().find("GET /v1/jobs"), std::string::npos) << other.seen();
  EXPECT_EQ(other.seen().find(alice), std::string::npos) << "the saved token went to another server:\n" << other.seen();
  EXPECT_EQ(other.seen().find("Authorization"), std::string::npos) << other.seen();

  // Without --server: the server of the login, with its token (auth is on there).
  const int64_t id = submit(d.url(), alice, small_spec("mine"));
  CommandResult home = run_command({jobctl, "ls", "-o", "json"}, env);
  ASSERT_TRUE(home.status.success()) << home.err;
  const json listed = json::parse(home.out, nullptr, false);
  ASSERT_TRUE(listed.is_object()) << home.out;
  ASSERT_EQ(listed["jobs"].size(), 1u) << home.out;
  EXPECT_EQ(listed["jobs"][0]["id"], id);
  // An explicit token still goes where it is told.
  CommandResult explicit_token = run_command({jobctl, "--server", other.url(), "--token", "jct_given", "ls"}, env);
  EXPECT_TRUE(explicit_token.status.success()) << explicit_token.err;
  EXPECT_NE(other.seen().find("Bearer jct_given"), std::string::npos);
}

}  // namespace
}  // namespace jobctl::security
