#include "daemon/config.h"
#include "net/listen_address.h"

#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/temp_dir.h"

namespace jobctl::daemon {
namespace {

TEST(Config, ListenForms) {
  DaemonConfig c;
  ASSERT_TRUE(apply_listen("0.0.0.0:9000", c));
  EXPECT_EQ(c.host, "0.0.0.0");
  EXPECT_EQ(c.port, 9000);
  ASSERT_TRUE(apply_listen(":0", c));
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_EQ(c.port, 0);
  ASSERT_TRUE(apply_listen("[::1]:8081", c));
  EXPECT_EQ(c.host, "::1");
  EXPECT_EQ(c.port, 8081);
  ASSERT_TRUE(apply_listen("7000", c));
  EXPECT_EQ(c.port, 7000);
  for (const char* bad : {"host:", "host:70000", "host:x", "[::1", "a:-1"}) {
    auto st = apply_listen(bad, c);
    ASSERT_FALSE(st) << bad;
    EXPECT_EQ(st.error().field, "listen");
  }
}

TEST(Config, ListenUrl) {
  EXPECT_EQ(net::listen_url(false, "127.0.0.1", 8080), "http://127.0.0.1:8080");
  EXPECT_EQ(net::listen_url(true, "::1", 8443), "https://[::1]:8443");
}

TEST(Config, FileValuesApplyAndUnknownKeysAreNamed) {
  DaemonConfig c;
  ASSERT_TRUE(apply_config_json(R"({
    // comments are allowed
    "listen": "127.0.0.1:0", "data_dir": "/tmp/x",
    "http": {"io_threads": 3, "max_body_bytes": 2048},
    "workers": {"heartbeat_interval_s": 1, "lease_timeout_s": 5},
    "store": {"synchronous": "NORMAL"}})", c));
  EXPECT_EQ(c.io_threads, 3);
  EXPECT_EQ(c.max_body_bytes, 2048);
  EXPECT_EQ(c.lease_timeout_s, 5);
  EXPECT_EQ(c.synchronous, "NORMAL");
  EXPECT_EQ(c.data_dir, "/tmp/x");
  EXPECT_TRUE(validate(c));

  for (const char* hosts : {R"({"http": {"allowed_hosts": "jobctld"}})", R"({"http": {"allowed_hosts": [""]}})",
                            R"({"http": {"allowed_hosts": [1]}})"}) {
    auto bad_hosts = apply_config_json(hosts, c);
    ASSERT_FALSE(bad_hosts) << hosts;
    EXPECT_EQ(bad_hosts.error().field, "http.allowed_hosts") << hosts;
  }
  auto unknown = apply_config_json(R"({"http": {"io_thread": 3}})", c);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().field, "http.io_thread");
  auto wrong = apply_config_json(R"({"workers": {"lease_timeout_s": "60"}})", c);
  ASSERT_FALSE(wrong);
  EXPECT_EQ(wrong.error().field, "workers.lease_timeout_s");
  auto malformed = apply_config_json("{", c);
  ASSERT_FALSE(malformed);
  EXPECT_EQ(malformed.error().code, ErrorCode::malformed_json);
}

TEST(Config, CloudSectionConfiguresTheProvisioner) {
  DaemonConfig c;
  ASSERT_TRUE(apply_config_json(R"({"cloud": {"provider": "sim", "tag": "prod", "idle_timeout_s": 30,
    "sim": {"url": "http://127.0.0.1:8090"}}})", c));
  EXPECT_EQ(c.cloud.provider, "sim");
  EXPECT_EQ(c.cloud.tag, "prod");
  EXPECT_EQ(c.cloud.idle_timeout_s, 30);
  EXPECT_EQ(c.cloud.sim.url, "http://127.0.0.1:8090");
  EXPECT_EQ(c.placement.cloud_provider, "sim");  // placement may now choose cloud offers

