// The first end-to-end path (issue 2): jobctld and jobctl-worker run as real processes on an
// ephemeral port with a temporary SQLite file; the `jobctl` CLI submits an MLP on Fashion-MNIST
// for one epoch and polls `jobctl show ID -o json` until it succeeds; the stored test accuracy
// must be at least 0.80. Then both processes are stopped with SIGTERM (they must exit 0), and a
// restarted jobctld still has the job.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/support/temp_dir.h"
#include "worker/child_process.h"

namespace {

using jobctl::worker::ChildProcess;
using jobctl::worker::ExitStatus;
using nlohmann::json;
using namespace std::chrono_literals;

std::string env_or_fail(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') {
    ADD_FAILURE() << name << " is not set (ctest sets it; see tests/e2e/CMakeLists.txt)";
    return "";
  }
  return v;
}

// A long-running process whose output is collected on a thread (so its pipes never fill).
class Service {
 public:
  explicit Service(std::vector<std::string> argv) {
    auto c = ChildProcess::spawn(argv);
    if (!c) {
      ADD_FAILURE() << c.error().message;
      return;
    }
    child_ = std::move(*c);
  }
  ~Service() { stop(SIGKILL, 5s); }

  bool ok() const { return child_ != nullptr; }

  // Reads stdout up to the first newline (the start-up line), then keeps draining both pipes.
  std::string first_line(std::chrono::seconds timeout) {
    std::string line;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    char c;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{child_->stdout_fd(), POLLIN, 0};
      if (::poll(&p, 1, 200) <= 0) continue;
      if (::read(child_->stdout_fd(), &c, 1) != 1) break;
      if (c == '\n') break;
      line.push_back(c);
    }
    start_draining();
    return line;
  }

  void start_draining() {
    if (drain_.joinable()) return;
    drain_ = std::thread([this] {
      char buf[4096];
      while (child_->stdout_fd() >= 0 || child_->stderr_fd() >= 0) {
        pollfd fds[2] = {{child_->stdout_fd(), POLLIN, 0}, {child_->stderr_fd(), POLLIN, 0}};
        if (::poll(fds, 2, 200) < 0) break;
        for (int i = 0; i < 2; ++i) {
          if (fds[i].fd < 0 || fds[i].revents == 0) continue;
          const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
          if (n > 0) {
            std::lock_guard<std::mutex> lock(mu_);
            output_.append(buf, static_cast<size_t>(n));
          } else {
            i == 0 ? child_->close_stdout() : child_->close_stderr();
          }
        }
      }
    });
  }

  // Sends `sig` and waits up to `timeout` for the exit; SIGKILL after that.
  std::optional<ExitStatus> stop(int sig, std::chrono::seconds timeout) {
    if (!child_) return std::nullopt;
    std::optional<ExitStatus> st = child_->try_wait();
    if (!st) {
      child_->send_signal(sig);
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      while (!(st = child_->try_wait()) && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(50ms);
      if (!st) {
        child_->send_signal(SIGKILL);
        child_->wait();
        st.reset();
      }
    }
    if (drain_.joinable()) drain_.join();
    return st;
  }

  std::string output() {
    std::lock_guard<std::mutex> lock(mu_);
    return output_;
  }

 private:
  std::unique_ptr<ChildProcess> child_;
  std::thread drain_;
  std::mutex mu_;
  std::string output_;
};

struct CliResult {
  ExitStatus status;
  std::string out, err;
};

CliResult jobctl(const std::string& server, std::vector<std::string> args) {
  args.insert(args.begin(), {env_or_fail("JOBCTL_CLI"), "--server", server});
  CliResult r;
  auto c = ChildProcess::spawn(args);
  if (!c) {
    ADD_FAILURE() << c.error().message;
    return r;
  }
  r.status = (*c)->read_all(r.out, r.err);
  return r;
}

std::string start_daemon(Service& d) {
  const std::string line = d.first_line(60s);
  json j = json::parse(line, nullptr, false);
  if (j.is_discarded() || j.value("event", "") != "listening") {
    ADD_FAILURE() << "jobctld did not print its start-up line; got '" << line << "'\n" << d.output();
    return "";
  }
  return j["url"].get<std::string>();
}

