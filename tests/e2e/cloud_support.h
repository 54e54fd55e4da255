// Helpers of the cloud end-to-end tests (spot_interruption_test.cpp, savings_move_test.cpp):
// jobctl-cloudsim as a real process, and what jobctld and cloudsim say about the instances.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "client/api_client.h"
#include "cloud/command_template.h"
#include "cloud/sim_provider.h"
#include "tests/support/process.h"
#include "tests/support/server_process.h"
#include "tests/support/temp_dir.h"
#include "tests/support/poll.h"

namespace jobctl::e2e {

// jobctl-cloudsim at F = 60 (a 10-minute simulated notice is 10 real seconds); its instances run
// the real worker with one BLAS thread (bit-exact across workers), polling the notice every 200 ms.
class CloudSim {
 public:
  // `worker_flags`: more jobctl-worker flags for the instances' workers (e.g. " --allow-commands").
  explicit CloudSim(const std::string& state_dir, const std::string& worker_flags = "")
      : process_({jobctl::testing::env_or_fail("JOBCTL_CLOUDSIM"), "--listen", "127.0.0.1:0", "--state-dir",
                  state_dir, "--time-factor", "60", "--notice-seconds", "600", "--worker-command",
                  cloud::shell_quote(jobctl::testing::env_or_fail("JOBCTL_WORKER")) + " --trainer " +
                      cloud::shell_quote(jobctl::testing::env_or_fail("JOBCTL_TRAIN")) +
                      " --device cpu --threads 1 --wait-s 2 --keep-work-dirs --notice-interval-ms 200" +
                      worker_flags}) {
    using namespace std::chrono_literals;
    const nlohmann::json started = jobctl::testing::listening_line(process_, 30s);
    if (!started.is_null()) url_ = started.value("url", "");
    if (url_.empty()) ADD_FAILURE() << "jobctl-cloudsim did not start:\n" << process_.output();
  }
  const std::string& url() const { return url_; }
  jobctl::testing::Process& process() { return process_; }

 private:
  jobctl::testing::Process process_;
  std::string url_;
};

// jobctld's configuration file in `tmp`: the provisioner on cloudsim, polling every second, idle
// instances stopped after 3 s, tagged `tag`; `more`: other top-level sections ("placement", "cost").
inline std::string write_config(jobctl::testing::TempDir& tmp, const std::string& cloudsim_url, const std::string& tag,
                                const nlohmann::json& more = nlohmann::json::object()) {
  nlohmann::json doc = {{"cloud",
                         {{"provider", "sim"},
                          {"tag", tag},
                          {"poll_s", 1},
                          {"idle_timeout_s", 3},
                          {"sim", {{"url", cloudsim_url}}}}}};
  doc.update(more);
  const std::string path = tmp.file("jobctld-" + tag + ".json");
  std::ofstream(path) << doc.dump() << "\n";
  return path;
}

// GET /v1/instances's list (by value: safe to range over).
inline nlohmann::json instances(client::ApiClient& api) {
  auto r = api.http().request("GET", "/v1/instances");
  if (!r || r->status != 200) return nlohmann::json::array();
  return nlohmann::json::parse(r->body, nullptr, false).value("instances", nlohmann::json::array());
}

// Waits until every instance jobctld knows has ended, and cloudsim agrees.
inline bool all_instances_ended(client::ApiClient& api, cloud::SimProvider& sim, const std::string& tag,
                                std::chrono::seconds timeout) {
  using namespace std::chrono_literals;
  return jobctl::testing::poll_until([&] {
    bool live = false;
    for (const auto& i : instances(api)) live |= i.value("state", "") != "terminated";
    auto d = sim.describe(tag);
    if (d)
      for (const auto& i : *d) live |= !i.terminated();
    return !live && d;
  }, timeout, 200ms);
}

}  // namespace jobctl::e2e
