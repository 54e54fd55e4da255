// What a user sees of others (attack A10): the spend report was not filtered per user and
// /v1/workers showed other users' job ids; a user sees only their own now, admins everything.
// And the refusal of a role names the roles it needs in plain words (A18: "needs a admin or
// admin token").
#include <sqlite3.h>

#include "tests/security/security_support.h"

namespace jobctl::security {
namespace {

// Bills `usd` to `user`'s job in the daemon's ledger (as the placement service's accrual would),
// written into the database before the daemon starts.
void bill(const std::string& data_dir, const std::string& user, int64_t job, double usd) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((data_dir + "/jobctl.db").c_str(), &db), SQLITE_OK);
  const std::string sql =
      "INSERT INTO ledger (resource, start_ms, end_ms, job_id, kind, usd_per_hour, on_demand_usd_per_hour, user, "
      "billed_seconds, usd, on_demand_usd) VALUES ('local:1:gpu" + std::to_string(job) + "', 1000, 3601000, " +
      std::to_string(job) + ", 'local', " + std::to_string(usd) + ", 3.0, '" + user + "', 3600, " +
      std::to_string(usd) + ", 3.0)";
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(db);
}

std::vector<std::string> keys(const json& report) {
  std::vector<std::string> out;
  for (const auto& g : report.value("groups", json::array())) out.push_back(g.value("key", ""));
  return out;
}

TEST(PerUserViews, SpendAndWorkersShowAUserOnlyTheirOwnJobs) {
  TempDir dir;
  const std::string data = dir.file("data");
  const std::string admin = create_token(data, "root", "admin");
  const std::string alice = create_token(data, "alice", "user");
  const std::string bob = create_token(data, "bob", "user");
  const std::string fleet = create_token(data, "fleet", "worker");
  bill(data, "alice", 1, 1.25);
  bill(data, "bob", 2, 7.5);
  // No cost-based placement: one worker may take both jobs.
  std::vector<std::string> flags = config_flag(dir, {{"placement", {{"enabled", false}}}});
  flags.push_back("--auth");
  Jobctld d(data, flags);
  ASSERT_TRUE(d.ok());

  const std::string spend = "/v1/reports/spend?group_by=user&from=0&to=99999999999";
  const json mine = body_of(*http_as(d.url(), alice).request("GET", spend));
  EXPECT_EQ(keys(mine), std::vector<std::string>{"alice"}) << mine.dump();
  EXPECT_DOUBLE_EQ(mine["total"]["usd"].get<double>(), 1.25);
  const json by_job = body_of(*http_as(d.url(), bob).request("GET", "/v1/reports/spend?group_by=job&from=0&to=99999999999"));
  EXPECT_EQ(keys(by_job), std::vector<std::string>{"job 2"}) << by_job.dump();
  const json all = body_of(*http_as(d.url(), admin).request("GET", spend));
  EXPECT_EQ(all["groups"].size(), 2u) << all.dump();
  // The fleet plan sums every user's jobs: a user token is refused; an admin's is answered (here
  // a plan of no jobs: these ledger rows belong to no stored job, so there is no V100 history).
  const std::string plan = "/v1/reports/plan?from=0&gpu=V100&purchase_usd=2000";
  EXPECT_EQ(http_as(d.url(), alice).request("GET", plan)->status, 403);
  auto admin_plan = http_as(d.url(), admin).request("GET", plan);
  EXPECT_EQ(admin_plan->status, 200) << admin_plan->body;
  EXPECT_EQ(json::parse(admin_plan->body)["jobs"], 0) << admin_plan->body;

  // One worker runs a job of each.
  const int64_t a = submit(d.url(), alice, small_spec("a"));
  const int64_t b = submit(d.url(), bob, small_spec("b"));
  const Worker w = register_worker(d.url(), fleet, "shared");
  ASSERT_TRUE(lease(d.url(), fleet, w).is_object());
  ASSERT_TRUE(lease(d.url(), fleet, w).is_object());
  auto jobs_on_worker = [&](const std::string& token) {
    const json ws = body_of(*http_as(d.url(), token).request("GET", "/v1/workers"));
    for (const auto& x : ws.value("workers", json::array()))
      if (x.value("id", int64_t{0}) == w.id) return x.value("jobs", json::array());
    return json::array();
  };
  EXPECT_EQ(jobs_on_worker(alice), json::array({a}));
  EXPECT_EQ(jobs_on_worker(bob), json::array({b}));
  EXPECT_EQ(jobs_on_worker(admin), json::array({a, b}));
}

TEST(PerUserViews, ARefusedRoleIsNamedInPlainWords) {
  TempDir dir;
  const std::string data = dir.file("data");
  const std::string alice = create_token(data, "alice", "user");
  const std::string fleet = create_token(data, "fleet", "worker");
  Jobctld d(data, {"--auth"});
  ASSERT_TRUE(d.ok());
  auto tokens = http_as(d.url(), alice).request("POST", "/v1/tokens", R"({"user":"mallory","role":"admin"})");
  ASSERT_TRUE(tokens);
  EXPECT_EQ(tokens->status, 403);
  const std::string message = body_of(*tokens)["error"]["message"];
  EXPECT_NE(message.find("it needs an admin token"), std::string::npos) << message;
  EXPECT_EQ(message.find("a admin"), std::string::npos) << message;
  auto jobs = http_as(d.url(), fleet).request("GET", "/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_NE(body_of(*jobs)["error"]["message"].get<std::string>().find("it needs a user or an admin token"),
            std::string::npos)
      << jobs->body;
}

}  // namespace
}  // namespace jobctl::security
