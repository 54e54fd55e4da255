#include "worker/capabilities.h"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
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

namespace {
// nvidia-smi (or a --fake-gpus program) that has not answered by then is taken as no answer.
constexpr std::chrono::seconds kGpuQueryTimeout{20};
// jobctl-train --measure-cpu takes a fraction of a second; a trainer that has not answered by
// then (a machine thrashing at start) leaves the peak to the formula.
constexpr std::chrono::seconds kCpuMeasureTimeout{30};
}  // namespace

std::optional<CpuThroughput> parse_cpu_throughput(std::string_view out) {
  while (!out.empty()) {
    const size_t nl = out.find('\n');
    const std::string_view line = trim(out.substr(0, nl));
    out = nl == std::string_view::npos ? std::string_view{} : out.substr(nl + 1);
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || j.value("event", "") != "cpu_throughput") continue;
    auto rate = j.find("core_gflops");
    if (rate == j.end() || !rate->is_number()) continue;
    const double gflops = rate->get<double>();
    if (!(std::isfinite(gflops) && gflops > 0)) continue;
    auto kernels = j.find("kernels");
    return CpuThroughput{gflops, kernels != j.end() && kernels->is_string() ? kernels->get<std::string>() : ""};
  }
  return std::nullopt;
}

Expected<CpuThroughput> measure_cpu_throughput(const std::string& trainer) {
  auto r = process::run({trainer, "--measure-cpu"}, {.timeout = kCpuMeasureTimeout});
  if (!r) return make_error(r.error().code, "cannot run " + trainer + " --measure-cpu: " + r.error().message, "trainer");
  if (!r->success())
    return make_error(ErrorCode::unavailable, trainer + " --measure-cpu " + r->describe(), "trainer");
  auto t = parse_cpu_throughput(r->out);
  if (!t) return make_error(ErrorCode::unavailable, trainer + " --measure-cpu printed no throughput", "trainer");
  return *t;
}

double measured_machine_tflops(const CpuThroughput& t, int cores) {
  return t.core_gflops * std::max(cores, 1) / 1000.0;
}

std::vector<std::string> gpu_query_arguments() {
  return {"--query-gpu=name,memory.total", "--format=csv,noheader"};
}

Expected<std::vector<Gpu>> detect_fake_gpus(const std::string& program) {
  std::vector<std::string> argv{program};
  for (auto& a : gpu_query_arguments()) argv.push_back(std::move(a));
  auto r = process::run(argv, {.timeout = kGpuQueryTimeout});
  if (!r) return make_error(r.error().code, "--fake-gpus: cannot run " + program + ": " + r.error().message, "fake_gpus");
  if (!r->success())
    return make_error(ErrorCode::invalid_argument, "--fake-gpus: " + program + " " + r->describe(), "fake_gpus");
  auto gpus = parse_nvidia_smi(r->out);
  if (gpus.empty())
    return make_error(ErrorCode::invalid_argument, "--fake-gpus: " + program + " printed no GPU line (\"NAME, N MiB\")",
                      "fake_gpus");
  return gpus;
}

cost::CpuFacts parse_cpuinfo(std::string_view text) {
  cost::CpuFacts cpu;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = trim(line.substr(0, colon));
    const std::string_view value = trim(line.substr(colon + 1));
    if ((key == "model name" || key == "Hardware" || key == "Processor") && cpu.model.empty()) {
      cpu.model = std::string(value);
    } else if (key == "vendor_id" && cpu.vendor.empty()) {
      cpu.vendor = std::string(value);
    } else if (key == "CPU implementer" && cpu.vendor.empty()) {
      cpu.vendor = "ARM";
    } else if (key == "cpu MHz") {
      double mhz = 0;
      std::from_chars(value.data(), value.data() + value.size(), mhz);
      cpu.mhz = std::max(cpu.mhz, mhz);
    } else if (key == "flags" || key == "Features") {
      for (size_t i = 0; i < value.size();) {
        size_t j = value.find(' ', i);
        if (j == std::string_view::npos) j = value.size();
        const std::string_view flag = value.substr(i, j - i);
        i = j + 1;
        int bits = 0;
        if (flag == "avx512f") bits = 512;
        else if (flag == "avx2" || flag == "avx") bits = 256;
        else if (flag == "sse2" || flag == "asimd" || flag == "neon") bits = 128;
        cpu.vector_bits = std::max(cpu.vector_bits, bits);
        if (flag == "fma" || flag == "asimd") cpu.fma = true;  // AArch64 SIMD has fused multiply-add
      }
    }
  }
  return cpu;
}

cost::CpuFacts detect_cpu() {
  std::ifstream in("/proc/cpuinfo");
  std::stringstream text;
  text << in.rdbuf();
  cost::CpuFacts cpu = parse_cpuinfo(text.str());
  cpu.cores = detect_cpu_cores();
  // jobctl-train inherits the worker's environment: OpenBLAS kernels pinned there are the ones its
  // jobs run, whatever the CPU could do (cost/cpu_peak.h).
  if (const char* core = std::getenv("OPENBLAS_CORETYPE")) cost::pin_to_blas_core(cpu, core);
  return cpu;
}

std::vector<Gpu> detect_gpus() {
  // A driver in a bad state can make nvidia-smi hang: the worker must start all the same.
  std::vector<std::string> argv{"nvidia-smi"};
  for (auto& a : gpu_query_arguments()) argv.push_back(std::move(a));
  auto smi = process::run(argv, {.timeout = kGpuQueryTimeout});
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

nlohmann::json capabilities_json(const std::vector<Gpu>& gpus, const cost::CpuFacts& cpu, int64_t memory_mb,
                                 bool simulated) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& g : gpus) list.push_back({{"model", g.model}, {"memory_mb", g.memory_mb}});
  nlohmann::json j = {{"gpus", list}, {"cpu_cores", cpu.cores}, {"memory_mb", memory_mb}};
  nlohmann::json c = {{"model", cpu.model}, {"vector_bits", cpu.vector_bits}, {"fma", cpu.fma},
                      {"mhz", static_cast<int64_t>(cpu.mhz)}};
  if (!cpu.vendor.empty()) c["vendor"] = cpu.vendor;
  if (cpu.measured_tflops > 0) c["measured_tflops"] = cpu.measured_tflops;
  j["cpu"] = std::move(c);
  if (simulated) j["simulated"] = true;
  return j;
}

int detect_cpu_cores() { return static_cast<int>(std::max(1u, std::thread::hardware_concurrency())); }

int64_t detect_memory_mb() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return 0;
  return static_cast<int64_t>(pages) * page / (1024 * 1024);
}

std::string default_machine_id(const std::string& worker_name, const std::string& instance_provider,
                               const std::string& instance_id, const std::string& machine_id_file) {
  if (!instance_id.empty()) return (instance_provider.empty() ? "cloud" : instance_provider) + ":" + instance_id;
  std::ifstream in(machine_id_file);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  const std::string id(trim(line));
  return id.empty() ? "" : id + ":" + worker_name;
}

}  // namespace jobctl::worker
