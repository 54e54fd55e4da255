// Shared set-up for tests of the placement service and what builds on it (the provisioner): a
// temporary store, a manual clock, a JobService with the placement matcher and owned-GPU billing,
// a PlacementService, the ledger, and a log that keeps what the passes reported.
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/ledger/ledger.h"
#include "daemon/placement/owned_gpu_billing.h"
#include "daemon/placement/placement_matcher.h"
#include "daemon/placement/placement_service.h"
#include "tests/daemon/recording_log.h"
#include "tests/daemon/service_support.h"

namespace jobctl::daemon::testing {

struct PlacementFixture {
  explicit PlacementFixture(placement::PlacementSettings settings = {}, std::string db_path = {}) {
    store::StoreOptions o;
    o.path = db_path.empty() ? dir.file("jobctl.db") : db_path;
    auto s = store::Store::open(o, clock);
    if (!s) ADD_FAILURE() << s.error().message;
    db = std::move(*s);
    ledger = std::make_unique<ledger::Ledger>(*db);
    billing = std::make_unique<placement::OwnedGpuBilling>(settings);
    svc = std::make_unique<jobs::JobService>(*db, clock, std::make_unique<placement::PlacementMatcher>(),
                                             jobs::ServiceOptions{},
                                             jobs::ServiceDependencies{.log = &log, .lease_recorder = billing.get()});
    EXPECT_TRUE(svc->start());
    placement = std::make_unique<placement::PlacementService>(*db, clock, *svc, std::move(settings));
    placement->set_log(&log);
    placement->set_wake_observer([this] { ++wakes; });
    auto st = placement->start();
    EXPECT_TRUE(st) << (st ? "" : st.error().message);
  }
  ~PlacementFixture() {
    svc->shutdown();
    db->close();
  }
  int64_t submit(const std::string& spec) {
    auto r = svc->submit_job(spec);
    EXPECT_TRUE(r) << (r ? "" : r.error().message + " " + r.error().field);
    // The submit's commit hook requests placement; reevaluate() places every queued job now
    // (the hook may run just after submit_job returns, so tick() could miss it here).
    auto placed = placement->reevaluate();
    EXPECT_TRUE(placed) << (placed ? "" : placed.error().message);
    return r ? r->id : 0;
  }
  // `commands`: the worker runs command jobs (jobctl-worker --allow-commands); `machine_id`: the
  // machine it says it runs on (a newer registration with the same one replaces it).
  int64_t add_worker(std::vector<jobs::GpuDevice> gpus, std::optional<jobs::WorkerInstance> inst = {},
                     bool commands = false, std::string machine_id = {}) {
    jobs::WorkerRegistration reg;
    reg.name = "w";
    reg.capabilities.gpus = std::move(gpus);
    reg.capabilities.cpu_cores = 4;
    reg.capabilities.memory_mb = 16384;
    reg.capabilities.instance = std::move(inst);
    reg.capabilities.commands = commands;
    reg.capabilities.machine_id = std::move(machine_id);
    auto r = svc->register_worker(reg);
    EXPECT_TRUE(r);
    return r ? r->worker_id : 0;
  }
  // The lease a worker is granted (none: nothing for it), with the GPUs it takes.
  std::optional<jobs::LeaseGrant> lease_grant(int64_t worker) {
    std::promise<Expected<std::optional<jobs::LeaseGrant>>> p;
    auto f = p.get_future();
    svc->lease(worker, 0, [&p](Expected<std::optional<jobs::LeaseGrant>> r) { p.set_value(std::move(r)); });
    auto r = f.get();
    if (!r || !*r) return std::nullopt;
    return std::move(**r);
  }
  std::optional<int64_t> lease(int64_t worker) {
    auto grant = lease_grant(worker);
    if (!grant) return std::nullopt;
    return grant->job_id;
  }
  store::JobRow job(int64_t id) {
    auto r = db->get_job(id);
    EXPECT_TRUE(r && *r);
    return **r;
  }
  nlohmann::json placement_of(int64_t id) {
    auto row = job(id);
    EXPECT_TRUE(row.placement_json);
    return row.placement_json ? nlohmann::json::parse(*row.placement_json) : nlohmann::json();
  }

  jobctl::testing::TempDir dir;
  ManualClock clock;
  RecordingLog log;
  std::atomic<int> wakes{0};  // how often placement asked for its thread
  std::unique_ptr<store::Store> db;
  std::unique_ptr<ledger::Ledger> ledger;
  std::unique_ptr<placement::OwnedGpuBilling> billing;
  std::unique_ptr<jobs::JobService> svc;
  std::unique_ptr<placement::PlacementService> placement;
};

}  // namespace jobctl::daemon::testing
