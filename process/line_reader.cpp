#include "process/line_reader.h"

#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace jobctl::process {

std::optional<std::string> LineReader::next(std::optional<std::chrono::milliseconds> timeout) {
  using Monotonic = std::chrono::steady_clock;
  const auto deadline = timeout ? std::optional(Monotonic::now() + *timeout) : std::nullopt;
  char buf[8192];
  if (fd_ < 0) ended_ = true;
  while (lines_.empty() && !ended_) {
    int wait_ms = -1;
    if (deadline) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Monotonic::now()).count();
      if (left <= 0) return std::nullopt;
      wait_ms = static_cast<int>(std::min<int64_t>(left, 60'000));
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    const ssize_t got = ready < 0 ? -1 : ::read(fd_, buf, sizeof buf);
    if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (got > 0) {
      for (auto& line : splitter_.feed(std::string_view(buf, static_cast<size_t>(got))))
        lines_.push_back(std::move(line));
    } else {
      ended_ = true;
      if (auto rest = splitter_.finish()) lines_.push_back(std::move(*rest));
    }
  }
  if (lines_.empty()) return std::nullopt;
  std::string line = std::move(lines_.front());
  lines_.pop_front();
  return line;
}

}  // namespace jobctl::process