  struct Bad { const char* doc; const char* field; };
  for (Bad b : {Bad{R"({"cloud": {"provider": "aws"}})", "cloud.provider"},
                Bad{R"({"cloud": {"provider": "sim", "poll_s": 0}})", "cloud.poll_s"},
                Bad{R"({"cloud": {"provider": "sim", "sim": {"url": "ftp://x"}}})", "cloud.sim.url"},
                Bad{R"({"cloud": {"provider": "sim", "sim": {"adress": "x"}}})", "cloud.sim.adress"},
                Bad{R"({"cloud": {"tag": 5}})", "cloud.tag"},
                Bad{R"({"cloud": {"provider": "exec"}})", "cloud.exec.launch"},
                Bad{R"({"cloud": {"provider": "exec", "exec": {"launch": "l {instance_type}",
                       "terminate": "t {instance}", "describe": "d {tag}"}}})", "cloud.exec.terminate"}}) {
    DaemonConfig d;
    auto st = apply_config_json(b.doc, d);
    ASSERT_FALSE(st) << b.doc;
    EXPECT_EQ(st.error().field, b.field) << b.doc << ": " << st.error().message;
  }
  DaemonConfig e;
  ASSERT_TRUE(apply_config_json(R"({"cloud": {"provider": "exec", "exec": {
    "launch": "launch.sh {instance_type} {spot} {worker_command}", "terminate": "stop.sh {instance_id}",
    "describe": "list.sh {tag}"}}})", e));
  EXPECT_EQ(e.cloud.exec.terminate, "stop.sh {instance_id}");
}

// The "slurm" section (docs/slurm.md, "The configuration"): read whole, and every bad field is
// refused by name, the batch job's own options included (checked by slurm/batch_job.h's rules).
TEST(Config, SlurmSectionIsReadAndEveryBadFieldIsNamed) {
  DaemonConfig none;
  ASSERT_TRUE(apply_config_json(R"({})", none));
  EXPECT_FALSE(none.slurm.enabled);
  EXPECT_FALSE(none.placement.slurm_launchable);  // partitions quoted, never chosen

  DaemonConfig c;
  ASSERT_TRUE(apply_config_json(R"({"slurm": {"conf_file": "/etc/slurm/slurm.conf", "timeout_s": 20,
    "tag": "lab", "server_url": "http://10.1.0.5:8080",
    "worker_command": "/shared/jobctl-worker --server {server} --work-dir /scratch",
    "partitions": [{"name": "a100", "gpu_model": "A100"}, {"name": "v100", "gpu_model": "V100", "gpus_per_node": 4, "tasks_per_node": 2}],
    "account": "ml", "qos": "normal", "sbatch_options": ["--constraint=ib"], "time_margin": 0.25,
    "signal_lead_s": 90, "startup_s": 30, "poll_s": 10}})", c));
  EXPECT_TRUE(c.slurm.enabled);
  EXPECT_TRUE(c.placement.slurm_launchable);  // jobctld submits the batch jobs: placement may choose them
  EXPECT_EQ(c.slurm.conf_file, "/etc/slurm/slurm.conf");
  EXPECT_EQ(c.slurm.timeout_s, 20);
  EXPECT_EQ(c.slurm.tag, "lab");
  ASSERT_EQ(c.slurm.partitions.size(), 2u);
  EXPECT_EQ(c.slurm.partitions[1].name, "v100");
  EXPECT_EQ(c.slurm.partitions[1].gpu_model, "V100");
  EXPECT_EQ(c.slurm.partitions[1].gpus_per_node, 4);
  EXPECT_EQ(c.slurm.partitions[0].tasks_per_node, 1);
  EXPECT_EQ(c.slurm.partitions[1].tasks_per_node, 2);
  EXPECT_EQ(c.slurm.sbatch_options, std::vector<std::string>{"--constraint=ib"});
  EXPECT_DOUBLE_EQ(c.slurm.time_margin, 0.25);
  EXPECT_EQ(c.slurm.signal_lead_s, 90);
  EXPECT_EQ(c.slurm.poll_s, 10);
  EXPECT_EQ(c.slurm.commands().conf_file, "/etc/slurm/slurm.conf");
  EXPECT_EQ(c.slurm.commands().timeout_s, 20);

  struct Bad { const char* doc; const char* field; };
  for (Bad b : {Bad{R"({"slurm": {}})", "slurm.partitions"},
                Bad{R"({"slurm": {"partitions": []}})", "slurm.partitions"},
                Bad{R"({"slurm": {"partitions": {"name": "gpu"}}})", "slurm.partitions"},
                Bad{R"({"slurm": {"partitions": [{"name": "", "gpu_model": "A100"}]}})", "slurm.partitions[0].name"},
                Bad{R"({"slurm": {"partitions": [{"name": "gpu"}]}})", "slurm.partitions[0].gpu_model"},
                Bad{R"({"slurm": {"partitions": [{"name": "gpu", "gpu_model": "Z9000"}]}})", "slurm.partitions[0].gpu_model"},
                Bad{R"({"slurm": {"partitions": [{"name": "gpu", "gpu_model": "A100", "gpus": 2}]}})", "slurm.partitions[0].gpus"},
                Bad{R"({"slurm": {"partitions": [{"name": "gpu", "gpu_model": "A100", "gpus_per_node": 65}]}})",
                    "slurm.partitions[0].gpus_per_node"},
                Bad{R"({"slurm": {"partitions": [{"name": "gpu", "gpu_model": "A100", "tasks_per_node": 0}]}})",
                    "slurm.partitions[0].tasks_per_node"},
                Bad{R"({"slurm": {"partitions": [{"name": "gpu", "gpu_model": "A100"}, {"name": "gpu", "gpu_model": "V100"}]}})",
                    "slurm.partitions[1].name"},
                Bad{R"({"slurm": {"partiton": []}})", "slurm.partiton"},
                Bad{R"({"slurm": {"timeout_s": 0, "partitions": [{"name": "gpu", "gpu_model": "A100"}]}})", "slurm.timeout_s"},
                Bad{R"({"slurm": {"poll_s": "5", "partitions": [{"name": "gpu", "gpu_model": "A100"}]}})", "slurm.poll_s"},
                Bad{R"({"slurm": {"tag": "a b", "partitions": [{"name": "gpu", "gpu_model": "A100"}]}})", "slurm.tag"},
                Bad{R"({"slurm": {"server_url": "10.0.0.1:8080", "partitions": [{"name": "gpu", "gpu_model": "A100"}]}})",
                    "slurm.server_url"},
                Bad{R"({"slurm": {"worker_command": "w --server {url}", "partitions": [{"name": "gpu", "gpu_model": "A100"}]}})",
                    "slurm.worker_command"},
                Bad{R"({"slurm": {"time_margin": -1, "partitions": [{"name": "gpu", "gpu_model": "A100"}]}})",
                    "slurm.time_margin"},
                Bad{R"({"slurm": {"signal_lead_s": 70000, "partitions": [{"name": "gpu", "gpu_model": "A100"}]}})",
                    "slurm.signal_lead_s"},
                Bad{R"({"slurm": {"sbatch_options": ["constraint=ib"], "partitions": [{"name": "gpu", "gpu_model": "A100"}]}})",
                    "slurm.sbatch_options"},
                Bad{R"({"slurm": {"sbatch_options": [5], "partitions": [{"name": "gpu", "gpu_model": "A100"}]}})",
                    "slurm.sbatch_options[0]"},
                Bad{R"({"slurm": {"account": "a\nb", "partitions": [{"name": "gpu", "gpu_model": "A100"}]}})",
                    "slurm.account"}}) {
    DaemonConfig d;
    auto st = apply_config_json(b.doc, d);
    ASSERT_FALSE(st) << b.doc;
    EXPECT_EQ(st.error().field, b.field) << b.doc << ": " << st.error().message;
    EXPECT_EQ(st.error().code, ErrorCode::invalid_argument) << b.doc;
  }
}

