#include "worker/capabilities.h"

#include <unistd.h>

#include <charconv>
#include <thread>

#include "worker/child_process.h"

namespace jobctl::worker {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

std::vector<Gpu> parse_nvidia_smi(std::string_view csv) {
  std::vector<Gpu> gpus;
  while (!csv.empty()) {
    const size_t nl = csv.find('\n');
    std::string_view line = trim(csv.substr(0, nl));
    csv = nl == std::string_view::npos ? std::string_view{} : csv.substr(nl + 1);
    const size_t comma = line.rfind(',');
    if (line.empty() || comma == std::string_view::npos) continue;
    std::string_view name = trim(line.substr(0, comma));
    std::string_view mem = trim(line.substr(comma + 1));
    int64_t mb = 0;
    auto [end, ec] = std::from_chars(mem.data(), mem.data() + mem.size(), mb);
    if (name.empty() || ec != std::errc()) continue;
    std::string_view unit = trim(std::string_view(end, static_cast<size_t>(mem.data() + mem.size() - end)));
    if (unit == "GiB") mb *= 1024;
    gpus.push_back(Gpu{std::string(name), mb});
  }
  return gpus;
}

std::vector<Gpu> detect_gpus() {
  auto child = ChildProcess::spawn(
      {"nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"});
  if (!child) return {};
  std::string out, err;
  if (!(*child)->read_all(out, err).success()) return {};
  return parse_nvidia_smi(out);
}

nlohmann::json capabilities_json(const std::vector<Gpu>& gpus, int cpu_cores, int64_t memory_mb) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& g : gpus) list.push_back({{"model", g.model}, {"memory_mb", g.memory_mb}});
  return {{"gpus", list}, {"cpu_cores", cpu_cores}, {"memory_mb", memory_mb}};
}

int detect_cpu_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

int64_t detect_memory_mb() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<int64_t>(pages) * page / (1024 * 1024);
}

}  // namespace jobctl::worker
