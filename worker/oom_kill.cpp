#include "worker/oom_kill.h"

#include <signal.h>

#include <charconv>
#include <fstream>
#include <sstream>

namespace jobctl::worker {

namespace {

std::string read_small_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<int64_t> number_after(std::string_view text, std::string_view key) {
  size_t at = 0;
  while ((at = text.find(key, at)) != std::string_view::npos) {
    const bool line_start = at == 0 || text[at - 1] == '\n';
    at += key.size();
    if (!line_start) continue;
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t' || text[at] == ':')) ++at;
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text.data() + at, text.data() + text.size(), v);
    if (ec == std::errc()) return v;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<int64_t> parse_oom_kill_count(std::string_view memory_events) {
  return number_after(memory_events, "oom_kill ");
}

std::optional<int64_t> oom_kill_count() {
  const std::string cgroups = read_small_file("/proc/self/cgroup");
  std::istringstream lines(cgroups);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("0::", 0) == 0) return parse_oom_kill_count(read_small_file("/sys/fs/cgroup" + line.substr(3) + "/memory.events"));
  return std::nullopt;
}

int64_t available_memory_mb() {
  const auto kb = number_after(read_small_file("/proc/meminfo"), "MemAvailable");
  return kb ? *kb / 1024 : 0;
}

std::string sigkill_explanation(const process::ExitStatus& status, std::optional<int64_t> oom_before,
                                std::optional<int64_t> oom_after, int64_t available_mb) {
  if (status.exited || status.signal != SIGKILL) return "";
  const std::string peak = "its peak memory was " + std::to_string(status.max_rss_kb / 1024) + " MiB";
  const std::string room = available_mb > 0 ? "; " + std::to_string(available_mb) + " MiB are available now" : "";
  if (oom_before && oom_after && *oom_after > *oom_before)
    return "jobctl-train was killed by the kernel's out-of-memory killer (the cgroup's oom_kill count rose from " +
           std::to_string(*oom_before) + " to " + std::to_string(*oom_after) + "); " + peak + room +
           ": the job needs more memory than this machine has";
  return "jobctl-train was killed by SIGKILL, which jobctl-worker did not send: most likely the kernel's "
         "out-of-memory killer (" + peak + room + "), else someone killed it";
}

}  // namespace jobctl::worker
