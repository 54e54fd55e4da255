#include "train/app/memory_check.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace jobctl::train {

namespace {

constexpr int64_t kFixedBytes = 256LL << 20;
constexpr double kSlack = 0.10;

std::string read_small_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<int64_t> parse_int(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// The cgroup v2 folder of this process ("0::/user.slice/..." in /proc/self/cgroup), or the v1
// memory controller's.
std::optional<int64_t> cgroup_room() {
  const std::string cgroups = read_small_file("/proc/self/cgroup");
  std::istringstream lines(cgroups);
  for (std::string line; std::getline(lines, line);) {
    std::string dir;
    if (line.rfind("0::", 0) == 0) dir = "/sys/fs/cgroup" + line.substr(3);
    else if (line.find(":memory:") != std::string::npos) dir = "/sys/fs/cgroup/memory" + line.substr(line.find(":memory:") + 8);
    else continue;
    const bool v2 = line.rfind("0::", 0) == 0;
    const auto limit = parse_int(read_small_file(dir + (v2 ? "/memory.max" : "/memory.limit_in_bytes")));
    const auto used = parse_int(read_small_file(dir + (v2 ? "/memory.current" : "/memory.usage_in_bytes")));
    if (limit && used && *limit < (int64_t{1} << 60)) return std::max<int64_t>(0, *limit - *used);
  }
  return std::nullopt;
}

std::string gib(int64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
  return buf;
}

}  // namespace

HostMemoryNeed host_memory_need(const JobSpec& spec, const ModelStats& stats, bool model_on_host) {
  HostMemoryNeed n;
  const InputShape shape = input_shape(spec.data);
  const int64_t samples = shape.train_samples + shape.test_samples;
  n.data_bytes = samples * (static_cast<int64_t>(shape.features()) * 4 + 4);
  if (model_on_host) n.model_bytes = stats.training_bytes(spec.train.batch_size);
  n.snapshot_bytes = stats.weight_bytes + stats.optimizer_state_bytes;
  const int64_t base = n.data_bytes + n.model_bytes + n.snapshot_bytes;
  n.fixed_bytes = kFixedBytes + static_cast<int64_t>(std::ceil(kSlack * static_cast<double>(base)));
  return n;
}

std::optional<int64_t> mem_available_bytes(std::string_view meminfo) {
  const size_t at = meminfo.find("MemAvailable:");
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = meminfo.substr(at + 13);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  int64_t kb = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), kb);
  if (ec != std::errc()) return std::nullopt;
  return kb * 1024;
}

std::optional<int64_t> available_host_memory() {
  std::optional<int64_t> avail = mem_available_bytes(read_small_file("/proc/meminfo"));
  if (auto room = cgroup_room()) avail = avail ? std::min(*avail, *room) : *room;
  return avail;
}

Status check_host_memory(const HostMemoryNeed& need, std::optional<int64_t> available) {
  if (!available || need.total() <= *available) return {};
  std::string parts = "data " + gib(need.data_bytes);
  if (need.model_bytes > 0) parts += ", model and activations " + gib(need.model_bytes);
  parts += ", checkpoint snapshot " + gib(need.snapshot_bytes) + ", program and slack " + gib(need.fixed_bytes);
  return make_error(ErrorCode::invalid_argument,
                    "not enough memory: this job needs about " + gib(need.total()) + " (" + parts +
                        ") and this machine has " + gib(*available) +
                        " available; use a smaller model or batch, or a machine with more memory",
                    "memory");
}

}  // namespace jobctl::train
