// jobctl-cloudsim: a local stand-in for a cloud (docs/architecture.md "Clouds", docs/clouds.md). Serves
// launch / terminate / describe / list, billing, spot interruptions and the per-instance notice
// endpoint over HTTP on loopback; every instance is a real jobctl-worker process.
//
// Prints one JSON start-up line on stdout ({"event":"listening",...,"url":...}), like jobctld,
// then runs until SIGTERM or SIGINT; on exit every instance is terminated (its processes killed)
// and the state saved.

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/log_line.h"
#include "base/termination_signals.h"
#include "base/text_file.h"
#include "cloud/command_template.h"
#include "cloud/sim/sim_cloud.h"
#include "cloud/sim/sim_routes.h"
#include "net/listen_address.h"
#include "net/server.h"
#include "base/ticker.h"

namespace {

namespace fs = std::filesystem;

int fail(const jobctl::Error& e) {
  jobctl::LogLine() << "jobctl-cloudsim: " << e.message << (e.field.empty() ? "" : " (" + e.field + ")");
  return 2;
}

// jobctl-worker and jobctl-train as a build tree lays them out next to cloud/.
std::string default_worker_command() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path root = self.parent_path().parent_path();
  const fs::path worker = root / "worker" / "jobctl-worker";
  const fs::path train = root / "train" / "jobctl-train";
  if (!fs::exists(worker)) return "";
  // Its instances train on this machine's CPU whatever instance type they stand for: simulated,
  // so that their step times never calibrate the GPU the instance type has.
  std::string cmd = jobctl::cloud::shell_quote(worker.string()) + " --device cpu --simulated";
  if (fs::exists(train)) cmd += " --trainer " + jobctl::cloud::shell_quote(train.string());
  return cmd;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace jobctl;
  CLI::App app{"jobctl-cloudsim: a simulated cloud whose instances are local jobctl-worker processes"};
  std::string listen = "127.0.0.1:8090";
  cloud::sim::SimCloudOptions o;
  std::string catalog, catalog_cloud, trace_file;
  double terminate_grace_s = 10;
  int tick_ms = 100;
  app.add_option("--listen", listen, "HOST:PORT to listen on (port 0: any free port; default 127.0.0.1:8090)");
  app.add_option("--state-dir", o.state_dir, "folder for state.json and the instances' work dirs and logs")->required();
  app.add_option("--catalog", catalog, "SkyPilot catalog CSV (default: jobctl's built-in catalog)");
  app.add_option("--catalog-cloud", catalog_cloud, "cloud of --catalog rows without a Cloud column (default: from the file name)");
  app.add_option("--trace", trace_file, "spot availability trace (skypilot-org/spot-traces JSON) to replay");
  app.add_option("--trace-start-tick", o.trace_start_tick, "trace tick at start (default 0)");
  app.add_option("--interruption-rate-per-hour", o.interruption_rate_per_hour,
                 "spot interruptions per simulated hour (default 0: none)");
  app.add_option("--time-factor", o.time_factor, "simulated seconds per real second (default 1)");
  app.add_option("--notice-seconds", o.notice_seconds, "simulated seconds from notice to reclaim (default 120)");
  app.add_option("--worker-command", o.worker_command,
                 "an instance's command: a template with {server} {notice_url} {instance_id} "
                 "{instance_type} {spot} {spot_flag} {job_flags} {region} {work_dir} {name} {tag}; without "
                 "placeholders the standard worker flags are appended (default: the build tree's "
                 "jobctl-worker --device cpu --simulated)");
  app.add_option("--server", o.default_server, "jobctld URL for instances whose launch names none");
  app.add_option("--seed", o.seed, "seed of the interruption schedule (default 1)");
  app.add_option("--terminate-grace-s", terminate_grace_s, "seconds between SIGTERM and SIGKILL on terminate (default 10)");
  app.add_option("--tick-ms", tick_ms, "period of the interruption clock (default 100)");
  CLI11_PARSE(app, argc, argv);

  auto listen_address = net::parse_listen_address(listen);
  if (!listen_address) return fail(listen_address.error());
  const net::ListenAddress& listen_cfg = *listen_address;
  if (o.worker_command.empty()) o.worker_command = default_worker_command();
  if (o.worker_command.empty())
    return fail(make_error(ErrorCode::invalid_argument, "jobctl-worker was not found next to this build; pass --worker-command", "worker_command"));
  o.terminate_grace_ms = static_cast<int64_t>(std::llround(terminate_grace_s * 1000));
  if (tick_ms < 10 || tick_ms > 10000) return fail(make_error(ErrorCode::invalid_argument, "--tick-ms must be between 10 and 10000", "tick_ms"));

  if (catalog.empty()) {
    o.offers = cost::seed_catalog();
  } else {
    auto text = jobctl::read_text_file(catalog, "catalog");
    if (!text) return fail(text.error());
    auto parsed = cost::parse_skypilot_csv(*text, catalog_cloud.empty() ? cost::cloud_from_file_name(catalog) : catalog_cloud, catalog);
    if (!parsed) return fail(parsed.error());
    for (const auto& w : parsed->warnings) LogLine() << "jobctl-cloudsim: catalog: " << w;
    o.offers = std::move(parsed->offers);
  }
  if (!trace_file.empty()) {
    auto text = jobctl::read_text_file(trace_file, "trace");
    if (!text) return fail(text.error());
    auto trace = scheduler::parse_spot_trace(*text);
    if (!trace) {
      Error e = trace.error();
      e.message = trace_file + ": " + e.message;
      return fail(e);
    }
    o.trace = std::move(*trace);
  }

  const sigset_t signals = block_termination_signals();

  SystemClock clock;
  auto created = cloud::sim::SimCloud::create(o, clock);
  if (!created) return fail(created.error());
  cloud::sim::SimCloud& sim = **created;

  net::Router router = cloud::sim::make_sim_router(sim);
  net::ServerOptions ho;
  ho.host = listen_cfg.host;
  ho.port = static_cast<uint16_t>(listen_cfg.port);
  ho.handler_threads = 4;
  ho.server_name = "jobctl-cloudsim";
  net::HttpServer server(ho, router);
  auto port = server.start();
  if (!port) return fail(port.error());
  const std::string url = net::listen_url(/*tls=*/false, listen_cfg.host, *port);
  sim.set_base_url(url);

  jobctl::Ticker ticker(std::chrono::milliseconds(tick_ms), [&sim] { sim.tick(); });

  std::cout << nlohmann::json{{"event", "listening"},
                              {"host", listen_cfg.host},
                              {"port", *port},
                              {"url", url},
                              {"state_dir", o.state_dir},
                              {"offers", o.offers.size()},
                              {"time_factor", o.time_factor},
                              {"trace", trace_file.empty() ? nlohmann::json(nullptr) : nlohmann::json(trace_file)}}
                   .dump()
            << std::endl;
  LogLine() << "jobctl-cloudsim: listening on " << url << ", state " << o.state_dir;

  LogLine() << "jobctl-cloudsim: " << wait_for_termination_signal(signals) << ", shutting down";
  server.stop();
  ticker.stop();
  created->reset();  // terminates every instance, saves the state
  LogLine() << "jobctl-cloudsim: stopped";
  return 0;
}
