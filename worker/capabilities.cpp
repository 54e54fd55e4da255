#include "worker/capabilities.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/strings.h"
#include "process/run.h"

namespace jobctl::worker {

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

std::optional<Gpu> parse_proc_gpu_information(std::string_view text) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    if (line.rfind("Model:", 0) == 0) {
      std::string_view model = trim(line.substr(6));
      if (model.empty()) return std::nullopt;
      return Gpu{std::string(model), 0};
    }
  }
  return std::nullopt;
}

std::vector<Gpu> detect_gpus() {
  // A driver in a bad state can make nvidia-smi hang: the worker must start all the same.
  auto smi = process::run({"nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader"},
                          {.timeout = std::chrono::seconds(20)});
  if (smi && smi->success()) {
    auto gpus = parse_nvidia_smi(smi->out);
    if (!gpus.empty()) return gpus;
  }
  // No nvidia-smi (e.g. a container with the driver but not the tools): the driver's own files.
  std::vector<std::string> dirs;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/driver/nvidia/gpus", ec), end; !ec && it != end;
       it.increment(ec))
    dirs.push_back(it->path().string());
  std::sort(dirs.begin(), dirs.end());  // PCI bus order, as nvidia-smi (and CUDA_DEVICE_ORDER=PCI_BUS_ID)
  std::vector<Gpu> gpus;
  for (const auto& d : dirs) {
    std::ifstream in(d + "/information");
    std::stringstream text;
    text << in.rdbuf();
    if (auto g = parse_proc_gpu_information(text.str())) gpus.push_back(std::move(*g));
  }
  return gpus;
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
