// Reservations and backfill end to end (docs/cost-model.md, "Reservations and backfill"): jobctld
// and one jobctl-worker with eight fake H100s (tests/fixtures/nvidia-smi/h100-sxm-x8) as real
// processes on loopback; the jobs are command jobs (`sleep`) whose runtime hints say how long they
// run, each a little longer than they do.
//
// A wide job behind a steady stream of 1-GPU jobs: an 8-GPU job is submitted while seven 1-GPU
// jobs hold the box, and 1-GPU jobs keep arriving. It gets a reservation on the box at the end of
// the longest running job's estimate; its reason names that start; 1-GPU jobs backfill only where
// they end by then; it starts by then (plus one placement pass and one lease poll), while the
// stream is still arriving. Assertions are on recorded event times and their order, never on
// how long the test took.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "base/utc_time.h"
#include "tests/e2e/recovery_support.h"
#include "tests/security/security_support.h"
#include "tests/support/temp_dir.h"

namespace jobctl::e2e {
namespace {

// One placement pass (placement.reevaluate_s below) and one lease poll (the worker's --wait-s):
// what may pass between the reserved start and the lease besides the estimates.
constexpr int64_t kPassAndPollMs = 2000;

std::string fixture(const std::string& name) {
  return env_or_fail("JOBCTL_SOURCE_DIR") + "/tests/fixtures/nvidia-smi/" + name;
}

std::string write_config(jobctl::testing::TempDir& tmp) {
  const json h100 = {{"gpu_model", "H100"},   {"count", 8},        {"purchase_usd", 240000}, {"lifetime_years", 4},
                     {"utilisation", 0.5},    {"power_kw", 5.6},   {"electricity_usd_per_kwh", 0.15}};
  const std::string path = tmp.file("jobctld.json");
  std::ofstream(path) << json{{"workers", {{"max_lease_wait_s", 1}}},
                              {"cost", {{"pricing", "amortised"}, {"local_gpus", {h100}}}},
                              {"placement", {{"reevaluate_s", 1}}}}
                             .dump()
                      << "\n";
  return path;
}

// A command job of `gpus` H100s that sleeps `run_s` and says it takes `estimate_s`.
json sleep_job(const std::string& name, int gpus, double run_s, double estimate_s) {
  return {{"name", name},
          {"command", {"/bin/sleep", std::to_string(run_s)}},
          {"estimate", {{"hours", estimate_s / 3600.0}, {"gpu", "H100"}}},
          {"resources", {{"gpu", "H100"}, {"gpus", gpus}}},
          {"placement", {{"mode", "local"}}}};
}

// The first event of `type`; null when none.
json first_event(const json& job, const std::string& type) {
  for (const auto& e : job.value("events", json::array()))
    if (e.value("type", "") == type) return e;
  return nullptr;
}

json last_event(const json& job, const std::string& type) {
  json last;
  for (const auto& e : job.value("events", json::array()))
    if (e.value("type", "") == type) last = e;
  return last;
}

double estimate_hours(const json& job) { return job["spec"]["estimate"]["hours"].get<double>(); }

TEST(Backfill, AWideJobBehindAStreamOfOneGpuJobsStartsWhenItsReservationSays) {
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"), "127.0.0.1:0", 10, {"--config", write_config(tmp)});
  ASSERT_FALSE(d.url().empty()) << d.process().output();
  client::ApiClient api(d.url());
  auto argv = worker_argv(d.url(), "h100x8", tmp.file("work"), {"--allow-commands", "--fake-gpus", fixture("h100-sxm-x8")});
  // worker_argv says --device cpu and waits 2 s per poll: a fake-GPU worker must not, and the
  // poll is one second here.
  auto at = std::find(argv.begin(), argv.end(), "--device");
  argv.erase(at, at + 2);
  *(std::find(argv.begin(), argv.end(), "--wait-s") + 1) = "1";
  Process worker(argv);

  auto submit = [&api](const json& spec) -> int64_t {
    auto r = api.submit_job(spec.dump());
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? (*r)["id"].get<int64_t>() : 0;
  };
  // Seven 1-GPU jobs hold the box; the longest says 12 s.
  std::vector<int64_t> narrow;
  for (int k = 0; k < 7; ++k) narrow.push_back(submit(sleep_job("first-" + std::to_string(k), 1, 3 + k, 5 + k + (k == 6 ? 1 : 0))));
  ASSERT_TRUE(jobctl::testing::poll_until([&] {
    for (int64_t id : narrow) {
      auto j = api.get_job(id);
      if (!j || (*j).value("state", "") != "running") return false;
    }
    return true;
  }, 60s)) << worker.output() << d.process().output();

  const int64_t wide = submit(sleep_job("wide", 8, 1, 2));
  // A 1-GPU job every half second (each sleeps 1 s and says 2.5 s) until the wide job starts, and
  // a few more after it, so that it started while the stream still ran.
  std::vector<int64_t> stream;
  int after_wide_started = 0;
  for (int k = 0; k < 200 && after_wide_started < 3; ++k) {
    stream.push_back(submit(sleep_job("stream-" + std::to_string(k), 1, 1, 2.5)));
    std::this_thread::sleep_for(500ms);
    auto w = api.get_job(wide);
    ASSERT_TRUE(w);
    if (!first_event(*w, "leased").is_null()) ++after_wide_started;
  }
  const json wide_job = wait_job(api, wide, is_terminal, 60s);
  ASSERT_EQ(wide_job.value("state", ""), "succeeded") << wide_job.dump(2) << worker.output();

  const json reserved = first_event(wide_job, "reserved");
  ASSERT_TRUE(reserved.is_object()) << wide_job["events"].dump(2);
  const json placed = first_event(wide_job, "placed");
  const int64_t placed_ms = placed["time_ms"];
  const int64_t leased_ms = first_event(wide_job, "leased")["time_ms"];

  // The longest running job's estimate at the wide job's placement: the jobs then holding GPUs,
  // each from its lease for its estimate.
  std::map<int64_t, json> jobs;
  for (int64_t id : narrow) jobs[id] = wait_job(api, id, is_terminal, 60s);
  for (int64_t id : stream) jobs[id] = wait_job(api, id, is_terminal, 60s);
  int64_t longest_end = 0;
  for (const auto& [id, j] : jobs) {
    ASSERT_EQ(j.value("state", ""), "succeeded") << j.dump(2);
    const int64_t l = first_event(j, "leased")["time_ms"];
    const int64_t end = last_event(j, "succeeded")["time_ms"];
    if (l <= placed_ms && end > placed_ms)
      longest_end = std::max(longest_end, l + static_cast<int64_t>(estimate_hours(j) * 3.6e6));
  }
  ASSERT_GT(longest_end, 0);
  EXPECT_LE(leased_ms, longest_end + kPassAndPollMs)
      << "placed at " << placed_ms << ", the running jobs' estimates end by " << longest_end;

  // Its reason named where and when it would start, and it started by then.
  const json last_reserved = last_event(wide_job, "reserved");
  const int64_t named_start = last_reserved["detail"]["start_ms"];
  EXPECT_EQ(last_reserved["detail"]["worker"], "h100x8");
  EXPECT_NE(last_reserved["detail"].value("reason", "").find(format_utc(named_start, UtcStyle::rfc3339)),
            std::string::npos)
      << last_reserved.dump(2);
  EXPECT_NE(wide_job["placement"].value("reason", "").find("reserved worker"), std::string::npos)
      << wide_job["placement"].dump(2);
  EXPECT_LE(leased_ms, named_start + kPassAndPollMs) << last_reserved.dump(2);
  EXPECT_LE(reserved["detail"]["start_ms"].get<int64_t>(), longest_end + kPassAndPollMs) << reserved.dump(2);

  // No 1-GPU job that started after the reservation delayed it: each ended before the wide job
  // started; and some did backfill meanwhile, and some started after it (the stream went on).
  const int64_t reserved_ms = reserved["time_ms"];
  int backfilled = 0, later = 0;
  for (const auto& [id, j] : jobs) {
    const int64_t l = first_event(j, "leased")["time_ms"];
    const int64_t end = last_event(j, "succeeded")["time_ms"];
    if (l >= reserved_ms && l <= leased_ms) {
      ++backfilled;
      EXPECT_LE(end, leased_ms) << "job " << id << " backfilled past the reserved start: " << j["events"].dump(2);
    }
    if (l > leased_ms) ++later;
  }
  EXPECT_GT(backfilled, 0) << "no 1-GPU job used the box while the wide job waited";
  EXPECT_GT(later, 0) << "the stream ended before the wide job started";
}

// A box of `box` GPUs and a stream of jobs whose widths cycle through `widths`.
struct MixedStream {
  std::string fixture;  // tests/fixtures/nvidia-smi/...
  std::string gpu;      // its model, as local_gpus and the jobs name it
  int box = 4;
  std::vector<int> widths;
};

std::string write_box_config(jobctl::testing::TempDir& tmp, const MixedStream& m) {
  const json pool = {{"gpu_model", m.gpu},   {"count", m.box},      {"purchase_usd", 20000.0 * m.box}, {"lifetime_years", 4},
                     {"utilisation", 0.5},   {"power_kw", 0.4 * m.box}, {"electricity_usd_per_kwh", 0.15}};
  const std::string path = tmp.file("jobctld.json");
  std::ofstream(path) << json{{"workers", {{"max_lease_wait_s", 1}}},
                              {"cost", {{"pricing", "amortised"}, {"local_gpus", {pool}}}},
                              {"placement", {{"reevaluate_s", 1}}}}
                             .dump()
                      << "\n";
  return path;
}

json box_job(const MixedStream& m, const std::string& name, int gpus, double run_s, double estimate_s) {
  return {{"name", name},
          {"command", {"/bin/sleep", std::to_string(run_s)}},
          {"estimate", {{"hours", estimate_s / 3600.0}, {"gpu", m.gpu}}},
          {"resources", {{"gpu", m.gpu}, {"gpus", gpus}}},
          {"placement", {{"mode", "local"}}}};
}

// Jobs of the mix arrive faster than the box finishes them (each runs 1.5 s and says 3 s: the
// estimates are honest, no running job overruns); a job as wide as the box comes after a few of
// them, with some of those still waiting ahead of it. It is reserved the box by the first pass
// after its placement, the reservation's start never moves later (nothing overruns), and it is
// leased by the first start it was promised, within one placement pass and one poll, while the
// stream still arrives.
void expect_the_wide_job_starts_as_promised(const MixedStream& m) {
  SCOPED_TRACE(m.fixture);
  jobctl::testing::TempDir tmp;
  Daemon d(tmp.file("data"), "127.0.0.1:0", 10, {"--config", write_box_config(tmp, m)});
  ASSERT_FALSE(d.url().empty()) << d.process().output();
  client::ApiClient api(d.url());
  auto argv = worker_argv(d.url(), "box", tmp.file("work"), {"--allow-commands", "--fake-gpus", fixture(m.fixture)});
  auto at = std::find(argv.begin(), argv.end(), "--device");
  argv.erase(at, at + 2);
  *(std::find(argv.begin(), argv.end(), "--wait-s") + 1) = "1";
  Process worker(argv);
  ASSERT_TRUE(jobctl::testing::poll_until([&] {
    auto w = api.list_workers();
    return w && !(*w)["workers"].empty();
  }, 30s)) << worker.output();

  auto submit = [&api](const json& spec) -> int64_t {
    auto r = api.submit_job(spec.dump());
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? (*r)["id"].get<int64_t>() : 0;
  };
  std::vector<int64_t> stream;
  int64_t wide = 0;
  int after_wide_started = 0;
  for (int k = 0; k < 400 && after_wide_started < 3; ++k) {
    stream.push_back(submit(box_job(m, "stream-" + std::to_string(k), m.widths[k % m.widths.size()], 1.5, 3)));
    if (k == 6) wide = submit(box_job(m, "wide", m.box, 1, 2.5));
    std::this_thread::sleep_for(400ms);
    if (wide == 0) continue;
    auto w = api.get_job(wide);
    ASSERT_TRUE(w);
    if (!first_event(*w, "leased").is_null()) ++after_wide_started;
  }
  const json wide_job = wait_job(api, wide, is_terminal, 120s);
  ASSERT_EQ(wide_job.value("state", ""), "succeeded") << wide_job.dump(2) << worker.output();
  const json reserved = first_event(wide_job, "reserved");
  ASSERT_TRUE(reserved.is_object()) << wide_job["events"].dump(2);
  const int64_t promised = reserved["detail"]["start_ms"];
  const int64_t leased_ms = first_event(wide_job, "leased")["time_ms"];
  // Reserved by the first pass after its placement, whatever waits ahead of it: the start it
  // shows is the plan's within one pass.
  const int64_t placed_ms = first_event(wide_job, "placed")["time_ms"];
  EXPECT_LE(reserved["time_ms"].get<int64_t>(), placed_ms + kPassAndPollMs) << wide_job["events"].dump(2);
  std::vector<int64_t> starts;
  for (const auto& e : wide_job["events"])
    if (e.value("type", "") == "reserved") starts.push_back(e["detail"]["start_ms"]);
  for (int64_t s : starts)
    EXPECT_LE(s, promised + kPassAndPollMs) << "the reservation moved later with no job overrunning: "
                                            << wide_job["events"].dump(2);
  EXPECT_LE(leased_ms, promised + kPassAndPollMs) << wide_job["events"].dump(2);
  int moved_later = 0;
  for (size_t k = 1; k < starts.size(); ++k) moved_later += starts[k] > starts[k - 1];
  std::printf("%s, widths cycling %zu: placed at 0 ms, first reserved start +%lld ms, leased +%lld ms "
              "(%lld ms after the promise), %zu reserved notes, %d later than the one before\n",
              m.fixture.c_str(), m.widths.size(), static_cast<long long>(promised - placed_ms),
              static_cast<long long>(leased_ms - placed_ms), static_cast<long long>(leased_ms - promised),
              starts.size(), moved_later);
  // The stream went on after it started.
  int later = 0;
  for (int64_t id : stream) {
    const json j = wait_job(api, id, is_terminal, 120s);
    ASSERT_EQ(j.value("state", ""), "succeeded") << j.dump(2);
    if (first_event(j, "leased")["time_ms"].get<int64_t>() > leased_ms) ++later;
  }
  EXPECT_GT(later, 0);
}

TEST(Backfill, AWideJobInAMixedStreamOnAFourGpuBoxStartsAsPromised) {
  expect_the_wide_job_starts_as_promised({"v100-sxm2-16gb-x4", "V100", 4, {1, 2}});
  expect_the_wide_job_starts_as_promised({"v100-sxm2-16gb-x4", "V100", 4, {1, 1, 3}});
}

TEST(Backfill, AWideJobInAMixedStreamOnAnEightGpuBoxStartsAsPromised) {
  expect_the_wide_job_starts_as_promised({"h100-sxm-x8", "H100", 8, {1, 2}});
  expect_the_wide_job_starts_as_promised({"h100-sxm-x8", "H100", 8, {2, 4, 1}});
}


// Fair share end to end (docs/cost-model.md, "Fair share"): jobctld with auth on, two users and a
// fake 2-GPU worker. alice queues twelve 1-GPU jobs (each sleeps 2 s, says 3 s); four seconds
// later, with both GPUs busy with her jobs since the start and eight of hers still waiting, bob
// queues three. The hand computation, with equal shares (1 each: normalised 0.5), the default
// weights (10000 x priority/100 + 1000 x F + 100 x age/7 days + 0 x size) and every job at
// priority 50:
//   - when bob's jobs are first planned, alice has all the usage (two GPUs for about 4 s) and bob
//     none: U_alice = 1, U_bob = 0, so F_alice = 2^(-1/0.5) = 0.25 and F_bob = 2^0 = 1;
//     scores: alice 5000 + 250 + age (4 s of 7 days: 0.0007) = 5250.0007, bob 5000 + 1000 = 6000.
//     Bob's three jobs come first, in their own submission order.
//   - they stay first until all three started: bob's usage is at most his three jobs' time
//     (3 x 2 s = 6 GPU-s, and less until they end), alice's at least her 8 GPU-s before bob
//     came, so U_bob < U_alice, F_bob > F_alice and bob's score stays over alice's.
// So: once bob's first job started, each GPU that frees goes to bob's next job until his three
// have started, and every job of alice's that starts after bob's first starts after bob's last.
// In first come, first served order bob's jobs would have started after all twelve of alice's.
TEST(FairShare, TwoUsersJobsInterleaveInFairShareOrder) {
  jobctl::testing::TempDir tmp;
  const std::string data = tmp.file("data");
  const std::string fleet = security::create_token(data, "fleet", "worker");
  const std::string admin = security::create_token(data, "root", "admin");
  const json pool = {{"gpu_model", "RTX4090"}, {"count", 2}, {"purchase_usd", 4000}, {"lifetime_years", 4},
                     {"utilisation", 0.5},      {"power_kw", 0.9}, {"electricity_usd_per_kwh", 0.15}};
  const std::string config = tmp.file("jobctld.json");
  std::ofstream(config) << json{{"workers", {{"max_lease_wait_s", 1}}},
                                {"cost", {{"pricing", "amortised"}, {"local_gpus", {pool}}}},
                                {"placement", {{"reevaluate_s", 1}, {"fair_share", {{"recompute_s", 1}}}}}}
                               .dump()
                        << "\n";
  Daemon d(data, "127.0.0.1:0", 10, {"--config", config, "--auth"});
  ASSERT_FALSE(d.url().empty()) << d.process().output();
  // Users whose tokens may submit command jobs, made by the admin over the API.
  auto commands_token = [&](const std::string& user) {
    auto r = security::http_as(d.url(), admin)
                 .request("POST", "/v1/tokens",
                          json{{"user", user}, {"role", "user"}, {"permissions", {"commands"}}}.dump());
    EXPECT_TRUE(r && r->status == 201) << (r ? r->body : r.error().message);
    return r && r->status == 201 ? security::body_of(*r).value("token", "") : "";
  };
  const std::string alice = commands_token("alice"), bob = commands_token("bob");
  client::HttpClientOptions as_alice, as_bob;
  as_alice.bearer_token = alice;
  as_bob.bearer_token = bob;
  client::ApiClient alice_api(d.url(), as_alice), bob_api(d.url(), as_bob);
  auto argv = worker_argv(d.url(), "box", tmp.file("work"), {"--allow-commands", "--fake-gpus", fixture("rtx4090-x2")});
  auto at = std::find(argv.begin(), argv.end(), "--device");
  argv.erase(at, at + 2);
  *(std::find(argv.begin(), argv.end(), "--wait-s") + 1) = "1";
  Process worker(argv, {.env = {"JOBCTL_TOKEN=" + fleet}});

  auto job = [](const std::string& name) {
    return json{{"name", name},
                {"command", {"/bin/sleep", "2"}},
                {"estimate", {{"hours", 3 / 3600.0}, {"gpu", "RTX4090"}}},
                {"resources", {{"gpu", "RTX4090"}, {"gpus", 1}}},
                {"placement", {{"mode", "local"}}}};
  };
  auto submit = [&job](client::ApiClient& api, const std::string& name) -> int64_t {
    auto r = api.submit_job(job(name).dump());
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    return r ? (*r)["id"].get<int64_t>() : 0;
  };
  std::vector<int64_t> alices, bobs;
  for (int k = 0; k < 12; ++k) alices.push_back(submit(alice_api, "alice-" + std::to_string(k)));
  // Both GPUs busy with alice's jobs, then four seconds more of her usage.
  ASSERT_TRUE(jobctl::testing::poll_until([&] {
    int running = 0;
    for (int64_t id : alices) {
      auto j = alice_api.get_job(id);
      if (j && (*j).value("state", "") == "running") ++running;
    }
    return running == 2;
  }, 60s)) << worker.output() << d.process().output();
  std::this_thread::sleep_for(4s);
  for (int k = 0; k < 3; ++k) bobs.push_back(submit(bob_api, "bob-" + std::to_string(k)));

  // jobctl's view: both users, bob's factor above alice's.
  auto shares = alice_api.http().request("GET", "/v1/fair-share");
  ASSERT_TRUE(shares && shares->status == 200) << (shares ? shares->body : shares.error().message);
  const json fs = json::parse(shares->body);
  EXPECT_TRUE(fs.value("enabled", false)) << fs.dump(2);
  std::map<std::string, double> factor;
  for (const auto& u : fs["users"]) factor[u.value("user", "")] = u.value("factor", -1.0);
  ASSERT_EQ(factor.count("alice"), 1u) << fs.dump(2);
  ASSERT_EQ(factor.count("bob"), 1u) << fs.dump(2);
  EXPECT_NEAR(factor["alice"], 0.25, 1e-9) << fs.dump(2);  // all the usage so far, half the shares
  EXPECT_NEAR(factor["bob"], 1.0, 1e-9) << fs.dump(2);
  // A waiting job's reason names its place in that order and why: alice's last job is last in
  // line, behind bob's three, at her lower factor (the places the first pass after bob's submits
  // published).
  json last_wait;
  jobctl::testing::poll_until([&] {
    auto j = alice_api.get_job(alices.back());
    last_wait = j ? (*j).value("waiting", json()) : json();
    return last_wait.is_object() && last_wait["fair_share"].is_object() &&
           last_wait["fair_share"].value("of", 0) > static_cast<int>(bobs.size());
  }, 10s, 50ms);
  ASSERT_TRUE(last_wait.is_object() && last_wait["fair_share"].is_object()) << last_wait.dump(2);
  const json& place = last_wait["fair_share"];
  EXPECT_EQ(place.value("user", ""), "alice") << last_wait.dump(2);
  EXPECT_GT(place.value("of", 0), static_cast<int>(bobs.size())) << last_wait.dump(2);
  EXPECT_EQ(place.value("place", 0), place.value("of", -1)) << "alice's newest job is last in line: " << last_wait.dump(2);
  // She has at least half the usage whenever this is published (bob's three jobs are the less):
  // her factor is at most 2^(-0.5/0.5).
  EXPECT_LE(place.value("factor", 1.0), 0.5) << last_wait.dump(2);
  EXPECT_NE(last_wait.value("reason", "").find("fair share: " + std::to_string(place.value("place", 0))),
            std::string::npos)
      << last_wait.dump(2);
  EXPECT_NE(last_wait.value("reason", "").find("in line (user alice's factor 0."), std::string::npos)
      << last_wait.dump(2);
  std::printf("fair share: alice's newest job waits: %s\n", last_wait.value("reason", "").c_str());
  std::map<int64_t, int64_t> leased;  // job -> its first lease
  for (auto [api, ids] : {std::pair{&alice_api, &alices}, std::pair{&bob_api, &bobs}})
    for (int64_t id : *ids) {
      const json j = wait_job(*api, id, is_terminal, 120s);
      ASSERT_EQ(j.value("state", ""), "succeeded") << j.dump(2) << worker.output();
      leased[id] = first_event(j, "leased")["time_ms"];
    }
  int64_t bob_first = INT64_MAX, bob_last = 0;
  for (int64_t id : bobs) {
    bob_first = std::min(bob_first, leased[id]);
    bob_last = std::max(bob_last, leased[id]);
  }
  int alice_after_bob = 0;
  std::string order;
  std::vector<std::pair<int64_t, std::string>> by_time;
  for (int64_t id : alices) by_time.emplace_back(leased[id], "a" + std::to_string(id));
  for (int64_t id : bobs) by_time.emplace_back(leased[id], "B" + std::to_string(id));
  std::sort(by_time.begin(), by_time.end());
  for (const auto& [t, name] : by_time) order += name + " ";
  for (int64_t id : alices) {
    if (leased[id] <= bob_first) continue;
    ++alice_after_bob;
    EXPECT_GT(leased[id], bob_last) << "alice's job " << id << " started between bob's jobs: " << order;
  }
  // Bob did not wait behind all of alice's jobs: several of hers started after all of his.
  EXPECT_GE(alice_after_bob, 3) << order;
  std::printf("fair share: lease order %s\n", order.c_str());
}

}  // namespace
}  // namespace jobctl::e2e
