#include "daemon/slurm/slurm_config.h"

#include <set>

#include <nlohmann/json.hpp>

#include "cost/gpu_specs.h"
#include "daemon/config/config_fields.h"
#include "slurm/batch_job.h"

namespace jobctl::daemon::slurm {

using config_fields::bad;
using config_fields::only;
using config_fields::read_int;
using config_fields::read_number;
using config_fields::read_string;
using nlohmann::json;

namespace {

bool one_line(const std::string& s) { return s.find_first_of("\r\n") == std::string::npos; }

Status read_partitions(const json& section, std::vector<SlurmPartitionSettings>& out) {
  auto it = section.find("partitions");
  if (it == section.end()) return {};
  if (!it->is_array()) return bad("slurm.partitions", "must be an array");
  out.clear();
  for (size_t i = 0; i < it->size(); ++i) {
    const std::string f = "slurm.partitions[" + std::to_string(i) + "]";
    const json& p = (*it)[i];
    if (auto st = only(p, {"name", "gpu_model", "gpus_per_node", "tasks_per_node"}, f); !st) return st;
    SlurmPartitionSettings partition;
    if (auto st = read_string(p, "name", f, partition.name); !st) return st;
    if (auto st = read_string(p, "gpu_model", f, partition.gpu_model); !st) return st;
    if (auto st = read_int(p, "gpus_per_node", f, partition.gpus_per_node); !st) return st;
    if (auto st = read_int(p, "tasks_per_node", f, partition.tasks_per_node); !st) return st;
    out.push_back(std::move(partition));
  }
  return {};
}

Status read_sbatch_options(const json& section, std::vector<std::string>& out) {
  auto it = section.find("sbatch_options");
  if (it == section.end()) return {};
  if (!it->is_array()) return bad("slurm.sbatch_options", "must be an array of strings");
  out.clear();
  for (size_t i = 0; i < it->size(); ++i) {
    if (!(*it)[i].is_string()) return bad("slurm.sbatch_options[" + std::to_string(i) + "]", "must be a string");
    out.push_back((*it)[i].get<std::string>());
  }
  return {};
}

// Every "{...}" of the worker command must be a placeholder jobctld fills in.
Status check_placeholders(const std::string& command) {
  for (size_t open = command.find('{'); open != std::string::npos; open = command.find('{', open + 1)) {
    const size_t close = command.find('}', open);
    const std::string name = command.substr(open, close == std::string::npos ? std::string::npos : close - open + 1);
    if (name != "{server}") return bad("slurm.worker_command", "has an unknown placeholder " + name + " (only {server})");
  }
  return {};
}

}  // namespace

Status apply_slurm_config(const json& document, SlurmSettings& s) {
  if (!document.is_object()) return {};
  auto it = document.find("slurm");
  if (it == document.end()) return {};
  const json& c = *it;
  if (auto st = only(c, {"conf_file", "bin_dir", "timeout_s", "tag", "server_url", "worker_command", "partitions",
                         "account", "qos", "sbatch_options", "time_margin", "signal_lead_s", "startup_s", "poll_s",
                         "containers", "allowed_mounts"},
                     "slurm");
      !st)
    return st;
  s.enabled = true;
  for (auto [key, out] : {std::pair{"conf_file", &s.conf_file}, std::pair{"bin_dir", &s.bin_dir},
                          std::pair{"tag", &s.tag}, std::pair{"server_url", &s.server_url},
                          std::pair{"worker_command", &s.worker_command}, std::pair{"account", &s.account},
                          std::pair{"qos", &s.qos}})
    if (auto st = read_string(c, key, "slurm", *out); !st) return st;
  for (auto [key, out] : {std::pair{"timeout_s", &s.timeout_s}, std::pair{"signal_lead_s", &s.signal_lead_s},
                          std::pair{"startup_s", &s.startup_s}, std::pair{"poll_s", &s.poll_s}})
    if (auto st = read_int(c, key, "slurm", *out); !st) return st;
  if (auto st = read_number(c, "time_margin", "slurm", s.time_margin); !st) return st;
  if (auto st = config_fields::read_container_support(c, "slurm", s.containers); !st) return st;
  if (auto st = read_partitions(c, s.partitions); !st) return st;
  if (auto st = read_sbatch_options(c, s.sbatch_options); !st) return st;
  return validate(s);
}

Status validate(const SlurmSettings& s) {
  if (!s.enabled) return {};
  struct Range { const char* field; int value, lo, hi; };
  for (Range r : {Range{"slurm.timeout_s", s.timeout_s, 1, 600}, Range{"slurm.startup_s", s.startup_s, 0, 3600},
                  Range{"slurm.poll_s", s.poll_s, 1, 3600}})
    if (r.value < r.lo || r.value > r.hi)
      return bad(r.field, "must be between " + std::to_string(r.lo) + " and " + std::to_string(r.hi));
  if (!(s.time_margin >= 0 && s.time_margin <= 10)) return bad("slurm.time_margin", "must be between 0 and 10");
  if (s.tag.empty() || s.tag.size() > 64 ||
      s.tag.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != std::string::npos)
    return bad("slurm.tag", "must be 1 to 64 letters, digits, '_', '.' or '-'");
  if (!s.server_url.empty() && s.server_url.rfind("http://", 0) != 0 && s.server_url.rfind("https://", 0) != 0)
    return bad("slurm.server_url", "must start with http:// or https://");
  if (!one_line(s.conf_file)) return bad("slurm.conf_file", "must be one line");
  if (!one_line(s.bin_dir)) return bad("slurm.bin_dir", "must be one line");
  if (s.worker_command.empty() || !one_line(s.worker_command))
    return bad("slurm.worker_command", "must be one non-empty line");
  if (auto st = check_placeholders(s.worker_command); !st) return st;
  if (s.partitions.empty()) return bad("slurm.partitions", "must name at least one partition");
  std::set<std::string> names;
  for (size_t i = 0; i < s.partitions.size(); ++i) {
    const auto& p = s.partitions[i];
    const std::string f = "slurm.partitions[" + std::to_string(i) + "]";
    if (p.name.empty() || !one_line(p.name) || p.name.find(',') != std::string::npos)
      return bad(f + ".name", "must be one partition's name");
    if (!names.insert(p.name).second) return bad(f + ".name", "names partition " + p.name + " twice");
    if (p.gpu_model.empty()) return bad(f + ".gpu_model", "is required (the GPU model its nodes have, e.g. \"A100\")");
    if (!cost::identify_gpu(p.gpu_model)) return bad(f + ".gpu_model", "is not a GPU model jobctl knows: " + p.gpu_model);
    if (p.gpus_per_node < 0 || p.gpus_per_node > 64) return bad(f + ".gpus_per_node", "must be between 0 and 64");
    if (p.tasks_per_node < 1 || p.tasks_per_node > 64) return bad(f + ".tasks_per_node", "must be between 1 and 64");
  }
  // The rest is what every batch job carries: checked once here, by the same rules as each
  // submission (slurm/batch_job.h), so a bad option fails at start rather than at the first job.
  ::jobctl::slurm::BatchJob probe;
  probe.name = "jobctl-config-check";
  probe.partition = s.partitions.front().name;
  probe.gpus = 1;
  probe.command = s.worker_command;
  probe.account = s.account;
  probe.qos = s.qos;
  probe.extra = s.sbatch_options;
  probe.signal_lead_s = s.signal_lead_s;
  probe.time_limit_s = ::jobctl::slurm::time_limit_for(3600, s.time_margin, s.signal_lead_s, s.startup_s);
  return ::jobctl::slurm::validate(probe);
}

}  // namespace jobctl::daemon::slurm
