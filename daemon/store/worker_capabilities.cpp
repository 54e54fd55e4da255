#include "daemon/store/worker_capabilities.h"

#include "base/strings.h"
#include "cost/gpu_specs.h"

#include <algorithm>
#include <cctype>

#include <nlohmann/json.hpp>

namespace jobctl::daemon::store {

using nlohmann::json;

namespace {

Expected<int64_t> non_negative_int(const json& j, const std::string& field) {
  if (!j.is_number_integer()) return make_error(ErrorCode::invalid_argument, field + " must be an integer", field);
  const int64_t v = j.get<int64_t>();
  if (v < 0) return make_error(ErrorCode::invalid_argument, field + " must be >= 0", field);
  return v;
}

}  // namespace

Expected<WorkerCapabilities> capabilities_from_json(const json& j, const std::string& prefix) {
  if (!j.is_object()) return make_error(ErrorCode::invalid_argument, prefix + " must be an object", prefix);
  WorkerCapabilities caps;
  for (const auto& [key, value] : j.items()) {
    const std::string field = prefix + "." + key;
    if (key == "gpus") {
      if (!value.is_array()) return make_error(ErrorCode::invalid_argument, field + " must be an array", field);
      if (value.size() > 64) return make_error(ErrorCode::invalid_argument, field + " lists more than 64 GPUs", field);
      for (size_t i = 0; i < value.size(); ++i) {
        const std::string gf = field + "[" + std::to_string(i) + "]";
        const json& g = value[i];
        if (!g.is_object()) return make_error(ErrorCode::invalid_argument, gf + " must be an object", gf);
        GpuDevice dev;
        bool has_model = false;
        for (const auto& [gk, gv] : g.items()) {
          const std::string f = gf + "." + gk;
          if (gk == "model") {
            if (!gv.is_string() || gv.get<std::string>().empty() || gv.get<std::string>().size() > 200)
              return make_error(ErrorCode::invalid_argument, f + " must be a non-empty string (at most 200 characters)", f);
            dev.model = gv.get<std::string>();
            has_model = true;
          } else if (gk == "memory_mb") {
            auto v = non_negative_int(gv, f);
            if (!v) return v.error();
            dev.memory_mb = *v;
          } else {
            return make_error(ErrorCode::invalid_argument, "unknown field " + f, f);
          }
        }
        if (!has_model) return make_error(ErrorCode::invalid_argument, gf + ".model is required", gf + ".model");
        caps.gpus.push_back(std::move(dev));
      }
    } else if (key == "cpu_cores") {
      auto v = non_negative_int(value, field);
      if (!v) return v.error();
      if (*v > 1'000'000) return make_error(ErrorCode::invalid_argument, field + " is too large", field);
      caps.cpu_cores = static_cast<int>(*v);
    } else if (key == "memory_mb") {
      auto v = non_negative_int(value, field);
      if (!v) return v.error();
      caps.memory_mb = *v;
    } else if (key == "commands") {
      if (!value.is_boolean()) return make_error(ErrorCode::invalid_argument, field + " must be true or false", field);
      caps.commands = value.get<bool>();
    } else if (key == "containers") {
      if (!value.is_string() || value.get<std::string>().empty() || value.get<std::string>().size() > 64)
        return make_error(ErrorCode::invalid_argument, field + " must name a container runtime (a string)", field);
      caps.containers = value.get<std::string>();
    } else if (key == "mounts") {
      if (!value.is_array() || value.size() > 64)
        return make_error(ErrorCode::invalid_argument, field + " must be an array of at most 64 {prefix, writable}", field);
      for (size_t i = 0; i < value.size(); ++i) {
        const std::string mf = field + "[" + std::to_string(i) + "]";
        const json& m = value[i];
        if (!m.is_object() || !m.contains("prefix") || !m["prefix"].is_string())
          return make_error(ErrorCode::invalid_argument, mf + " must be an object with a prefix (a string)", mf);
        for (const auto& [mk, mv] : m.items())
          if (mk != "prefix" && mk != "writable") return make_error(ErrorCode::invalid_argument, "unknown field " + mf + "." + mk, mf + "." + mk);
        if (m.contains("writable") && !m["writable"].is_boolean())
          return make_error(ErrorCode::invalid_argument, mf + ".writable must be true or false", mf + ".writable");
        auto allowed = train::parse_allowed_mount(m["prefix"].get<std::string>(), mf + ".prefix");
        if (!allowed || allowed->writable)  // the mode travels as "writable", never in the prefix
          return make_error(ErrorCode::invalid_argument, mf + ".prefix must be an absolute folder", mf + ".prefix");
        allowed->writable = m.value("writable", false);
        caps.mounts.push_back(std::move(*allowed));
      }
    } else if (key == "machine_id") {
      if (!value.is_string() || value.get<std::string>().size() > 300)
        return make_error(ErrorCode::invalid_argument, field + " must be a string (at most 300 characters)", field);
      caps.machine_id = value.get<std::string>();
    } else if (key == "address") {
      if (!value.is_string() || value.get<std::string>().empty() || value.get<std::string>().size() > 255 ||
          value.get<std::string>().find_first_of(" \t\r\n,") != std::string::npos)
        return make_error(ErrorCode::invalid_argument,
                          field + " must be a host name or IP address (at most 255 characters, no spaces or commas)",
                          field);
      caps.address = value.get<std::string>();
    } else if (key == "simulated") {
      if (!value.is_boolean()) return make_error(ErrorCode::invalid_argument, field + " must be true or false", field);
      caps.simulated = value.get<bool>();
    } else if (key == "cpu") {
      if (value.is_null()) continue;
      if (!value.is_object()) return make_error(ErrorCode::invalid_argument, field + " must be an object", field);
      cost::CpuFacts cpu;
      for (const auto& [ck, cv] : value.items()) {
        const std::string f = field + "." + ck;
        if (ck == "model" || ck == "vendor") {
          if (!cv.is_string() || cv.get<std::string>().size() > 200)
            return make_error(ErrorCode::invalid_argument, f + " must be a string (at most 200 characters)", f);
          (ck == "model" ? cpu.model : cpu.vendor) = cv.get<std::string>();
        } else if (ck == "vector_bits") {
          auto v = non_negative_int(cv, f);
          if (!v) return v.error();
          if (*v > 4096) return make_error(ErrorCode::invalid_argument, f + " must be at most 4096", f);
          cpu.vector_bits = static_cast<int>(*v);
        } else if (ck == "fma") {
          if (!cv.is_boolean()) return make_error(ErrorCode::invalid_argument, f + " must be true or false", f);
          cpu.fma = cv.get<bool>();
        } else if (ck == "mhz") {
          auto v = non_negative_int(cv, f);
          if (!v) return v.error();
          if (*v > 100000) return make_error(ErrorCode::invalid_argument, f + " must be at most 100000", f);
          cpu.mhz = static_cast<double>(*v);
        } else if (ck == "measured_tflops") {
          // A bound on a CPU's FP32 rate far above any made: a figure past it is no measurement.
          if (!cv.is_number() || !(cv.get<double>() >= 0 && cv.get<double>() <= kMaxMeasuredCpuTflops))
            return make_error(ErrorCode::invalid_argument,
                              f + " must be a number from 0 to " + std::to_string(static_cast<int>(kMaxMeasuredCpuTflops)), f);
          cpu.measured_tflops = cv.get<double>();
        } else {
          return make_error(ErrorCode::invalid_argument, "unknown field " + f, f);
        }
      }
      caps.cpu = std::move(cpu);
    } else if (key == "instance") {
      if (value.is_null()) continue;
      if (!value.is_object()) return make_error(ErrorCode::invalid_argument, field + " must be an object", field);
      WorkerInstance inst;
      for (const auto& [ik, iv] : value.items()) {
        const std::string f = field + "." + ik;
        if (ik == "spot") {
          if (!iv.is_boolean()) return make_error(ErrorCode::invalid_argument, f + " must be true or false", f);
          inst.spot = iv.get<bool>();
        } else if (ik == "job_id") {
          if (!iv.is_number_integer() || iv.get<int64_t>() < 1)
            return make_error(ErrorCode::invalid_argument, f + " must be a job id (a positive integer)", f);
          inst.job_id = iv.get<int64_t>();
        } else if (ik == "id" || ik == "provider" || ik == "instance_type") {
          if (!iv.is_string() || iv.get<std::string>().size() > 200)
            return make_error(ErrorCode::invalid_argument, f + " must be a string (at most 200 characters)", f);
          (ik == "id" ? inst.id : ik == "provider" ? inst.provider : inst.instance_type) = iv.get<std::string>();
        } else {
          return make_error(ErrorCode::invalid_argument, "unknown field " + f, f);
        }
      }
      caps.instance = std::move(inst);
    } else {
      return make_error(ErrorCode::invalid_argument, "unknown field " + field, field);
    }
  }
  if (caps.cpu) caps.cpu->cores = caps.cpu_cores;
  return caps;
}

json to_json(const WorkerCapabilities& caps) {
  json gpus = json::array();
  for (const auto& g : caps.gpus) gpus.push_back({{"model", g.model}, {"memory_mb", g.memory_mb}});
  json out = {{"gpus", gpus}, {"cpu_cores", caps.cpu_cores}, {"memory_mb", caps.memory_mb}};
  if (caps.instance)
    out["instance"] = {{"id", caps.instance->id},
                       {"provider", caps.instance->provider},
                       {"instance_type", caps.instance->instance_type},
                       {"spot", caps.instance->spot}};
  if (caps.instance && caps.instance->job_id > 0) out["instance"]["job_id"] = caps.instance->job_id;
  if (caps.cpu)
    out["cpu"] = {{"model", caps.cpu->model}, {"vendor", caps.cpu->vendor}, {"vector_bits", caps.cpu->vector_bits},
                  {"fma", caps.cpu->fma}, {"mhz", static_cast<int64_t>(caps.cpu->mhz)}};
  if (caps.cpu && caps.cpu->measured_tflops > 0) out["cpu"]["measured_tflops"] = caps.cpu->measured_tflops;
  if (caps.simulated) out["simulated"] = true;
  if (caps.commands) out["commands"] = true;
  if (!caps.containers.empty()) out["containers"] = caps.containers;
  if (!caps.mounts.empty()) {
    json mounts = json::array();
    for (const auto& m : caps.mounts) mounts.push_back({{"prefix", m.prefix}, {"writable", m.writable}});
    out["mounts"] = std::move(mounts);
  }
  if (!caps.machine_id.empty()) out["machine_id"] = caps.machine_id;
  if (!caps.address.empty()) out["address"] = caps.address;
  return out;
}

const cost::GpuSpec* GpuDevice::identity() const {
  return cost::identify_gpu(model, static_cast<double>(memory_mb) / 1024.0);
}

}  // namespace jobctl::daemon::store
