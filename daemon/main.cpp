// jobctld: wires the store, the service, the route table and the HTTP server together, then
// waits for SIGTERM or SIGINT and shuts down in order (docs/configuration.md, "Shutdown").

#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/log.h"
#include "base/log_line.h"
#include "base/termination_signals.h"
#include "daemon/config.h"
#include "daemon/auth/credential_seal.h"
#include "daemon/auth/registry_credentials.h"
#include "daemon/data_dir.h"
#include "net/listen_address.h"
#include "daemon/http/auth_gate.h"
#include "daemon/http/auth_setup.h"
#include "daemon/http/daemon_router.h"
#include "daemon/http/progress_routes.h"
#include "daemon/jobs/checkpoint_service.h"
#include "daemon/store/blob_store.h"
#include "daemon/store/database_check.h"
#include "net/server.h"
#include "daemon/http/static_files.h"
#include "daemon/store/progress_history.h"
#include "daemon/store/job_log_store.h"
#include "daemon/jobs/log_retention.h"
#include "daemon/jobs/job_matcher.h"
#include "daemon/ledger/ledger.h"
#include "daemon/placement/owned_gpu_billing.h"
#include "daemon/placement/placement_matcher.h"
#include "daemon/auth/auth_budget_watch.h"
#include "daemon/placement/start_board.h"
#include "daemon/notify/webhook_dispatcher.h"
#include "daemon/notify/webhook_service.h"
#include "daemon/placement/placement_service.h"
#include "daemon/provisioning/provisioner.h"
#include "daemon/slurm/slurm_launcher.h"
#include "daemon/slurm/slurm_partitions.h"
#include "daemon/jobs/job_service.h"
#include "base/thread_priority.h"
#include "base/ticker.h"
#include "daemon/store/store.h"

