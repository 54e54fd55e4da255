#include "process/run.h"

#include <signal.h>

namespace jobctl::process {

std::string RunResult::describe() const {
  std::string s = timed_out ? "timed out" : status.describe();
  std::string last = err;
  while (!last.empty() && (last.back() == '\n' || last.back() == '\r')) last.pop_back();
  if (const size_t nl = last.rfind('\n'); nl != std::string::npos) last.erase(0, nl + 1);
  if (last.size() > 300) last = last.substr(0, 300) + "...";
  if (!last.empty()) s += ": " + last;
  return s;
}

Expected<RunResult> run(const std::vector<std::string>& argv, const RunOptions& options) {
  auto child = Child::spawn(argv, SpawnOptions{.cwd = options.cwd, .env = options.env});
  if (!child) return child.error();
  Child& c = **child;
  RunResult r;
  std::optional<std::chrono::steady_clock::time_point> deadline;
  if (options.timeout.count() > 0) deadline = std::chrono::steady_clock::now() + options.timeout;
  if (!c.read_output(r.out, r.err, deadline, options.max_output)) {
    // Stop reading: something of the group may hold the pipes open after the kill.
    r.timed_out = true;
    c.signal_group(SIGKILL);
  }
  r.status = c.wait();
  return r;
}

}  // namespace jobctl::process
