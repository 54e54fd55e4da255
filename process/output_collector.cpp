#include "process/output_collector.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include "process/line_splitter.h"

namespace jobctl::process {

namespace {

using SteadyClock = std::chrono::steady_clock;

// How long the reader may go on after the child ended: a descendant that left the child's group
// may hold the pipes open; the output it writes after that is not the child's.
constexpr auto kDrainAfterExit = std::chrono::seconds(2);

}  // namespace

Expected<std::unique_ptr<OutputCollector>> OutputCollector::start(const std::vector<std::string>& argv,
                                                                  SpawnOptions options) {
  options.stdout_to = Output::pipe();
  options.stderr_to = Output::pipe();
  auto child = Child::spawn(argv, options);
  if (!child) return child.error();
  return std::unique_ptr<OutputCollector>(new OutputCollector(std::move(*child)));
}

OutputCollector::OutputCollector(std::unique_ptr<Child> child) : child_(std::move(child)) {
  reader_ = std::thread([this] { read_until_end(); });
}

OutputCollector::~OutputCollector() {
  {
    MutexLock lock(process_mu_);
    if (!child_->try_wait()) {
      child_->signal_group(SIGKILL);
      child_->wait();
    }
  }
  finish_reading();
}

void OutputCollector::read_until_end() {
  LineSplitter splitters[2];
  int fds[2] = {child_->stdout_fd(), child_->stderr_fd()};
  char buf[8192];
  auto keep = [&](std::vector<std::string> texts, bool from_stderr) {
    if (texts.empty()) return;
    const auto now = SteadyClock::now();
    MutexLock lock(lines_mu_);
    for (auto& t : texts) lines_.push_back(OutputLine{now, from_stderr, std::move(t)});
    lines_changed_.signal_all();
  };
  while ((fds[0] >= 0 || fds[1] >= 0) && !quit_.load()) {
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    const int n = ::poll(p, 2, 100);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2 && n > 0; ++i) {
      if (p[i].fd < 0 || p[i].revents == 0) continue;
      const ssize_t got = ::read(p[i].fd, buf, sizeof buf);
      if (got > 0) {
        keep(splitters[i].feed(std::string_view(buf, static_cast<size_t>(got))), i == 1);
      } else if (got == 0 || (errno != EINTR && errno != EAGAIN)) {
        fds[i] = -1;
      }
    }
  }
  for (int i = 0; i < 2; ++i)
    if (auto rest = splitters[i].finish()) keep({std::move(*rest)}, i == 1);
  child_->close_stdout();
  child_->close_stderr();
  MutexLock lock(lines_mu_);
  ended_ = true;
  lines_changed_.signal_all();
}

void OutputCollector::finish_reading() {
  std::call_once(joined_, [this] {
    {
      const auto deadline = SteadyClock::now() + kDrainAfterExit;
      MutexLock lock(lines_mu_);
      while (!ended_ && lines_changed_.wait_until(lines_mu_, deadline)) {
      }
    }
    quit_.store(true);
    reader_.join();
  });
}

std::string OutputCollector::output() const {
  MutexLock lock(lines_mu_);
  std::string text;
  for (const auto& l : lines_) {
    text += l.text;
    text += '\n';
  }
  return text;
}

std::vector<OutputLine> OutputCollector::lines() const {
  MutexLock lock(lines_mu_);
  return lines_;
}

std::optional<OutputLine> OutputCollector::wait_for_line(const std::function<bool(std::string_view)>& match,
                                                         std::chrono::milliseconds timeout) const {
  const auto deadline = SteadyClock::now() + timeout;
  MutexLock lock(lines_mu_);
  size_t seen = 0;
  for (;;) {
    for (; seen < lines_.size(); ++seen)
      if (match(lines_[seen].text)) return lines_[seen];
    if (ended_) return std::nullopt;
    if (!lines_changed_.wait_until(lines_mu_, deadline) && seen == lines_.size())
      return std::nullopt;
  }
}

bool OutputCollector::wait_for_output(std::string_view text, std::chrono::milliseconds timeout) const {
  return wait_for_line([&](std::string_view line) { return line.find(text) != std::string_view::npos; },
                       timeout)
      .has_value();
}

bool OutputCollector::signal(int sig) {
  MutexLock lock(process_mu_);
  return child_->signal(sig);
}

bool OutputCollector::signal_group(int sig) {
  MutexLock lock(process_mu_);
  return child_->signal_group(sig);
}

std::optional<ExitStatus> OutputCollector::try_wait() {
  MutexLock lock(process_mu_);
  return child_->try_wait();
}

std::optional<ExitStatus> OutputCollector::stop(int sig, std::chrono::milliseconds grace) {
  std::optional<ExitStatus> status;
  {
    MutexLock lock(process_mu_);
    status = child_->try_wait();
    if (!status) {
      child_->signal_group(sig);
      status = child_->wait_for(grace);
      if (!status) {
        child_->signal_group(SIGKILL);
        child_->wait();
      }
    }
  }
  finish_reading();
  return status;
}

ExitStatus OutputCollector::wait() {
  ExitStatus status;
  {
    MutexLock lock(process_mu_);
    status = child_->wait();
  }
  finish_reading();
  return status;
}

}  // namespace jobctl::process