TEST(EndToEnd, FashionMnistMlpThroughDaemonWorkerAndCli) {
  ASSERT_TRUE(std::filesystem::exists("/usr/share/datasets/fashion-mnist"))
      << "Fashion-MNIST is not installed (scripts/setup.sh installs dataset-fashion-mnist)";
  jobctl::testing::TempDir tmp;
  const std::string data_dir = tmp.file("data");

  Service daemon({env_or_fail("JOBCTLD"), "--listen", "127.0.0.1:0", "--data-dir", data_dir});
  ASSERT_TRUE(daemon.ok());
  const std::string url = start_daemon(daemon);
  ASSERT_FALSE(url.empty());

  Service worker({env_or_fail("JOBCTL_WORKER"), "--server", url, "--name", "e2e-worker",
                  "--trainer", env_or_fail("JOBCTL_TRAIN"), "--work-dir", tmp.file("work"),
                  "--device", "cpu", "--wait-s", "5"});
  ASSERT_TRUE(worker.ok());
  worker.start_draining();

  CliResult sub = jobctl(url, {"submit", "--name", "fmnist-e2e", "--model", "mlp", "--hidden",
                               "256,128", "--dataset", "fashion-mnist", "--epochs", "1", "-o", "json"});
  ASSERT_TRUE(sub.status.success()) << sub.err;
  const int64_t id = json::parse(sub.out)["id"];

  json job;
  const auto deadline = std::chrono::steady_clock::now() + 600s;
  std::string state;
  while (std::chrono::steady_clock::now() < deadline) {
    CliResult show = jobctl(url, {"show", std::to_string(id), "-o", "json"});
    ASSERT_TRUE(show.status.success()) << show.err;
    job = json::parse(show.out);
    state = job["state"];
    if (state == "succeeded" || state == "failed" || state == "cancelled") break;
    std::this_thread::sleep_for(1s);
  }
  ASSERT_EQ(state, "succeeded") << job.dump(2) << "\n--- worker:\n" << worker.output()
                                << "\n--- daemon:\n" << daemon.output();
  ASSERT_TRUE(job["result"]["test_accuracy"].is_number()) << job.dump(2);
  ASSERT_TRUE(job["result"]["final_loss"].is_number()) << job.dump(2);
  const double accuracy = job["result"]["test_accuracy"];
  std::cout << "e2e: job " << id << " test_accuracy " << accuracy << ", final_loss "
            << job["result"]["final_loss"].get<double>() << "\n";
  EXPECT_GE(accuracy, 0.80);
  std::vector<std::string> events;
  for (const auto& e : job["events"]) events.push_back(e["type"]);
  EXPECT_EQ(events, (std::vector<std::string>{"submitted", "leased", "started", "succeeded"}));

  CliResult ls = jobctl(url, {"ls", "--state", "succeeded", "-o", "json"});
  ASSERT_TRUE(ls.status.success());
  EXPECT_EQ(json::parse(ls.out)["jobs"].size(), 1u);
  CliResult ws = jobctl(url, {"workers", "-o", "json"});
  ASSERT_TRUE(ws.status.success());
  EXPECT_EQ(json::parse(ws.out)["workers"][0]["name"], "e2e-worker");

  // Graceful shutdown of both.
  auto wst = worker.stop(SIGTERM, 30s);
  ASSERT_TRUE(wst) << "jobctl-worker did not exit on SIGTERM\n" << worker.output();
  EXPECT_TRUE(wst->success()) << wst->describe() << "\n" << worker.output();
  auto dst = daemon.stop(SIGTERM, 30s);
  ASSERT_TRUE(dst) << "jobctld did not exit on SIGTERM\n" << daemon.output();
  EXPECT_TRUE(dst->success()) << dst->describe() << "\n" << daemon.output();

  // The job is still there after a restart on the same data directory.
  Service again({env_or_fail("JOBCTLD"), "--listen", "127.0.0.1:0", "--data-dir", data_dir});
  const std::string url2 = start_daemon(again);
  ASSERT_FALSE(url2.empty());
  CliResult show = jobctl(url2, {"show", std::to_string(id), "-o", "json"});
  ASSERT_TRUE(show.status.success()) << show.err;
  EXPECT_EQ(json::parse(show.out)["state"], "succeeded");
  EXPECT_DOUBLE_EQ(json::parse(show.out)["result"]["test_accuracy"].get<double>(), accuracy);
  auto st = again.stop(SIGTERM, 30s);
  ASSERT_TRUE(st && st->success());
}

}  // namespace
