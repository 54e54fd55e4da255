// Splits a byte stream into lines: how the worker reads jobctl-train's JSON progress lines from
// its stdout pipe, and how LineReader and OutputCollector read children's output.
//
// Lines end at '\n' (a '\r' before it is dropped). A line longer than max_line is cut there and
// the rest of it dropped, so a runaway child cannot make its reader's memory grow without bound.
//
// Thread safety: a value type; one thread at a time.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace jobctl::process {

class LineSplitter {
 public:
  explicit LineSplitter(size_t max_line = size_t{1} << 20) : max_line_(max_line) {}
  // The lines `data` completes, in order.
  std::vector<std::string> feed(std::string_view data);
  // What is left after the stream ended (a last line without '\n'), if anything.
  std::optional<std::string> finish();

 private:
  size_t max_line_;
  std::string partial_;
  bool dropping_ = false;
};

}  // namespace jobctl::process
