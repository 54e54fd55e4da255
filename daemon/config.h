// jobctld's configuration: built-in defaults, then a JSON file (--config), then command-line
// flags; each later source wins. docs/configuration.md documents every key and flag.
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "daemon/auth/auth_options.h"
#include "daemon/provisioning/cloud_config.h"
#include "daemon/notify/webhook_options.h"
#include "daemon/placement/placement_config.h"
#include "daemon/slurm/slurm_config.h"

namespace jobctl::daemon {

struct DaemonConfig {
  // listen
  std::string host = "127.0.0.1";
  int port = 8080;                      // 0: any free port, printed at start
  std::string data_dir;                 // required: holds jobctl.db
  // http
  int io_threads = 2;
  int handler_threads = 8;
  int64_t max_body_bytes = 1 << 20;
  int64_t max_header_bytes = 8 << 10;
  int header_timeout_s = 5;             // a new connection's first request headers
  int read_timeout_s = 30;
  int idle_timeout_s = 15;              // a kept-alive connection waiting for its next request
  int max_connections = 10000;          // open at once (503 and closed past it)
  int max_connections_per_client = 256; // open at once from one client network (/24, /64)
  int reserved_connections = -1;        // of max_connections, kept for workers and tokens; -1: a tenth
  std::vector<std::string> allowed_hosts;  // Host names clients may use besides the listen address
  int shutdown_grace_s = 10;
  // workers
  int heartbeat_interval_s = 2;
  int lease_timeout_s = 60;
  int max_lease_wait_s = 60;
  int max_recoveries = 10;
  int gang_assembly_s = 60;
  int64_t max_progress_bytes = 16 << 10;  // largest heartbeat `progress` (JSON text), 413 past it
  // store
  std::string synchronous = "FULL";     // FULL or NORMAL
  int write_batch_max = 512;
  int max_list_limit = 1000;
  int tick_ms = 200;                    // housekeeping period (long-poll deadlines)
  // auth, limits, metrics (daemon/auth/auth_options.h, docs/security.md)
  auth::SecurityOptions security;
  // cost and placement (daemon/placement/placement_config.h, docs/configuration.md)
  placement::PlacementSettings placement;
  // clouds and the provisioner (daemon/provisioning/cloud_config.h, docs/clouds.md)
  provisioning::CloudSettings cloud;
  // a Slurm cluster (daemon/slurm/slurm_config.h, docs/slurm.md)
  slurm::SlurmSettings slurm;
  // webhooks (daemon/notify/webhook_options.h, docs/notifications.md)
  notify::WebhookOptions webhooks;
  // checkpoints (docs/recovery.md): the blob store under <data_dir>/checkpoints
  int64_t checkpoint_max_bytes = int64_t{1} << 30;  // largest checkpoint upload accepted
  int checkpoint_max_concurrent_uploads = 4;        // uploads received at once (503 past it)
  int checkpoint_max_concurrent_downloads = 8;      // checkpoint and bundle downloads at once (503 past it)
  // code bundles (docs/job-protocol.md): the blob store under <data_dir>/bundles
  int64_t bundle_quota_bytes_per_user = int64_t{4} << 30;  // stored bundles' bytes per user (429 past it)
  int64_t bundle_retention_s = 7 * 24 * 3600;  // an unreferenced bundle is deleted this long after its last use
  // jobs' logs (docs/log-format.md): a file per job under <data_dir>/logs
  int64_t logs_max_bytes_per_job = int64_t{64} << 20;  // past it the file keeps its start and its end
  int64_t logs_retention_s = 14 * 24 * 3600;           // deleted this long after the job ended
  // job outputs (docs/job-protocol.md, "Outputs"): the blob store under <data_dir>/outputs
  int64_t output_max_bytes_per_job = int64_t{1} << 30;      // one job's outputs together (413 past it)
  int64_t output_quota_bytes_per_user = int64_t{10} << 30;  // a user's outputs over all jobs (429 past it)
  int64_t output_retention_s = 7 * 24 * 3600;  // kept this long after the job ends, with its final checkpoint
  // web (the dashboard, docs/dashboard.md)
  std::string web_root;                 // empty: found next to the binary (static_files.h)
  std::string tls_cert_file;            // PEM certificate chain; with tls_key_file: HTTPS
  std::string tls_key_file;             // PEM private key
};

// "HOST:PORT", ":PORT" or "PORT" (host defaults to 127.0.0.1); "[::1]:PORT" for IPv6.
Status apply_listen(std::string_view listen, DaemonConfig& config);

// Applies a JSON configuration document on top of `config`. Unknown keys and wrong types are
// errors naming the key ("http.io_threads").
Status apply_config_json(std::string_view text, DaemonConfig& config);

// Reads and applies a configuration file.
Status apply_config_file(const std::string& path, DaemonConfig& config);

// Checks ranges and required values (data_dir).
Status validate(const DaemonConfig& config);

}  // namespace jobctl::daemon
