#include "daemon/config.h"

#include <charconv>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "daemon/config/config_fields.h"
#include "net/listen_address.h"

namespace jobctl::daemon {

using nlohmann::json;

using config_fields::bad;
using config_fields::only;
using config_fields::read_int;
using config_fields::read_string;

Status apply_listen(std::string_view listen, DaemonConfig& c) {
  auto address = net::parse_listen_address(listen);
  if (!address) return address.error();
  c.host = address->host;
  c.port = address->port;
  return {};
}

Status apply_config_json(std::string_view text, DaemonConfig& c) {
  json j = json::parse(text, nullptr, false, /*ignore_comments=*/true);
  if (j.is_discarded()) return make_error(ErrorCode::malformed_json, "the configuration is not valid JSON");
  if (auto st = only(j, {"listen", "data_dir", "http", "workers", "store", "checkpoints", "bundles", "outputs", "logs", "web", "tls", "auth", "limits", "metrics", "cost", "placement", "cloud", "slurm", "webhooks"}, ""); !st) return st;
  if (auto st = auth::apply_security_config(j, c.security); !st) return st;  // auth_options.cpp
  if (auto st = placement::apply_placement_config(j, c.placement); !st) return st;  // placement_config.cpp
  if (auto st = provisioning::apply_cloud_config(j, c.cloud); !st) return st;  // cloud_config.cpp
  if (auto st = slurm::apply_slurm_config(j, c.slurm); !st) return st;  // slurm_config.cpp
  if (auto st = notify::apply_webhook_config(j, c.webhooks); !st) return st;  // webhook_options.cpp
  // A configured provider lets placement choose cloud offers, unless placement says otherwise.
  if (c.placement.cloud_provider.empty()) c.placement.cloud_provider = c.cloud.provider;
  // A Slurm cluster's partitions may be chosen: jobctld submits their batch jobs (daemon/slurm/).
  c.placement.slurm_launchable = c.slurm.enabled;
  // An exec cloud starts a worker able to run a command job only through its {job_flags}.
  c.placement.cloud_runs_commands =
      c.cloud.provider != "exec" || c.cloud.exec.worker_command.find("{job_flags}") != std::string::npos;
  // Jobs in an image where jobctld starts workers that run containers (with {job_flags} on an
  // exec cloud, which is how a worker gets its flags for one job).
  if (c.placement.cloud_runs_commands) c.placement.cloud_containers = c.cloud.containers;
  if (c.slurm.enabled) c.placement.slurm_containers = c.slurm.containers;
  // A gang on a cloud offer takes one instance per node, under the provisioner's cap.
  c.placement.cloud_max_instances = c.cloud.max_instances;
  if (auto it = j.find("listen"); it != j.end()) {
    if (!it->is_string()) return bad("listen", "must be a string");
    if (auto st = apply_listen(it->get<std::string>(), c); !st) return st;
  }
  if (auto st = read_string(j, "data_dir", "", c.data_dir); !st) return st;
  if (auto it = j.find("http"); it != j.end()) {
    const json& h = *it;
    if (auto st = only(h, {"io_threads", "handler_threads", "max_body_bytes", "max_header_bytes",
                           "header_timeout_s", "read_timeout_s", "idle_timeout_s", "max_connections",
                           "max_connections_per_client", "reserved_connections", "allowed_hosts",
                           "shutdown_grace_s"}, "http"); !st)
      return st;
    Status st;
    if (st = read_int(h, "io_threads", "http", c.io_threads); !st) return st;
    if (st = read_int(h, "handler_threads", "http", c.handler_threads); !st) return st;
    if (st = read_int(h, "max_body_bytes", "http", c.max_body_bytes); !st) return st;
    if (st = read_int(h, "max_header_bytes", "http", c.max_header_bytes); !st) return st;
    if (st = read_int(h, "header_timeout_s", "http", c.header_timeout_s); !st) return st;
    if (st = read_int(h, "read_timeout_s", "http", c.read_timeout_s); !st) return st;
    if (st = read_int(h, "idle_timeout_s", "http", c.idle_timeout_s); !st) return st;
    if (st = read_int(h, "max_connections", "http", c.max_connections); !st) return st;
    if (st = read_int(h, "max_connections_per_client", "http", c.max_connections_per_client); !st) return st;
    if (st = read_int(h, "reserved_connections", "http", c.reserved_connections); !st) return st;
    if (auto a = h.find("allowed_hosts"); a != h.end()) {
      if (!a->is_array()) return bad("http.allowed_hosts", "must be an array of host names");
      c.allowed_hosts.clear();
      for (const json& name : *a) {
        if (!name.is_string() || name.get<std::string>().empty())
          return bad("http.allowed_hosts", "must be an array of host names (\"name\" or \"name:port\")");
        c.allowed_hosts.push_back(name.get<std::string>());
      }
    }
    if (st = read_int(h, "shutdown_grace_s", "http", c.shutdown_grace_s); !st) return st;
  }
  if (auto it = j.find("workers"); it != j.end()) {
    const json& w = *it;
    if (auto st = only(w, {"heartbeat_interval_s", "lease_timeout_s", "max_lease_wait_s", "max_recoveries",
                           "max_progress_bytes", "gang_assembly_s"}, "workers"); !st)
      return st;
    Status st;
    if (st = read_int(w, "heartbeat_interval_s", "workers", c.heartbeat_interval_s); !st) return st;
    if (st = read_int(w, "lease_timeout_s", "workers", c.lease_timeout_s); !st) return st;
    if (st = read_int(w, "max_lease_wait_s", "workers", c.max_lease_wait_s); !st) return st;
    if (st = read_int(w, "max_recoveries", "workers", c.max_recoveries); !st) return st;
    if (st = read_int(w, "max_progress_bytes", "workers", c.max_progress_bytes); !st) return st;
    if (st = read_int(w, "gang_assembly_s", "workers", c.gang_assembly_s); !st) return st;
  }
  if (auto it = j.find("store"); it != j.end()) {
    const json& s = *it;
    if (auto st = only(s, {"synchronous", "write_batch_max", "max_list_limit", "tick_ms"}, "store"); !st) return st;
    Status st;
    if (st = read_string(s, "synchronous", "store", c.synchronous); !st) return st;
    if (st = read_int(s, "write_batch_max", "store", c.write_batch_max); !st) return st;
    if (st = read_int(s, "max_list_limit", "store", c.max_list_limit); !st) return st;
    if (st = read_int(s, "tick_ms", "store", c.tick_ms); !st) return st;
  }
  if (auto it = j.find("checkpoints"); it != j.end()) {
    if (auto st = only(*it, {"max_bytes", "max_concurrent_uploads", "max_concurrent_downloads"}, "checkpoints"); !st)
      return st;
    if (auto st = read_int(*it, "max_bytes", "checkpoints", c.checkpoint_max_bytes); !st) return st;
    if (auto st = read_int(*it, "max_concurrent_uploads", "checkpoints", c.checkpoint_max_concurrent_uploads); !st)
      return st;
    if (auto st = read_int(*it, "max_concurrent_downloads", "checkpoints", c.checkpoint_max_concurrent_downloads);
        !st)
      return st;
  }
  if (auto it = j.find("bundles"); it != j.end()) {
    if (auto st = only(*it, {"quota_bytes_per_user", "retention_s"}, "bundles"); !st) return st;
    if (auto st = read_int(*it, "quota_bytes_per_user", "bundles", c.bundle_quota_bytes_per_user); !st) return st;
    if (auto st = read_int(*it, "retention_s", "bundles", c.bundle_retention_s); !st) return st;
  }
  if (auto it = j.find("outputs"); it != j.end()) {
    if (auto st = only(*it, {"max_bytes_per_job", "quota_bytes_per_user", "retention_s"}, "outputs"); !st) return st;
    if (auto st = read_int(*it, "max_bytes_per_job", "outputs", c.output_max_bytes_per_job); !st) return st;
    if (auto st = read_int(*it, "quota_bytes_per_user", "outputs", c.output_quota_bytes_per_user); !st) return st;
    if (auto st = read_int(*it, "retention_s", "outputs", c.output_retention_s); !st) return st;
  }
  if (auto it = j.find("logs"); it != j.end()) {
    if (auto st = only(*it, {"max_bytes_per_job", "retention_s"}, "logs"); !st) return st;
    if (auto st = read_int(*it, "max_bytes_per_job", "logs", c.logs_max_bytes_per_job); !st) return st;
    if (auto st = read_int(*it, "retention_s", "logs", c.logs_retention_s); !st) return st;
  }
  if (auto it = j.find("web"); it != j.end()) {
    if (auto st = only(*it, {"root"}, "web"); !st) return st;
    if (auto st = read_string(*it, "root", "web", c.web_root); !st) return st;
  }
  if (auto it = j.find("tls"); it != j.end()) {
    if (auto st = only(*it, {"cert_file", "key_file"}, "tls"); !st) return st;
    if (auto st = read_string(*it, "cert_file", "tls", c.tls_cert_file); !st) return st;
    if (auto st = read_string(*it, "key_file", "tls", c.tls_key_file); !st) return st;
  }
  return {};
}

Status apply_config_file(const std::string& path, DaemonConfig& c) {
  std::ifstream in(path);
  if (!in) return make_error(ErrorCode::not_found, "cannot read the configuration file " + path, "config");
  std::ostringstream text;
  text << in.rdbuf();
  Status st = apply_config_json(text.str(), c);
  if (!st) {
    Error e = st.error();
    e.message = path + ": " + e.message;
    return e;
  }
  return {};
}

Status validate(const DaemonConfig& c) {
  if (c.data_dir.empty()) return bad("data_dir", "is required (--data-dir or \"data_dir\")");
  auto range = [](const char* f, int64_t v, int64_t lo, int64_t hi) -> Status {
    if (v < lo || v > hi)
      return bad(f, "must be between " + std::to_string(lo) + " and " + std::to_string(hi));
    return {};
  };
  for (Status st : {range("http.io_threads", c.io_threads, 1, 256),
                    range("http.handler_threads", c.handler_threads, 1, 1024),
                    range("http.max_body_bytes", c.max_body_bytes, 1024, int64_t{1} << 30),
                    range("http.max_header_bytes", c.max_header_bytes, 1024, 1 << 20),
                    range("http.header_timeout_s", c.header_timeout_s, 1, 3600),
                    range("http.read_timeout_s", c.read_timeout_s, 1, 3600),
                    range("http.idle_timeout_s", c.idle_timeout_s, 1, 3600),
                    range("http.max_connections", c.max_connections, 1, 1000000),
                    range("http.max_connections_per_client", c.max_connections_per_client, 1, 1000000),
                    range("http.reserved_connections", c.reserved_connections, -1, c.max_connections - 1),
                    range("http.shutdown_grace_s", c.shutdown_grace_s, 0, 3600),
                    range("workers.heartbeat_interval_s", c.heartbeat_interval_s, 1, 3600),
                    range("workers.lease_timeout_s", c.lease_timeout_s, 2, 86400),
                    range("workers.max_lease_wait_s", c.max_lease_wait_s, 0, 3600),
                    range("workers.max_recoveries", c.max_recoveries, 0, 1000),
                    range("workers.max_progress_bytes", c.max_progress_bytes, 256, 1 << 20),
                    range("workers.gang_assembly_s", c.gang_assembly_s, 1, 86400),
                    range("store.write_batch_max", c.write_batch_max, 1, 100000),
                    range("store.max_list_limit", c.max_list_limit, 1, 100000),
                    range("store.tick_ms", c.tick_ms, 10, 60000),
                    range("checkpoints.max_bytes", c.checkpoint_max_bytes, 1024, int64_t{16} << 30),
                    range("checkpoints.max_concurrent_uploads", c.checkpoint_max_concurrent_uploads, 1, 1024),
                    range("checkpoints.max_concurrent_downloads", c.checkpoint_max_concurrent_downloads, 1, 1024),
                    range("bundles.quota_bytes_per_user", c.bundle_quota_bytes_per_user, 0, int64_t{1} << 50),
                    range("bundles.retention_s", c.bundle_retention_s, 1, int64_t{10} * 365 * 24 * 3600),
                    range("logs.max_bytes_per_job", c.logs_max_bytes_per_job, 64 << 10, int64_t{1} << 40),
                    range("logs.retention_s", c.logs_retention_s, 1, int64_t{10} * 365 * 24 * 3600),
                    range("outputs.max_bytes_per_job", c.output_max_bytes_per_job, 0, int64_t{1} << 50),
                    range("outputs.quota_bytes_per_user", c.output_quota_bytes_per_user, 0, int64_t{1} << 50),
                    range("outputs.retention_s", c.output_retention_s, 1, int64_t{10} * 365 * 24 * 3600)})
    if (!st) return st;
  if (auto st = auth::validate_security(c.security); !st) return st;
  if (c.synchronous != "FULL" && c.synchronous != "NORMAL")
    return bad("store.synchronous", "must be FULL or NORMAL");
  if (c.lease_timeout_s <= c.heartbeat_interval_s)
    return bad("workers.lease_timeout_s", "must be longer than workers.heartbeat_interval_s");
  if (c.tls_cert_file.empty() != c.tls_key_file.empty())
    return c.tls_cert_file.empty() ? bad("tls.cert_file", "is required with tls.key_file")
                                   : bad("tls.key_file", "is required with tls.cert_file");
  return {};
}

}  // namespace jobctl::daemon
