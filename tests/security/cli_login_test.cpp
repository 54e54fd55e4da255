// A token saved by `jobctl login` is bound to its server (attack A6: after logging in to one
// server, `jobctl --server OTHER ls` sent the saved token to OTHER; plain `jobctl ls` ignored the
// saved server). The real jobctl binary, a real jobctld, and a listener of the test's own that
// records what it is sent.
#include <sys/stat.h>

#include <atomic>
#include <mutex>

#include "tests/security/security_support.h"

namespace jobctl::security {
namespace {

// A server that records every request's head and answers an empty job list.
class Recorder {
 public:
  Recorder() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 16);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }
  ~Recorder() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::string seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return seen_;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      const int c = ::accept4(fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::string head;
      char buf[4096];
      while (head.find("\r\n\r\n") == std::string::npos) {
        pollfd q{c, POLLIN, 0};
        if (::poll(&q, 1, 2000) <= 0) break;
        const ssize_t n = ::recv(c, buf, sizeof buf, 0);
        if (n <= 0) break;
        head.append(buf, static_cast<size_t>(n));
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        seen_ += head;
      }
      const std::string body = R"({"jobs":[],"next":null})";
      const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"
                                 "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      (void)!::send(c, answer.data(), answer.size(), MSG_NOSIGNAL);
      ::close(c);
    }
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  std::mutex mu_;
  std::string seen_;
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
