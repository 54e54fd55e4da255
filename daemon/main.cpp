// jobctld: wires the store, the service, the route table and the HTTP server together, then
// waits for SIGTERM or SIGINT and shuts down in order (docs/configuration.md, "Shutdown").
#include <pthread.h>
#include <signal.h>

#include <filesystem>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "daemon/config.h"
#include "daemon/http/api_routes.h"
#include "daemon/http/server.h"
#include "daemon/service/job_matcher.h"
#include "daemon/service/job_service.h"
#include "daemon/service/ticker.h"
#include "daemon/store/store.h"

namespace {

int fail(const jobctl::Error& e) {
  std::cerr << "jobctld: " << e.message;
  if (!e.field.empty()) std::cerr << " (" << e.field << ")";
  std::cerr << "\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace jobctl;
  using namespace jobctl::daemon;

  CLI::App app{"jobctld: the jobctl daemon (REST API, SQLite store, worker leases)"};
  std::string listen, data_dir, config_file, synchronous;
  std::optional<int> io_threads, handler_threads, read_timeout_s, shutdown_grace_s,
      heartbeat_interval_s, lease_timeout_s;
  std::optional<int64_t> max_body_bytes;
  app.add_option("--listen", listen, "HOST:PORT to listen on (port 0: any free port)");
  app.add_option("--data-dir", data_dir, "folder for the SQLite database (created if absent)");
  app.add_option("--config", config_file, "JSON configuration file (flags override it)");
  app.add_option("--io-threads", io_threads, "threads running network I/O");
  app.add_option("--handler-threads", handler_threads, "threads running request handlers");
  app.add_option("--max-body-bytes", max_body_bytes, "largest request body accepted");
  app.add_option("--read-timeout-s", read_timeout_s, "seconds a read may take before the connection closes");
  app.add_option("--shutdown-grace-s", shutdown_grace_s, "seconds in-flight requests get at shutdown");
  app.add_option("--heartbeat-interval-s", heartbeat_interval_s, "heartbeat period told to workers");
  app.add_option("--lease-timeout-s", lease_timeout_s, "seconds without heartbeat before a lease expires");
  app.add_option("--synchronous", synchronous, "SQLite synchronous mode: FULL or NORMAL");
  CLI11_PARSE(app, argc, argv);

  DaemonConfig cfg;
  if (!config_file.empty())
    if (auto st = apply_config_file(config_file, cfg); !st) return fail(st.error());
  if (!listen.empty())
    if (auto st = apply_listen(listen, cfg); !st) return fail(st.error());
  if (!data_dir.empty()) cfg.data_dir = data_dir;
  if (io_threads) cfg.io_threads = *io_threads;
  if (handler_threads) cfg.handler_threads = *handler_threads;
  if (max_body_bytes) cfg.max_body_bytes = *max_body_bytes;
  if (read_timeout_s) cfg.read_timeout_s = *read_timeout_s;
  if (shutdown_grace_s) cfg.shutdown_grace_s = *shutdown_grace_s;
  if (heartbeat_interval_s) cfg.heartbeat_interval_s = *heartbeat_interval_s;
  if (lease_timeout_s) cfg.lease_timeout_s = *lease_timeout_s;
  if (!synchronous.empty()) cfg.synchronous = synchronous;
  if (auto st = validate(cfg); !st) return fail(st.error());

  // Signals are taken by sigwait below: block them before any thread starts so none of the
  // threads gets them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::error_code ec;
  std::filesystem::create_directories(cfg.data_dir, ec);
  if (ec) return fail(make_error("io", "cannot create data directory " + cfg.data_dir + ": " + ec.message(), "data_dir"));
  const std::string db_path = (std::filesystem::path(cfg.data_dir) / "jobctl.db").string();

  SystemClock clock;
  store::StoreOptions so;
  so.path = db_path;
  so.synchronous = cfg.synchronous;
  so.max_batch = cfg.write_batch_max;
  so.max_readers = cfg.handler_threads;
  auto opened = store::Store::open(so, clock);
  if (!opened) return fail(opened.error());
  store::Store& db = **opened;

  service::ServiceOptions svc_opts;
  svc_opts.heartbeat_interval_s = cfg.heartbeat_interval_s;
  svc_opts.lease_timeout_s = cfg.lease_timeout_s;
  svc_opts.max_lease_wait_s = cfg.max_lease_wait_s;
  svc_opts.max_list_limit = cfg.max_list_limit;
  svc_opts.max_recoveries = cfg.max_recoveries;
  service::JobService svc(db, clock, std::make_unique<service::FifoMatcher>(), svc_opts);
  if (auto st = svc.start(); !st) return fail(st.error());

  http::Router router = http::make_api_router(svc);
  http::ServerOptions ho;
  ho.host = cfg.host;
  ho.port = static_cast<uint16_t>(cfg.port);
  ho.io_threads = cfg.io_threads;
  ho.handler_threads = cfg.handler_threads;
  ho.max_body_bytes = static_cast<size_t>(cfg.max_body_bytes);
  ho.max_header_bytes = static_cast<size_t>(cfg.max_header_bytes);
  ho.read_timeout_ms = cfg.read_timeout_s * 1000;
  ho.shutdown_grace_ms = cfg.shutdown_grace_s * 1000;
  http::HttpServer server(ho, router);
  auto port = server.start();
  if (!port) return fail(port.error());

  service::Ticker ticker(std::chrono::milliseconds(cfg.tick_ms), [&svc] { svc.tick(); });

  // The line scripts and tests wait for (docs/configuration.md, "Start-up line").
  std::cout << nlohmann::json{{"event", "listening"},
                              {"host", cfg.host},
                              {"port", *port},
                              {"url", "http://" + (cfg.host.find(':') != std::string::npos ? "[" + cfg.host + "]" : cfg.host) +
                                          ":" + std::to_string(*port)},
                              {"database", db_path}}
                   .dump()
            << std::endl;
  std::cerr << "jobctld: listening on " << cfg.host << ":" << *port << ", database " << db_path << "\n";

  int sig = 0;
  sigwait(&signals, &sig);
  std::cerr << "jobctld: " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << ", shutting down\n";

  server.begin_shutdown();  // stop accepting; idle connections close
  svc.shutdown();           // waiting long-polls are answered "no job" now
  server.stop();            // in-flight requests finish (up to the grace period), threads join
  ticker.stop();
  db.close();               // every queued change committed
  std::cerr << "jobctld: stopped\n";
  return 0;
}