// What a checkpoint and a restart cost besides their bytes: the spot model's C and R and the price
// of a move (docs/cost-model.md, "Moves for savings").
TEST(Config, PlacementRestartFigures) {
  DaemonConfig c;
  c.data_dir = "/tmp";
  ASSERT_TRUE(apply_config_json(R"({"placement": {"warmup_hours": 0, "checkpoint_fixed_seconds": 0.5}})", c));
  EXPECT_EQ(c.placement.warmup_hours, 0);
  EXPECT_EQ(c.placement.checkpoint_fixed_seconds, 0.5);
  EXPECT_TRUE(validate(c));
  const auto pc = placement::placement_config(c.placement);
  EXPECT_EQ(pc.warmup_hours, 0);
  EXPECT_EQ(pc.checkpoint_fixed_seconds, 0.5);
  struct Bad { const char* doc; const char* field; };
  for (Bad b : {Bad{R"({"placement": {"warmup_hours": -1}})", "placement.warmup_hours"},
                Bad{R"({"placement": {"checkpoint_fixed_seconds": 4000}})", "placement.checkpoint_fixed_seconds"},
                Bad{R"({"placement": {"warmup_hours": "1"}})", "placement.warmup_hours"}}) {
    DaemonConfig d;
    d.data_dir = "/tmp";
    auto st = apply_config_json(b.doc, d);
    if (st) st = validate(d);
    ASSERT_FALSE(st) << b.doc;
    EXPECT_EQ(st.error().field, b.field) << b.doc << ": " << st.error().message;
  }
}

