// Reads lines from one descriptor, blocking, with an optional deadline: a test reading
// jobctl-train's JSON progress lines one at a time, or a server's start-up line.
//
// Ownership and thread safety: borrows the descriptor (the Child that owns it must outlive the
// reader); one thread at a time.
#pragma once

#include <chrono>
#include <deque>
#include <optional>
#include <string>

#include "process/line_splitter.h"

namespace jobctl::process {

class LineReader {
 public:
  explicit LineReader(int fd, size_t max_line = size_t{1} << 20) : fd_(fd), splitter_(max_line) {}

  // The next line (without its '\n'); nullopt at the end of the stream, on a read error, or
  // when `timeout` passes first (at_end() tells these apart).
  std::optional<std::string> next(std::optional<std::chrono::milliseconds> timeout = std::nullopt);
  // True once the stream has ended (or failed) and every line has been returned.
  bool at_end() const { return ended_ && lines_.empty(); }

 private:
  int fd_;
  LineSplitter splitter_;
  std::deque<std::string> lines_;
  bool ended_ = false;
};

}  // namespace jobctl::process
