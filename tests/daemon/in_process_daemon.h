// A whole jobctld in the test's process: temporary SQLite store, service, route table, HTTP
// server on a free loopback port (job logs, outputs, checkpoints and registry logins served as
// jobctld serves them), and the housekeeping ticker. For integration tests of the
// daemon, the worker and the CLI.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "base/clock.h"
#include "daemon/auth/credential_seal.h"
#include "daemon/auth/registry_credentials.h"
#include "daemon/http/api_routes.h"
#include "daemon/http/auth_setup.h"
#include "daemon/http/checkpoint_routes.h"
#include "daemon/http/output_routes.h"
#include "daemon/http/progress_routes.h"
#include "daemon/http/registry_credential_routes.h"
#include "net/server.h"
#include "daemon/jobs/checkpoint_service.h"
#include "daemon/jobs/job_matcher.h"
#include "daemon/jobs/job_service.h"
#include "daemon/jobs/output_service.h"
#include "daemon/store/blob_store.h"
#include "base/ticker.h"
#include "daemon/store/store.h"
#include "tests/support/temp_dir.h"

namespace jobctl::daemon::testing {

// A whole daemon in this process: store, service, routes, server, ticker.
class Daemon {
 public:
  explicit Daemon(net::ServerOptions so = {}, jobs::ServiceOptions svc_options = {}) {
    store::StoreOptions o;
    o.path = dir_.file("jobctl.db");
    auto s = store::Store::open(o, clock_);
    EXPECT_TRUE(s);
    db_ = std::move(*s);
    // Users' registry logins, sealed under a key file in the data directory; a lease of an image
    // job carries its owner's login, as jobctld's do.
    seal_ = std::make_unique<auth::CredentialSeal>(dir_.file("registry-credentials.key"));
    registry_credentials_ = std::make_unique<auth::RegistryCredentials>(*db_, clock_, *seal_);
    svc_ = std::make_unique<jobs::JobService>(*db_, clock_, std::make_unique<jobs::FifoMatcher>(), svc_options,
                                              jobs::ServiceDependencies{.lease_credentials = registry_credentials_.get()});
    EXPECT_TRUE(svc_->start());
    // The jobs' logs as jobctld keeps them (a file per job), with their routes.
    auto logs = store::JobLogStore::open(dir_.path() / "logs");
    EXPECT_TRUE(logs);
    logs_ = std::move(*logs);
    http::ApiInfo info;
    info.on_log = http::log_writer(*logs_, clock_);
    router_ = http::make_api_router(*svc_, std::move(info));
    http::add_log_routes(router_, *svc_, *logs_, downloads_);
    // Job outputs (JOBCTL_OUTPUT_DIR), as jobctld stores and serves them: a worker restores a job's
    // earlier outputs before it starts the program and uploads them after it.
    output_blobs_ = std::make_unique<store::BlobStore>((dir_.path() / "outputs").string());
    outputs_ = std::make_unique<jobs::OutputService>(*db_, *output_blobs_, clock_,
                                                     jobs::OutputOptions{});
    EXPECT_TRUE(outputs_->reconcile());
    http::add_output_routes(router_, *outputs_, downloads_);
    // Checkpoints, as jobctld checks, stores and fences them (an upload for a lease that ended is
    // refused).
    checkpoint_blobs_ = std::make_unique<store::BlobStore>((dir_.path() / "checkpoints").string());
    checkpoints_ = std::make_unique<jobs::CheckpointService>(*db_, *checkpoint_blobs_, clock_, jobs::CheckpointOptions{});
    EXPECT_TRUE(checkpoints_->reconcile());
    http::add_checkpoint_routes(router_, *checkpoints_, downloads_);
    http::add_registry_credential_routes(router_, *registry_credentials_);
    // The request gate, auth off: the worker protocol still needs each worker's own secret.
    auto installed = http::install_hardening(router_, *svc_, *db_, clock_, auth::SecurityOptions{});
    EXPECT_TRUE(installed) << (installed ? "" : installed.error().message);
    if (installed) hardening_ = std::move(*installed);
    so.host = "127.0.0.1";
    so.port = 0;
    // Uploads (a job's output files) stream to files: the outputs' incoming folder, as jobctld's
    // upload folder is its blob stores' (reconcile() prepared it).
    if (so.upload_dir.empty()) so.upload_dir = outputs_->incoming_dir();
    if (so.max_upload_bytes == 0) so.max_upload_bytes = size_t{1} << 30;
    server_ = std::make_unique<net::HttpServer>(so, router_);
    auto port = server_->start();
    EXPECT_TRUE(port) << (port ? "" : port.error().message);
    port_ = *port;
    ticker_ = std::make_unique<jobctl::Ticker>(std::chrono::milliseconds(20), [this] { svc_->tick(); });
  }
  ~Daemon() { shutdown(); }

  void shutdown() {
    if (!server_) return;
    server_->begin_shutdown();
    svc_->shutdown();
    server_->stop();
    ticker_->stop();
    db_->close();
    server_.reset();
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  uint16_t port() const { return port_; }
  std::string dump() { return *db_->dump(); }
  jobs::JobService& svc() { return *svc_; }
  net::HttpServer& server() { return *server_; }

 private:
  jobctl::testing::TempDir dir_;
  SystemClock clock_;
  std::unique_ptr<store::Store> db_;
  std::unique_ptr<auth::CredentialSeal> seal_;
  std::unique_ptr<auth::RegistryCredentials> registry_credentials_;
  std::unique_ptr<jobs::JobService> svc_;
  std::unique_ptr<store::JobLogStore> logs_;
  std::unique_ptr<store::BlobStore> output_blobs_;
  std::unique_ptr<jobs::OutputService> outputs_;
  std::unique_ptr<store::BlobStore> checkpoint_blobs_;
  std::unique_ptr<jobs::CheckpointService> checkpoints_;
  http::DownloadSlots downloads_{4};
  net::Router router_;
  std::unique_ptr<http::Hardening> hardening_;
  std::unique_ptr<net::HttpServer> server_;
  std::unique_ptr<jobctl::Ticker> ticker_;
  uint16_t port_ = 0;
};

}  // namespace jobctl::daemon::testing
