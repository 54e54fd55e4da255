#include "daemon/provisioning/cloud_config.h"

#include <nlohmann/json.hpp>

#include "daemon/config/config_fields.h"

namespace jobctl::daemon::provisioning {

using config_fields::bad;
using config_fields::only;
using config_fields::read_int;
using config_fields::read_string;
using nlohmann::json;

Status apply_cloud_config(const json& document, CloudSettings& s) {
  if (!document.is_object()) return {};
  auto it = document.find("cloud");
  if (it == document.end()) return {};
  const json& c = *it;
  if (auto st = only(c, {"provider", "tag", "server_url", "poll_s", "idle_timeout_s", "boot_timeout_s",
                         "max_instances", "launch_attempts", "unavailable_cooldown_s", "sim", "exec", "containers",
                         "allowed_mounts"},
                     "cloud");
      !st)
    return st;
  for (auto [key, out] : {std::pair{"provider", &s.provider}, std::pair{"tag", &s.tag},
                          std::pair{"server_url", &s.server_url}})
    if (auto st = read_string(c, key, "cloud", *out); !st) return st;
  for (auto [key, out] : {std::pair{"poll_s", &s.poll_s}, std::pair{"idle_timeout_s", &s.idle_timeout_s},
                          std::pair{"boot_timeout_s", &s.boot_timeout_s},
                          std::pair{"max_instances", &s.max_instances},
                          std::pair{"launch_attempts", &s.launch_attempts},
                          std::pair{"unavailable_cooldown_s", &s.unavailable_cooldown_s}})
    if (auto st = read_int(c, key, "cloud", *out); !st) return st;
  if (auto st = config_fields::read_container_support(c, "cloud", s.containers); !st) return st;
  if (auto sim = c.find("sim"); sim != c.end()) {
    if (auto st = only(*sim, {"url", "timeout_ms"}, "cloud.sim"); !st) return st;
    if (auto st = read_string(*sim, "url", "cloud.sim", s.sim.url); !st) return st;
    int64_t timeout = s.sim.timeout_ms;
    if (auto st = read_int(*sim, "timeout_ms", "cloud.sim", timeout); !st) return st;
    s.sim.timeout_ms = static_cast<long>(timeout);
  }
  if (auto ex = c.find("exec"); ex != c.end()) {
    if (auto st = only(*ex, {"launch", "terminate", "describe", "interruptions", "worker_command", "timeout_s"},
                       "cloud.exec");
        !st)
      return st;
    for (auto [key, out] : {std::pair{"launch", &s.exec.launch}, std::pair{"terminate", &s.exec.terminate},
                            std::pair{"describe", &s.exec.describe},
                            std::pair{"interruptions", &s.exec.interruptions},
                            std::pair{"worker_command", &s.exec.worker_command}})
      if (auto st = read_string(*ex, key, "cloud.exec", *out); !st) return st;
    if (auto st = read_int(*ex, "timeout_s", "cloud.exec", s.exec.timeout_s); !st) return st;
  }
  return validate(s);
}

Status validate(const CloudSettings& s) {
  if (s.provider != "" && s.provider != "sim" && s.provider != "exec")
    return bad("cloud.provider", "must be \"sim\" or \"exec\" (or absent: no provisioner)");
  if (s.tag.empty() || s.tag.size() > 64) return bad("cloud.tag", "must be 1 to 64 characters");
  if (!s.server_url.empty() && s.server_url.rfind("http://", 0) != 0 && s.server_url.rfind("https://", 0) != 0)
    return bad("cloud.server_url", "must start with http:// or https://");
  struct Range { const char* field; int value, lo, hi; };
  for (Range r : {Range{"cloud.poll_s", s.poll_s, 1, 3600}, Range{"cloud.idle_timeout_s", s.idle_timeout_s, 0, 86400},
                  Range{"cloud.boot_timeout_s", s.boot_timeout_s, 1, 86400},
                  Range{"cloud.max_instances", s.max_instances, 0, 100000},
                  Range{"cloud.launch_attempts", s.launch_attempts, 1, 100},
                  Range{"cloud.unavailable_cooldown_s", s.unavailable_cooldown_s, 0, 86400}})
    if (r.value < r.lo || r.value > r.hi)
      return bad(r.field, "must be between " + std::to_string(r.lo) + " and " + std::to_string(r.hi));
  if (s.provider == "sim" && s.sim.url.rfind("http://", 0) != 0)
    return bad("cloud.sim.url", "must be jobctl-cloudsim's http:// URL");
  if (s.sim.timeout_ms < 100 || s.sim.timeout_ms > 600000) return bad("cloud.sim.timeout_ms", "must be between 100 and 600000");
  if (s.provider == "exec") return cloud::ExecProvider::validate(s.exec);
  return {};
}

Expected<std::unique_ptr<cloud::Provider>> make_provider(const CloudSettings& s, std::vector<cost::Offer> offers) {
  if (s.provider == "sim") return std::unique_ptr<cloud::Provider>(std::make_unique<cloud::SimProvider>(s.sim));
  if (s.provider == "exec") {
    cloud::ExecProviderOptions o = s.exec;
    o.offers = std::move(offers);
    if (auto st = cloud::ExecProvider::validate(o); !st) return st.error();
    return std::unique_ptr<cloud::Provider>(std::make_unique<cloud::ExecProvider>(std::move(o)));
  }
  return make_error(ErrorCode::invalid_argument, "no cloud provider is configured", "cloud.provider");
}

}  // namespace jobctl::daemon::provisioning