// placement.max_reservations: 16 by default, as many as asked within 1-10000, a bad value named.
TEST(Config, PlacementMaxReservations) {
  DaemonConfig c;
  c.data_dir = "/tmp";
  EXPECT_EQ(c.placement.max_reservations, 16);
  ASSERT_TRUE(apply_config_json(R"({"placement": {"max_reservations": 3}})", c));
  EXPECT_EQ(c.placement.max_reservations, 3);
  EXPECT_TRUE(validate(c));
  for (const char* doc : {R"({"placement": {"max_reservations": 0}})", R"({"placement": {"max_reservations": "4"}})",
                          R"({"placement": {"max_reservations": 10001}})"}) {
    DaemonConfig d;
    d.data_dir = "/tmp";
    auto st = apply_config_json(doc, d);
    if (st) st = validate(d);
    ASSERT_FALSE(st) << doc;
    EXPECT_EQ(st.error().field, "placement.max_reservations") << doc << ": " << st.error().message;
  }
}

// placement.fair_share: unset enabled (on with auth, main.cpp), the defaults of
// docs/configuration.md, shares and weights as given, a bad value named.
TEST(Config, PlacementFairShare) {
  DaemonConfig c;
  c.data_dir = "/tmp";
  EXPECT_FALSE(c.placement.fair_share.enabled.has_value());
  EXPECT_EQ(c.placement.fair_share.half_life_days, 7);
  EXPECT_EQ(c.placement.fair_share.weights.priority, 10000);
  EXPECT_EQ(c.placement.fair_share.weights.fair_share, 1000);
  EXPECT_EQ(c.placement.fair_share.recompute_s, 10);
  ASSERT_TRUE(apply_config_json(R"({"placement": {"fair_share": {"enabled": false, "half_life_days": 2,
      "shares": {"alice": 3}, "default_share": 0.5, "weights": {"age": 5, "size": 7}, "max_age_days": 1}}})", c));
  EXPECT_EQ(c.placement.fair_share.enabled, std::optional<bool>(false));
  EXPECT_EQ(c.placement.fair_share.half_life_days, 2);
  EXPECT_EQ(c.placement.fair_share.shares.at("alice"), 3);
  EXPECT_EQ(c.placement.fair_share.default_share, 0.5);
  EXPECT_EQ(c.placement.fair_share.weights.age, 5);
  EXPECT_EQ(c.placement.fair_share.weights.size, 7);
  EXPECT_EQ(c.placement.fair_share.weights.priority, 10000);  // untouched
  EXPECT_EQ(c.placement.fair_share.weights.max_age_ms, 86'400'000);
  EXPECT_TRUE(validate(c));
  struct Bad {
    const char* doc;
    const char* field;
  };
  for (const Bad& b : {Bad{R"({"placement": {"fair_share": {"half_life_days": 0}}})", "placement.fair_share.half_life_days"},
                       Bad{R"({"placement": {"fair_share": {"shares": {"bob": -1}}}})", "placement.fair_share.shares.bob"},
                       Bad{R"({"placement": {"fair_share": {"weights": {"age": -1}}}})", "placement.fair_share.weights.age"},
                       Bad{R"({"placement": {"fair_share": {"weights": {"speed": 1}}}})", "placement.fair_share.weights.speed"},
                       Bad{R"({"placement": {"fair_share": {"recompute_s": 0}}})", "placement.fair_share.recompute_s"},
                       Bad{R"({"placement": {"fair_share": 3}})", "placement.fair_share"}}) {
    DaemonConfig d;
    d.data_dir = "/tmp";
    auto st = apply_config_json(b.doc, d);
    if (st) st = validate(d);
    ASSERT_FALSE(st) << b.doc;
    EXPECT_EQ(st.error().field, b.field) << b.doc << ": " << st.error().message;
  }
}

TEST(Config, ConnectionUploadAndProgressLimits) {
  DaemonConfig c;
  c.data_dir = "/tmp";
  ASSERT_TRUE(apply_config_json(R"({
    "http": {"idle_timeout_s": 5, "max_connections": 300, "max_connections_per_client": 20,
             "header_timeout_s": 2, "reserved_connections": 30, "allowed_hosts": ["jobctld", "gpu.example:443"]},
    "workers": {"max_progress_bytes": 4096},
    "checkpoints": {"max_concurrent_uploads": 2}})", c));
  EXPECT_EQ(c.idle_timeout_s, 5);
  EXPECT_EQ(c.header_timeout_s, 2);
  EXPECT_EQ(c.reserved_connections, 30);
  EXPECT_EQ(c.allowed_hosts, (std::vector<std::string>{"jobctld", "gpu.example:443"}));
  EXPECT_EQ(c.max_connections, 300);
  EXPECT_EQ(c.max_connections_per_client, 20);
  EXPECT_EQ(c.max_progress_bytes, 4096);
  EXPECT_EQ(c.checkpoint_max_concurrent_uploads, 2);
  EXPECT_TRUE(validate(c));
  struct Bad { const char* doc; const char* field; };
  for (Bad b : {Bad{R"({"http": {"idle_timeout_s": 0}})", "http.idle_timeout_s"},
                Bad{R"({"http": {"max_connections": 0}})", "http.max_connections"},
                Bad{R"({"http": {"max_connections_per_client": -1}})", "http.max_connections_per_client"},
                Bad{R"({"http": {"header_timeout_s": 0}})", "http.header_timeout_s"},
                Bad{R"({"http": {"max_connections": 100, "reserved_connections": 100}})", "http.reserved_connections"},
                Bad{R"({"http": {"reserved_connections": -2}})", "http.reserved_connections"},
                Bad{R"({"workers": {"max_progress_bytes": 10}})", "workers.max_progress_bytes"},
                Bad{R"({"checkpoints": {"max_concurrent_uploads": 0}})", "checkpoints.max_concurrent_uploads"}}) {
    DaemonConfig d;
    d.data_dir = "/tmp";
    ASSERT_TRUE(apply_config_json(b.doc, d)) << b.doc;
    auto st = validate(d);
    ASSERT_FALSE(st) << b.doc;
    EXPECT_EQ(st.error().field, b.field) << b.doc;
  }
}