namespace {

int fail(const jobctl::Error& e) {
  jobctl::LogLine() << "jobctld: " << e.message << (e.field.empty() ? "" : " (" + e.field + ")");
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
  std::vector<std::string> allowed_hosts;
  app.add_option("--listen", listen, "HOST:PORT to listen on (port 0: any free port)");
  app.add_option("--data-dir", data_dir, "folder for the SQLite database (created if absent)");
  app.add_option("--config", config_file, "JSON configuration file (flags override it)");
  app.add_option("--io-threads", io_threads, "threads running network I/O");
  app.add_option("--handler-threads", handler_threads, "threads running request handlers");
  app.add_option("--max-body-bytes", max_body_bytes, "largest request body accepted");
  app.add_option("--read-timeout-s", read_timeout_s, "seconds a read may take before the connection closes");
  app.add_option("--allowed-host", allowed_hosts,
                 "a Host name clients may use besides the listen address (repeatable; http.allowed_hosts)");
  app.add_option("--shutdown-grace-s", shutdown_grace_s, "seconds in-flight requests get at shutdown");
  app.add_option("--heartbeat-interval-s", heartbeat_interval_s, "heartbeat period told to workers");
  app.add_option("--lease-timeout-s", lease_timeout_s, "seconds without heartbeat before a lease expires");
  app.add_option("--synchronous", synchronous, "SQLite synchronous mode: FULL or NORMAL");
  std::string web_root;
  app.add_option("--web-root", web_root, "folder of the dashboard's files (default: web/ next to the binary)");
  std::string tls_cert, tls_key;
  app.add_option("--tls-cert", tls_cert, "PEM certificate chain: serve HTTPS (with --tls-key; tls.cert_file)");
  app.add_option("--tls-key", tls_key, "PEM private key of --tls-cert (tls.key_file)");
  std::string create_token_user, create_token_role = "user";  // bootstrap a token
  bool auth_flag = false;
  app.add_option("--create-token", create_token_user, "create an API token for USER in --data-dir's database, print it and exit");
  app.add_option("--role", create_token_role, "role of --create-token: admin, user or worker")
      ->check(CLI::IsMember({"admin", "user", "worker"}));
  app.add_flag("--auth", auth_flag, "require API tokens (auth.enabled; docs/security.md)");
  bool check_flag = false;
  app.add_flag("--check", check_flag,
               "check --data-dir's database: print every damaged page and row, exit 1 when any (docs/operations.md)");
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
  cfg.allowed_hosts.insert(cfg.allowed_hosts.end(), allowed_hosts.begin(), allowed_hosts.end());
  if (shutdown_grace_s) cfg.shutdown_grace_s = *shutdown_grace_s;
  if (heartbeat_interval_s) cfg.heartbeat_interval_s = *heartbeat_interval_s;
  if (lease_timeout_s) cfg.lease_timeout_s = *lease_timeout_s;
  if (!synchronous.empty()) cfg.synchronous = synchronous;
  if (!web_root.empty()) cfg.web_root = web_root;
  if (!tls_cert.empty()) cfg.tls_cert_file = tls_cert;
  if (!tls_key.empty()) cfg.tls_key_file = tls_key;
  if (auth_flag) cfg.security.auth.enabled = true;
  if (auto st = validate(cfg); !st) return fail(st.error());

  // Signals are taken by sigwait below: block them before any thread starts so none of the
  // threads gets them.
  const sigset_t signals = block_termination_signals();
  // Everything the daemon creates is its user's alone (docs/security.md): the database, the
  // checkpoints, the progress history. A write past a file size limit fails (EFBIG) like a full
  // disk instead of killing the process.
  ::umask(0077);
  ::signal(SIGXFSZ, SIG_IGN);

  // --check reads the file only: it may run beside a running jobctld, or on a copy.
  if (check_flag) {
    const std::string path = (std::filesystem::path(cfg.data_dir) / "jobctl.db").string();
    auto problems = store::check_database(path);
    if (!problems) return fail(problems.error());
    for (const std::string& p : *problems) std::cout << p << "\n";
    if (problems->empty()) {
      std::cout << path << ": ok (every page, and every row of jobs, job_events and workers, read)\n";
      return 0;
    }
    std::cout << problems->size() << " problem(s) in " << path
              << "; restore the newest backup (docs/operations.md, \"Checking and restoring the database\")\n";
    return 1;
  }

  // One daemon per data directory (held until exit); --create-token may run beside it.
  std::unique_ptr<DataDir> data_dir_lock;
  if (create_token_user.empty()) {
    auto locked = DataDir::open(cfg.data_dir);
    if (!locked) return fail(locked.error());
    data_dir_lock = std::move(*locked);
  } else {
    std::error_code ec;
    std::filesystem::create_directories(cfg.data_dir, ec);
    if (ec) return fail(make_error(ErrorCode::io, "cannot create data directory " + cfg.data_dir + ": " + ec.message(), "data_dir"));
  }
  const std::string db_path = (std::filesystem::path(cfg.data_dir) / "jobctl.db").string();

  SystemClock clock;
  store::StoreOptions so;
  so.path = db_path;
  so.synchronous = cfg.synchronous;
  so.max_batch = cfg.write_batch_max;
  so.max_readers = cfg.handler_threads;
  auto opened = store::Store::open(so, clock);
  if (!opened) return fail(store::explain_damaged_database(db_path, opened.error()));
  store::Store& db = **opened;
  if (!create_token_user.empty())
    return http::create_token_command(db, clock, create_token_user, create_token_role, std::cout, std::cerr);

  jobs::ServiceOptions svc_opts;
  svc_opts.heartbeat_interval_s = cfg.heartbeat_interval_s;
  svc_opts.lease_timeout_s = cfg.lease_timeout_s;
  svc_opts.max_lease_wait_s = cfg.max_lease_wait_s;
  svc_opts.max_list_limit = cfg.max_list_limit;
  svc_opts.max_recoveries = cfg.max_recoveries;
  svc_opts.gang_assembly_s = cfg.gang_assembly_s;
  // Cost-based placement: jobs are offered only where placement chose; with
  // "placement": {"enabled": false} any fitting worker takes any queued job (FIFO).
  // The owned machines' start plan (reservations and backfill), published by placement's ticks.
  placement::StartBoard start_board;
  std::unique_ptr<jobs::JobMatcher> matcher;
  if (cfg.placement.enabled) matcher = std::make_unique<placement::PlacementMatcher>(start_board, clock);
  else matcher = std::make_unique<jobs::FifoMatcher>();
  // Failed background passes (placement, lease expiry, checkpoint sweeps) go to stderr: the log.
  StderrLog log("jobctld: ");
  // Owned-GPU time is billed per lease, at the lease's own events (docs/cost-model.md, "The ledger").
  placement::OwnedGpuBilling owned_gpu_billing(cfg.placement);
  // Users' registry logins (docs/security.md, "Registry credentials"): the passwords sealed under
  // a key file beside the database, made at the first login; each lease of a job in an image
  // carries its owner's login to that image's registry.
  auth::CredentialSeal credential_seal((std::filesystem::path(cfg.data_dir) / "registry-credentials.key").string());
  auth::RegistryCredentials registry_credentials(db, clock, credential_seal);
  jobs::JobService svc(db, clock, std::move(matcher), svc_opts,
                       jobs::ServiceDependencies{.log = &log,
                                                 .lease_recorder = &owned_gpu_billing,
                                                 .lease_credentials = &registry_credentials});
  if (auto st = svc.start(); !st) return fail(st.error());
  cfg.placement.catalog_dir = (std::filesystem::path(cfg.data_dir) / "catalog").string();
  // Fair share between users: on by default exactly when auth is on (users exist).
  cfg.placement.fair_share.enabled = cfg.placement.fair_share.enabled.value_or(cfg.security.auth.enabled);
  placement::PlacementService placement(db, clock, svc, cfg.placement);
  placement.set_log(&log);
  placement.set_start_board(start_board);
  // A Slurm cluster (docs/slurm.md): its configured partitions are placement candidates, read
  // from the cluster on a thread of their own so a slow controller never holds a pass.
  std::optional<jobctl::daemon::slurm::SlurmPartitions> slurm_partitions;
  if (cfg.slurm.enabled) {
    slurm_partitions.emplace(cfg.slurm, clock, log);
    slurm_partitions->start();
    placement.set_partition_source([p = &*slurm_partitions] { return p->snapshot(); });
  }
  // Placement on a thread of its own: a pass over thousands of queued jobs must not hold up
  // long-poll deadlines and lease expiry. What the job service tells placement (a job queued, a
  // worker registered, a heartbeat) wakes it: a submitted job is placed within milliseconds, not
  // at the next tick. A wake-up after a quiet spell runs a pass at once; wake-ups back to back
  // (a burst of submits) share one pass per 100 ms (base/ticker.h). The thread runs at a lower CPU
  // priority than the threads serving requests: start-up's pass over a backlog must not hold up a
  // submit or a health check (bench/RESULTS.md, "Start-up with a long queue").
  std::optional<jobctl::Ticker> placement_ticker;
  if (cfg.placement.enabled) {
    placement_ticker.emplace(
        std::chrono::milliseconds(cfg.tick_ms),
        [&placement, &log, lowered = false]() mutable {
          if (!lowered) {
            lowered = true;
            if (auto st = jobctl::lower_current_thread_priority(10); !st)
              log.write("placement: running at normal priority: " + st.error().message);
          }
          placement.tick();
        },
        std::chrono::milliseconds(100));
    placement.set_wake_observer([t = &*placement_ticker] { t->wake(); });
    if (auto st = placement.start(); !st) return fail(st.error());
  }

  // Submits that nothing could ever run are refused (docs/api.md, "Refused at submit"): against
  // the registered workers and, with a cloud provider, the offers placement may launch.
  jobs::Feasibility feasibility(cfg.placement.enabled && !cfg.placement.cloud_provider.empty() ? placement.offers()
                                                                                              : std::vector<cost::Offer>{},
                                cfg.placement.cloud_max_instances, cfg.placement.cloud_containers);
  if (auto st = feasibility.load(db); !st) return fail(st.error());
  // A Slurm partition's node is a machine too (its GPUs as the cluster reported them at start).
  if (cfg.placement.enabled && slurm_partitions)
    for (auto& m : jobctl::daemon::slurm::feasibility_machines(cfg.slurm, slurm_partitions->snapshot()))
      feasibility.add_machine(std::move(m));
  svc.set_feasibility(&feasibility);

  // Clouds (docs/clouds.md): the provisioner launches what placement chooses in the cloud.
  std::unique_ptr<provisioning::Provisioner> provisioner;
  if (!cfg.cloud.provider.empty()) {
    auto provider = provisioning::make_provider(cfg.cloud, placement.offers());
    if (!provider) return fail(provider.error());
    provisioner = std::make_unique<provisioning::Provisioner>(db, clock, svc, placement, std::move(*provider), cfg.cloud);
  }
  // A Slurm cluster: the launcher submits the batch job of each job placed on a partition.
  std::unique_ptr<jobctl::daemon::slurm::SlurmLauncher> slurm_launcher;
  if (cfg.slurm.enabled) slurm_launcher = std::make_unique<jobctl::daemon::slurm::SlurmLauncher>(db, clock, svc, cfg.slurm, log, &*slurm_partitions);
  if (provisioner || slurm_launcher)
    placement.set_launch_observer([p = provisioner.get(), s = slurm_launcher.get()](int64_t) {
      if (p) p->wake();
      if (s) s->wake();
    });

  // Checkpoints (docs/recovery.md): blobs under <data_dir>/checkpoints.
  store::BlobStore blobs((std::filesystem::path(cfg.data_dir) / "checkpoints").string());
  jobs::CheckpointOptions ckpt_opts;
  ckpt_opts.max_bytes = cfg.checkpoint_max_bytes;
  ckpt_opts.final_checkpoint_retention_ms = cfg.output_retention_s * 1000;
  jobs::CheckpointService checkpoints(db, blobs, clock, ckpt_opts);
  checkpoints.set_log(&log);
  if (auto removed = checkpoints.reconcile(); !removed) return fail(removed.error());
  else if (*removed > 0) LogLine() << "jobctld: removed " << *removed << " unreferenced checkpoint blob(s)";

  // Code bundles of command jobs (docs/job-protocol.md): blobs under <data_dir>/bundles.
  store::BlobStore bundle_blobs((std::filesystem::path(cfg.data_dir) / "bundles").string());
  jobs::BundleOptions bundle_opts;
  bundle_opts.quota_bytes_per_user = cfg.bundle_quota_bytes_per_user;
  bundle_opts.retention_ms = cfg.bundle_retention_s * 1000;
  jobs::BundleService bundles(db, bundle_blobs, clock, bundle_opts);
  if (auto fixed = bundles.reconcile(); !fixed) return fail(fixed.error());
  else if (*fixed > 0) LogLine() << "jobctld: matched " << *fixed << " code bundle row(s) with the files on disk";
  // Job outputs (docs/job-protocol.md, "Outputs"): blobs under <data_dir>/outputs.
  store::BlobStore output_blobs((std::filesystem::path(cfg.data_dir) / "outputs").string());
  jobs::OutputService outputs(db, output_blobs, clock,
                              jobs::OutputOptions{cfg.output_max_bytes_per_job, cfg.output_quota_bytes_per_user,
                                                  cfg.output_retention_s * 1000});
  if (auto fixed = outputs.reconcile(); !fixed) return fail(fixed.error());
  else if (*fixed > 0) LogLine() << "jobctld: removed " << *fixed << " output blob(s) or row(s) without their other half";
  // Checkpoint, bundle and output downloads share one cap (each is sent from its file, a piece at a time).
  http::DownloadSlots download_slots(cfg.checkpoint_max_concurrent_downloads);

  // The dashboard (docs/dashboard.md): the progress history behind its curves, and its files.
  auto progress = store::ProgressHistory::open(std::filesystem::path(cfg.data_dir) / "progress", clock);
  if (!progress) return fail(progress.error());
  http::ApiInfo api_info;
  api_info.on_progress = [&history = **progress](int64_t job_id, const std::string& p) {
    if (auto st = history.record(job_id, p); !st) LogLine() << "jobctld: progress history: " << st.error().message;
  };
  api_info.store_problem = [&db] { return db.write_problem(); };
  // The jobs' output, a file per job under <data_dir>/logs (docs/log-format.md); a line the
  // worker did not stamp is stamped on arrival.
  auto opened_logs = store::JobLogStore::open(std::filesystem::path(cfg.data_dir) / "logs",
                                              store::JobLogOptions{.max_bytes_per_job = cfg.logs_max_bytes_per_job});
  if (!opened_logs) return fail(opened_logs.error());
  store::JobLogStore& job_logs = **opened_logs;
  api_info.on_log = http::log_writer(job_logs, clock);
  jobs::LogRetention log_retention(svc, job_logs, clock, cfg.logs_retention_s * 1000, log);
  api_info.max_progress_bytes = static_cast<size_t>(cfg.max_progress_bytes);
  ledger::Ledger ledger(db);
  // Webhooks (docs/notifications.md): the store queues a delivery with each job event a user's
  // webhook subscribes to; the dispatcher sends them on threads of its own, each user's in turn.
  notify::WebhookService webhooks(db, clock, cfg.webhooks);
  notify::WebhookDispatcher webhook_dispatcher(db, clock, cfg.webhooks, log);
  net::Router router = http::make_daemon_router(
      http::RouteServices{svc, **progress, job_logs, checkpoints, bundles, download_slots, placement, ledger,
                          provisioner.get(), &outputs, &webhooks, &registry_credentials},
      api_info);
  std::error_code exe_ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", exe_ec);
  const auto found_web = http::find_web_root(cfg.web_root, exe_ec ? std::filesystem::path(".") : exe.parent_path());
  std::optional<http::StaticFiles> web_files;
  if (found_web) {
    web_files.emplace(*found_web);
    router.set_fallback(web_files->as_fallback());
  }
  // Auth, limits, metrics (docs/security.md): the gate in front of the routes. A route that
  // declares no access stops the start here (deny by default).
  auto installed = http::install_hardening(router, svc, db, clock, cfg.security, nullptr,
                                           [&webhook_dispatcher] { return webhook_dispatcher.lag_s(); });
  if (!installed) return fail(installed.error());
  std::unique_ptr<http::Hardening> hardening = std::move(*installed);
  // Budgets count a submitted job's own estimate: the cheapest option meeting its deadline, as
  // placement would choose it now.
  if (cfg.placement.enabled)
    hardening->admission.set_job_estimate([&placement](const auto& spec) { return placement.estimated_cost_usd(spec); });
  if (hardening->metrics) {
    placement.set_decision_observer([m = hardening->metrics.get()](double s) { m->observe_placement(s); });
    // The writer's commits and WAL checkpoints: what a write's latency is made of under load.
    store::WriterObserver writer_observer;
    writer_observer.committed = [m = hardening->metrics.get()](const store::CommitTiming& t) {
      m->observe_store_commit(t.durable, t.changes, t.queue_wait_s, t.commit_s);
    };
    writer_observer.checkpointed = [m = hardening->metrics.get()](const store::CheckpointTiming& t) {
      m->observe_wal_checkpoint(t.seconds, t.checkpointed_frames);
    };
    db.set_writer_observer(std::move(writer_observer));
  }
  // The metrics die before the store on every way out of main (an early return included): the
  // writer must stop telling them first.
  struct ForgetWriterObserver {
    store::Store& db;
    ~ForgetWriterObserver() { db.set_writer_observer({}); }
  } forget_writer_observer{db};
  net::ServerOptions ho;
  ho.host = cfg.host;
  ho.port = static_cast<uint16_t>(cfg.port);
  ho.io_threads = cfg.io_threads;
  ho.handler_threads = cfg.handler_threads;
  ho.max_body_bytes = static_cast<size_t>(cfg.max_body_bytes);
  ho.max_header_bytes = static_cast<size_t>(cfg.max_header_bytes);
  ho.header_timeout_ms = cfg.header_timeout_s * 1000;
  ho.read_timeout_ms = cfg.read_timeout_s * 1000;
  ho.idle_timeout_ms = cfg.idle_timeout_s * 1000;
  ho.max_connections = cfg.max_connections;
  ho.max_connections_per_client = cfg.max_connections_per_client;
  ho.reserved_connections = cfg.reserved_connections >= 0 ? cfg.reserved_connections : cfg.max_connections / 10;
  ho.may_use_reserve = http::may_use_reserved_connection;
  ho.allowed_hosts = cfg.allowed_hosts;
  // The URLs workers are told to call back are ones jobctld answers to (their host and port).
  for (const std::string& url : {cfg.cloud.server_url, cfg.slurm.server_url}) {
    const size_t scheme = url.find("://");
    if (scheme == std::string::npos) continue;
    const std::string authority = url.substr(scheme + 3, url.find('/', scheme + 3) - (scheme + 3));
    if (!authority.empty()) ho.allowed_hosts.push_back(authority);
  }
  ho.shutdown_grace_ms = cfg.shutdown_grace_s * 1000;
  ho.max_upload_bytes = static_cast<size_t>(cfg.checkpoint_max_bytes);
  ho.upload_dir = checkpoints.incoming_dir();  // prepared by reconcile() above
  ho.max_concurrent_uploads = cfg.checkpoint_max_concurrent_uploads;
  ho.tls_cert_file = cfg.tls_cert_file;
  ho.tls_key_file = cfg.tls_key_file;
  const bool tls = !cfg.tls_cert_file.empty();
  net::HttpServer server(ho, router);
  auto port = server.start();
  if (!port) return fail(port.error());

  if (provisioner) {
    // Instances' workers connect back here unless cloud.server_url says otherwise (a real cloud
    // needs an address it can reach; a wildcard listen address is not one).
    const bool wildcard = cfg.host == "0.0.0.0" || cfg.host == "::";
    const std::string host = wildcard ? std::string("127.0.0.1") : cfg.host;
    provisioner->set_server_url(net::listen_url(tls, host, *port));
    provisioner->start();  // its first pass reconciles with the provider
  }

  if (slurm_launcher) {
    // Batch jobs' workers connect back here unless slurm.server_url says otherwise (compute nodes
    // usually need jobctld's address on their network).
    const bool wildcard = cfg.host == "0.0.0.0" || cfg.host == "::";
    slurm_launcher->set_server_url(net::listen_url(tls, wildcard ? std::string("127.0.0.1") : cfg.host, *port));
    slurm_launcher->start();  // its first pass reconciles with Slurm's queue
  }

  jobctl::Ticker ticker(std::chrono::milliseconds(cfg.tick_ms), [&svc, &checkpoints, &bundles, &log_retention, &outputs] {
    svc.tick();
    checkpoints.tick();
    bundles.tick();
    log_retention.tick();
    outputs.tick();
  });

  // Budgets while jobs run (daemon/auth/auth_budget_watch.h): once a second, on a thread of its
  // own (a ledger scan must not hold up lease expiry), with auth on and a budget configured.
  const auto& limits = cfg.security.limits;
  std::optional<auth::BudgetWatch> budget_watch;
  std::optional<jobctl::Ticker> budget_ticker;
  if (cfg.security.auth.enabled && (limits.monthly_budget_usd > 0 || !limits.user_budgets_usd.empty())) {
    budget_watch.emplace(db, clock, svc, hardening->admission, hardening->ledger_spend, limits.over_budget);
    budget_ticker.emplace(std::chrono::seconds(1), [&budget_watch, &log] {
      if (auto over = budget_watch->check(); !over) log.write("budgets: " + over.error().message);
    });
  }

  webhook_dispatcher.start();

  // The line scripts and tests wait for (docs/configuration.md, "Start-up line").
  std::cout << nlohmann::json{{"event", "listening"},
                              {"host", cfg.host},
                              {"port", *port},
                              {"url", net::listen_url(tls, cfg.host, *port)},
                              {"database", db_path}}
                   .dump()
            << std::endl;
  LogLine() << "jobctld: listening on " << cfg.host << ":" << *port << ", database " << db_path;
  LogLine() << "jobctld: dashboard " << (web_files ? "files from " + web_files->root().string() : std::string("not served (no web root found; see --web-root)"));

  LogLine() << "jobctld: " << wait_for_termination_signal(signals) << ", shutting down";

  placement.stop();         // a placement pass over a long queue ends before its next job
  server.begin_shutdown();  // stop accepting; idle connections close
  svc.shutdown();           // waiting long-polls are answered "no job" now
  server.stop();            // in-flight requests finish (up to the grace period), threads join
  if (auto st = svc.store_live_heartbeats(); !st)  // progress answered from memory (live_leases.h)
    LogLine() << "jobctld: storing the newest heartbeats failed: " << st.error().message;
  ticker.stop();
  if (budget_ticker) budget_ticker->stop();
  webhook_dispatcher.stop();  // the deliveries in flight finish first (webhooks.timeout_s at most)
  if (placement_ticker) placement_ticker->stop();
  if (slurm_partitions) slurm_partitions->stop();
  if (provisioner) provisioner->stop();  // instances keep running; the next start reconciles
  if (slurm_launcher) slurm_launcher->stop();  // Slurm jobs keep running; the next start reconciles
  db.close();               // every queued change committed
  LogLine() << "jobctld: stopped";
  return 0;
}
