// jobctld's "cloud" configuration section (docs/configuration.md, "cloud"; docs/clouds.md): which
// provider driver launches the instances placement chooses, and how the provisioner treats them.
//
//   "cloud": {"provider": "sim" | "exec",
//             "tag": "jobctl",                      // every instance carries it (reconciliation)
//             "server_url": "http://10.0.0.5:8080", // what instances' workers connect to
//                                                   // (default: this daemon's own URL)
//             "poll_s": 2, "idle_timeout_s": 300, "boot_timeout_s": 900,
//             "max_instances": 16, "launch_attempts": 3, "unavailable_cooldown_s": 600,
//             "sim": {"url": "http://127.0.0.1:8090", "timeout_ms": 10000},
//             "exec": {"launch": ..., "terminate": ..., "describe": ..., "interruptions": ...,
//                      "worker_command": ..., "timeout_s": 300}}
//
// With a provider set, placement may choose cloud offers (placement.cloud_provider defaults to
// it). Without one, cloud offers are only quoted, unless placement.cloud_provider names a
// provider whose instances someone else launches.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/expected.h"
#include "cloud/exec_provider.h"
#include "cloud/provider.h"
#include "cloud/sim_provider.h"
#include "train/spec/allowed_mounts.h"

namespace jobctl::daemon::provisioning {

struct CloudSettings {
  std::string provider;              // "" (no provisioner) | "sim" | "exec"
  std::string tag = "jobctl";
  std::string server_url;            // empty: the daemon's own URL once it listens
  int poll_s = 2;                    // provider sync, launches, idle checks
  int idle_timeout_s = 300;          // an instance whose worker holds no job this long is stopped
  int boot_timeout_s = 900;          // an instance whose worker never registered is stopped
  int max_instances = 16;            // live instances at once
  int launch_attempts = 3;           // per placement, before the offer is set aside
  int unavailable_cooldown_s = 600;  // how long an offer that could not launch is set aside
  cloud::SimProviderOptions sim;
  cloud::ExecProviderOptions exec;
  // Jobs in an image on the instances: their worker is started with --container-runtime and an
  // --allow-mount per prefix ("containers", "allowed_mounts").
  train::ContainerSupport containers;
};

// Applies the "cloud" object of the configuration document (absent: no provisioner). Unknown keys
// and wrong types are errors naming the key ("cloud.exec.launch").
Status apply_cloud_config(const nlohmann::json& document, CloudSettings& settings);
Status validate(const CloudSettings& settings);

// The driver for these settings; `offers` is what the exec driver lists (the daemon's catalog).
// Errors: invalid_argument (no provider configured, or the exec templates do not expand).
Expected<std::unique_ptr<cloud::Provider>> make_provider(const CloudSettings& settings,
                                                         std::vector<cost::Offer> offers);

}  // namespace jobctl::daemon::provisioning