// The "logs" section (docs/log-format.md): read, and a bad value or key named.
TEST(Config, LogsSectionIsReadAndBadValuesNamed) {
  DaemonConfig c;
  c.data_dir = "/tmp";
  ASSERT_TRUE(apply_config_json(R"({"logs": {"max_bytes_per_job": 1048576, "retention_s": 86400}})", c));
  EXPECT_EQ(c.logs_max_bytes_per_job, 1048576);
  EXPECT_EQ(c.logs_retention_s, 86400);
  EXPECT_TRUE(validate(c));
  auto unknown = apply_config_json(R"({"logs": {"max_bytes": 1}})", c);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().field, "logs.max_bytes");
  struct Bad { const char* doc; const char* field; };
  for (Bad b : {Bad{R"({"logs": {"max_bytes_per_job": 1000}})", "logs.max_bytes_per_job"},
                Bad{R"({"logs": {"retention_s": 0}})", "logs.retention_s"}}) {
    DaemonConfig d;
    d.data_dir = "/tmp";
    ASSERT_TRUE(apply_config_json(b.doc, d)) << b.doc;
    auto st = validate(d);
    ASSERT_FALSE(st) << b.doc;
    EXPECT_EQ(st.error().field, b.field) << b.doc;
  }
}

TEST(Config, ValidationNamesTheField) {
  DaemonConfig c;
  auto st = validate(c);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().field, "data_dir");
  c.data_dir = "/tmp";
  c.io_threads = 0;
  st = validate(c);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().field, "http.io_threads");
  c.io_threads = 2;
  c.synchronous = "OFF";
  st = validate(c);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().field, "store.synchronous");
  c.synchronous = "FULL";
  c.heartbeat_interval_s = 10;
  c.lease_timeout_s = 10;
  st = validate(c);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().field, "workers.lease_timeout_s");
}

TEST(Config, TlsTakesBothFilesOrNeither) {
  DaemonConfig c;
  c.data_dir = "/tmp";
  ASSERT_TRUE(apply_config_json(R"({"tls": {"cert_file": "/etc/jobctl/cert.pem", "key_file": "/etc/jobctl/key.pem"}})", c));
  EXPECT_EQ(c.tls_cert_file, "/etc/jobctl/cert.pem");
  EXPECT_EQ(c.tls_key_file, "/etc/jobctl/key.pem");
  EXPECT_TRUE(validate(c));
  c.tls_key_file.clear();
  auto st = validate(c);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().field, "tls.key_file");
  c.tls_cert_file.clear();
  c.tls_key_file = "/etc/jobctl/key.pem";
  st = validate(c);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().field, "tls.cert_file");
  DaemonConfig d;
  st = apply_config_json(R"({"tls": {"cert": "x"}})", d);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().field, "tls.cert");
  st = apply_config_json(R"({"tls": {"cert_file": 3}})", d);
  ASSERT_FALSE(st);
  EXPECT_EQ(st.error().field, "tls.cert_file");
}

TEST(Config, FileErrorsNameThePath) {
  jobctl::testing::TempDir dir;
  DaemonConfig c;
  auto missing = apply_config_file(dir.file("none.json"), c);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code, ErrorCode::not_found);
  std::ofstream(dir.file("bad.json")) << R"({"store": {"tick": 1}})";
  auto bad = apply_config_file(dir.file("bad.json"), c);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("bad.json"), std::string::npos);
  EXPECT_EQ(bad.error().field, "store.tick");
}

}  // namespace
}  // namespace jobctl::daemon
