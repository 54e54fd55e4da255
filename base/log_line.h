// One log line to standard error, written with a single write(2) when the statement ends, so the
// lines of several threads never interleave (`std::cerr << a << b` writes each piece on its own,
// and another thread's line can land between them):
//
//   LogLine() << "jobctld: provisioner: launched " << id;
//
// The newline is added. Thread safety: each LogLine belongs to the statement that made it.
#pragma once

#include <unistd.h>

#include <cerrno>
#include <sstream>
#include <string>

namespace jobctl {

class LogLine {
 public:
  LogLine() = default;
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  ~LogLine() {
    out_ << '\n';
    const std::string line = out_.str();
    size_t done = 0;
    while (done < line.size()) {
      const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // nowhere to log to: nothing else to do
      done += static_cast<size_t>(n);
    }
  }

  template <class T>
  LogLine& operator<<(const T& value) {
    out_ << value;
    return *this;
  }

 private:
  std::ostringstream out_;
};

}  // namespace jobctl
