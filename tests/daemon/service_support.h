// Shared set-up for tests that drive JobService directly: a temporary store, a manual clock, and
// helpers to register workers and take leases synchronously.
#pragma once

#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <optional>
#include <string>

#include "base/clock.h"
#include "daemon/auth/credential_seal.h"
#include "daemon/auth/registry_credentials.h"
#include "daemon/jobs/job_matcher.h"
#include "daemon/jobs/job_service.h"
#include "daemon/store/store.h"
#include "tests/support/temp_dir.h"

namespace jobctl::daemon::testing {

inline std::string mlp_spec(const std::string& extra = "") {
  return R"({"model":{"kind":"mlp","hidden":[32]},"data":{"dataset":"synthetic","samples":256})" +
         extra + "}";
}

struct ServiceFixture {
  explicit ServiceFixture(jobs::ServiceOptions options = {}) {
    store::StoreOptions o;
    o.path = dir.file("jobctl.db");
    auto s = store::Store::open(o, clock);
    if (!s) ADD_FAILURE() << s.error().message;
    db = std::move(*s);
    // As jobctld wires them: leases carry their owner's registry login (the key file is made at
    // the first login only).
    seal = std::make_unique<auth::CredentialSeal>(dir.file("registry-credentials.key"));
    registry_credentials = std::make_unique<auth::RegistryCredentials>(*db, clock, *seal);
    svc = std::make_unique<jobs::JobService>(*db, clock, std::make_unique<jobs::FifoMatcher>(), options,
                                             jobs::ServiceDependencies{.lease_credentials = registry_credentials.get()});
    if (auto st = svc->start(); !st) ADD_FAILURE() << st.error().message;
  }
  ~ServiceFixture() {
    svc->shutdown();
    db->close();
  }

  int64_t submit(const std::string& spec = mlp_spec()) {
    auto r = svc->submit_job(spec);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r->id : 0;
  }

  // `secret_hash`: the worker's secret as registering through HTTP would store it
  // (auth::WorkerCredentials::issue); empty: none (service-level tests need none).
  int64_t register_worker(std::vector<jobs::GpuDevice> gpus = {}, const std::string& name = "w",
                          const std::string& secret_hash = "") {
    jobs::WorkerRegistration reg;
    reg.name = name;
    reg.secret_hash = secret_hash;
    reg.capabilities.gpus = std::move(gpus);
    reg.capabilities.cpu_cores = 4;
    auto r = svc->register_worker(reg);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? r->worker_id : 0;
  }

  // A lease that does not wait.
  Expected<std::optional<jobs::LeaseGrant>> lease_now(int64_t worker) {
    std::promise<Expected<std::optional<jobs::LeaseGrant>>> p;
    auto f = p.get_future();
    svc->lease(worker, 0, [&p](Expected<std::optional<jobs::LeaseGrant>> r) { p.set_value(std::move(r)); });
    return f.get();
  }

  std::string dump() {
    auto d = db->dump();
    EXPECT_TRUE(d);
    return d ? *d : std::string();
  }

  jobctl::testing::TempDir dir;
  ManualClock clock;
  std::unique_ptr<store::Store> db;
  std::unique_ptr<auth::CredentialSeal> seal;
  std::unique_ptr<auth::RegistryCredentials> registry_credentials;
  std::unique_ptr<jobs::JobService> svc;
};

}  // namespace jobctl::daemon::testing
