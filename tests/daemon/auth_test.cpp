// Auth, roles, job ownership, per-token rate limits, per-user queue limits, budget holds and
// idempotent submits, through the route table without sockets: every refusal has its
// status, code and field, and leaves the store as it was.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/http/api_routes.h"
#include "daemon/http/auth_gate.h"
#include "daemon/http/auth_setup.h"
#include "net/json_body.h"
#include "daemon/ledger/ledger.h"
#include "tests/daemon/service_support.h"

namespace jobctl::daemon::http {
namespace {

using jobctl::daemon::testing::mlp_spec;
using jobctl::daemon::testing::ServiceFixture;
using nlohmann::json;

// The spend of every user is what the test sets (stands in for the ledger's query: the admission
// logic under test is the comparison and the hold).
class FixedSpend : public auth::SpendSource {
 public:
  Expected<double> spend_usd(const std::string& user, int64_t, int64_t) override {
    return user == "alice" ? alice_usd : 0.0;
  }
  double alice_usd = 0;
};

class Auth : public ::testing::Test {
 protected:
  explicit Auth(bool enabled = true) {
    options_.auth.enabled = enabled;
    options_.limits.requests_per_s = 0;  // unlimited unless a test sets it
    options_.limits.max_waiting_jobs_per_user = 3;
    options_.limits.monthly_budget_usd = 0;
    options_.limits.user_budgets_usd["alice"] = 100;
  }
  void SetUp() override { build(); }
  void build() {
    router_ = make_api_router(*f_.svc);
    auto installed = install_hardening(router_, *f_.svc, *f_.db, f_.clock, options_, &spend_);
    ASSERT_TRUE(installed) << installed.error().message;
    hardening_ = std::move(*installed);
  }

  std::string token(const std::string& user, const std::string& role) {
    auto t = hardening_->tokens.create(user, role);
    EXPECT_TRUE(t) << (t ? "" : t.error().message);
    return t ? t->secret : "";
  }

  net::HttpResponse call(const std::string& method, const std::string& target, const std::string& token,
                    const std::string& body = "", const std::string& idempotency_key = "") {
    net::HttpRequest req;
    req.method = method;
    req.target = target;
    req.body = body;
    req.content_type = body.empty() ? "" : "application/json";
    if (!token.empty()) req.set_header("Authorization", "Bearer " + token);
    if (!idempotency_key.empty()) req.set_header("Idempotency-Key", idempotency_key);
    if (auto st = net::parse_target(target, req); !st) return net::error_response(st.error());
    std::promise<net::HttpResponse> p;
    auto fut = p.get_future();
    router_.handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    return fut.get();
  }
  static json body_of(const net::HttpResponse& r) { return json::parse(r.body, nullptr, false); }
  static std::string header(const net::HttpResponse& r, const std::string& name) {
    for (const auto& [k, v] : r.headers)
      if (k == name) return v;
    return "";
  }

  // Expects the refusal and that the store did not change.
  void expect_refused(const std::string& method, const std::string& target, const std::string& token,
                      const std::string& body, int status, const std::string& code) {
    const std::string before = f_.dump();
    net::HttpResponse r = call(method, target, token, body);
    EXPECT_EQ(r.status, status) << method << " " << target << " -> " << r.body;
    json j = body_of(r);
    ASSERT_TRUE(j.is_object() && j.contains("error")) << r.body;
    EXPECT_EQ(j["error"]["code"], code) << r.body;
    EXPECT_EQ(f_.dump(), before) << "the store changed after " << method << " " << target;
  }

  int64_t submit(const std::string& token, const std::string& extra = "") {
    net::HttpResponse r = call("POST", "/v1/jobs", token, mlp_spec(extra));
    EXPECT_EQ(r.status, 201) << r.body;
    return body_of(r).value("id", int64_t{0});
  }

  ServiceFixture f_;
  FixedSpend spend_;
  auth::SecurityOptions options_;
  net::Router router_;
  std::unique_ptr<Hardening> hardening_;
};

TEST_F(Auth, MissingMalformedAndUnknownTokensAre401) {
  expect_refused("GET", "/v1/jobs", "", "", 401, "unauthenticated");
  expect_refused("POST", "/v1/jobs", "", mlp_spec(), 401, "unauthenticated");
  expect_refused("GET", "/v1/jobs", "jct_short", "", 401, "unauthenticated");
  expect_refused("GET", "/v1/jobs", "jct_" + std::string(64, 'a'), "", 401, "unauthenticated");
  net::HttpResponse r = call("GET", "/v1/jobs", "");
  EXPECT_EQ(header(r, "WWW-Authenticate"), "Bearer realm=\"jobctld\"");
  EXPECT_EQ(body_of(r)["error"]["field"], "Authorization");
  // Another scheme is not a bearer token.
  EXPECT_EQ(bearer_token("Basic dXNlcjpwYXNz"), "");
  EXPECT_EQ(bearer_token("bearer  abc "), "abc");
  // Public routes need none.
  EXPECT_EQ(call("GET", "/healthz", "").status, 200);
}

TEST_F(Auth, RolesReachOnlyTheirRoutes) {
  const std::string admin = token("root", "admin");
  const std::string user = token("alice", "user");
  const std::string worker = token("fleet", "worker");
  // A worker token reaches only the worker protocol.
  expect_refused("POST", "/v1/jobs", worker, mlp_spec(), 403, "permission_denied");
  expect_refused("GET", "/v1/jobs", worker, "", 403, "permission_denied");
  expect_refused("GET", "/v1/workers", worker, "", 403, "permission_denied");
  // A user token does not reach the worker protocol, nor the token admin.
  expect_refused("POST", "/v1/workers/register", user, R"({"capabilities":{}})", 403, "permission_denied");
  expect_refused("POST", "/v1/workers/1/lease", user, "", 403, "permission_denied");
  expect_refused("POST", "/v1/jobs/1/heartbeat", user, R"({"worker_id":1,"epoch":1})", 403, "permission_denied");
  expect_refused("POST", "/v1/tokens", user, R"({"user":"mallory","role":"admin"})", 403, "permission_denied");
  expect_refused("GET", "/v1/tokens", user, "", 403, "permission_denied");
  expect_refused("GET", "/metrics", user, "", 403, "permission_denied");
  // The right roles get through.
  net::HttpResponse reg = call("POST", "/v1/workers/register", worker, R"({"capabilities":{"cpu_cores":2}})");
  EXPECT_EQ(reg.status, 201) << reg.body;
  EXPECT_EQ(call("GET", "/v1/workers", user).status, 200);
  EXPECT_EQ(call("GET", "/metrics", admin).status, 200);
  EXPECT_EQ(call("POST", "/v1/workers/register", admin, R"({"capabilities":{}})").status, 201);
  json who = body_of(call("GET", "/v1/auth/whoami", worker));
  EXPECT_EQ(who["user"], "fleet");
  EXPECT_EQ(who["role"], "worker");
}

TEST_F(Auth, OnlyTokensGrantedTheCommandsPermissionSubmitCommandJobs) {
  const std::string admin = token("root", "admin");
  const std::string user = token("alice", "user");
  const std::string command = R"({"command":["python3","train.py"],"resources":{"gpu":"cpu"}})";
  expect_refused("POST", "/v1/jobs", user, command, 403, "permission_denied");
  EXPECT_EQ(body_of(call("POST", "/v1/jobs", user, command))["error"]["field"], "command");
  // A built-in model's job needs no permission.
  EXPECT_GT(submit(user), 0);
  // An admin grants it, on a new token; unknown permissions are refused naming the field.
  expect_refused("POST", "/v1/tokens", admin, R"({"user":"bob","role":"user","permissions":["root"]})", 400,
                 "invalid_argument");
  expect_refused("POST", "/v1/tokens", admin, R"({"user":"bob","role":"user","permissions":"commands"})", 400,
                 "invalid_argument");
  net::HttpResponse made = call("POST", "/v1/tokens", admin, R"({"user":"bob","role":"user","permissions":["commands"]})");
  ASSERT_EQ(made.status, 201) << made.body;
  EXPECT_EQ(body_of(made)["permissions"], json::array({"commands"}));
  const std::string bob = body_of(made)["token"];
  net::HttpResponse r = call("POST", "/v1/jobs", bob, command);
  EXPECT_EQ(r.status, 201) << r.body;
  // An admin may always.
  EXPECT_EQ(call("POST", "/v1/jobs", admin, command).status, 201);
}

TEST_F(Auth, UsersSeeAndCancelOnlyTheirOwnJobsAdminsAll) {
  const std::string admin = token("root", "admin");
  const std::string alice = token("alice", "user");
  const std::string bob = token("bob", "user");
  const int64_t a1 = submit(alice);
  const int64_t a2 = submit(alice);
  const int64_t b1 = submit(bob);
  // The owner is stored with the job.
  EXPECT_EQ(*f_.db->job_owner(a1), std::optional<std::string>("alice"));
  EXPECT_EQ(*f_.db->job_owner(b1), std::optional<std::string>("bob"));

  json alice_list = body_of(call("GET", "/v1/jobs", alice));
  ASSERT_EQ(alice_list["jobs"].size(), 2u);
  EXPECT_EQ(alice_list["jobs"][0]["id"], a1);
  EXPECT_EQ(alice_list["jobs"][1]["id"], a2);
  json bob_queued = body_of(call("GET", "/v1/jobs?state=queued", bob));
  ASSERT_EQ(bob_queued["jobs"].size(), 1u);
  EXPECT_EQ(bob_queued["jobs"][0]["id"], b1);
  EXPECT_EQ(body_of(call("GET", "/v1/jobs", admin))["jobs"].size(), 3u);

  // Another user's job does not exist for bob: 404, and nothing changes.
  expect_refused("GET", "/v1/jobs/" + std::to_string(a1), bob, "", 404, "not_found");
  expect_refused("POST", "/v1/jobs/" + std::to_string(a1) + "/cancel", bob, "", 404, "not_found");
  expect_refused("GET", "/v1/jobs/999", bob, "", 404, "not_found");
  EXPECT_EQ(call("GET", "/v1/jobs/" + std::to_string(a1), alice).status, 200);
  EXPECT_EQ(body_of(call("POST", "/v1/jobs/" + std::to_string(a1) + "/cancel", alice))["state"], "cancelled");
  EXPECT_EQ(body_of(call("POST", "/v1/jobs/" + std::to_string(b1) + "/cancel", admin))["state"], "cancelled");
}

TEST_F(Auth, AJobArrayIsItsOwnersToListAndCancel) {
  const std::string admin = token("root", "admin");
  const std::string bob = token("bob", "user");
  net::HttpResponse made = call("POST", "/v1/tokens", admin, R"({"user":"alice","role":"user","permissions":["commands"]})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string alice = body_of(made)["token"];
  const std::string sweep = R"({"command":["true"],"resources":{"gpu":"cpu"},"placement":{"queue_if_unplaceable":true},
                                "sweep":{"grid":{"seed":[1,2]}}})";
  // A sweep is command jobs: a token without the permission stores none of them.
  expect_refused("POST", "/v1/arrays", bob, sweep, 403, "permission_denied");
  net::HttpResponse r = call("POST", "/v1/arrays", alice, sweep);
  ASSERT_EQ(r.status, 201) << r.body;
  const int64_t array_id = body_of(r)["array_id"];
  ASSERT_EQ(body_of(r)["jobs"].size(), 2u);
  const std::string listing = "/v1/jobs?array=" + std::to_string(array_id);
  EXPECT_EQ(body_of(call("GET", listing, alice))["jobs"].size(), 2u);
  // Another user's array does not exist for bob: listed empty, not cancelled, nothing changes.
  EXPECT_TRUE(body_of(call("GET", listing, bob))["jobs"].empty());
  expect_refused("POST", "/v1/arrays/" + std::to_string(array_id) + "/cancel", bob, "", 404, "not_found");
  json cancelled = body_of(call("POST", "/v1/arrays/" + std::to_string(array_id) + "/cancel", alice));
  ASSERT_EQ(cancelled["jobs"].size(), 2u) << cancelled.dump();
  for (const auto& j : cancelled["jobs"]) EXPECT_EQ(j["state"], "cancelled");
}

TEST_F(Auth, TokensAreStoredHashedListedAndRevoked) {
  const std::string admin = token("root", "admin");
  net::HttpResponse made = call("POST", "/v1/tokens", admin, R"({"user":"carol","role":"user"})");
  ASSERT_EQ(made.status, 201) << made.body;
  const std::string secret = body_of(made)["token"];
  const int64_t id = body_of(made)["id"];
  EXPECT_EQ(secret.size(), 4u + 64u);
  const std::string dump = f_.dump();
  EXPECT_EQ(dump.find(secret), std::string::npos) << "the secret itself must not be stored";
  EXPECT_NE(dump.find(auth::TokenService::sha256_hex(secret)), std::string::npos);
  json list = body_of(call("GET", "/v1/tokens", admin));
  ASSERT_EQ(list["tokens"].size(), 2u);
  EXPECT_FALSE(list["tokens"][1].contains("token"));
  EXPECT_EQ(list["tokens"][1]["user"], "carol");

  EXPECT_EQ(call("GET", "/v1/jobs", secret).status, 200);
  net::HttpResponse revoked = call("POST", "/v1/tokens/" + std::to_string(id) + "/revoke", admin);
  EXPECT_EQ(revoked.status, 200) << revoked.body;
  EXPECT_TRUE(body_of(revoked)["revoked_ms"].is_number());
  expect_refused("GET", "/v1/jobs", secret, "", 401, "unauthenticated");
  // Revoking again is a no-op; an unknown one is 404.
  EXPECT_EQ(call("POST", "/v1/tokens/" + std::to_string(id) + "/revoke", admin).status, 200);
  expect_refused("POST", "/v1/tokens/77/revoke", admin, "", 404, "not_found");
}

TEST_F(Auth, MalformedTokenRequestsNameTheirFieldAndChangeNothing) {
  const std::string admin = token("root", "admin");
  struct Case { std::string body; std::string field; };
  for (const Case& c : {Case{"", "body"}, Case{"[1]", "body"}, Case{"{", "body"},
                        Case{R"({"role":"user"})", "user"}, Case{R"({"user":"a b","role":"user"})", "user"},
                        Case{R"({"user":"","role":"user"})", "user"},
                        Case{R"({"user":"x","role":"root"})", "role"}, Case{R"({"user":"x","role":7})", "role"},
                        Case{R"({"user":"x","extra":1})", "extra"}}) {
    const std::string before = f_.dump();
    net::HttpResponse r = call("POST", "/v1/tokens", admin, c.body);
    EXPECT_EQ(r.status, 400) << c.body << " -> " << r.body;
    EXPECT_EQ(body_of(r)["error"]["field"], c.field) << c.body << " -> " << r.body;
    EXPECT_EQ(f_.dump(), before) << c.body;
  }
  expect_refused("POST", "/v1/tokens/abc/revoke", admin, "", 400, "invalid_argument");
  expect_refused("GET", "/v1/tokens?x=1", admin, "", 400, "invalid_argument");
}

TEST_F(Auth, RateLimitPerTokenAnswers429WithRetryAfter) {
  options_.limits.requests_per_s = 2;
  options_.limits.burst = 3;
  build();
  const std::string alice = token("alice", "user");
  const std::string bob = token("bob", "user");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(call("GET", "/v1/jobs", alice).status, 200) << i;
  net::HttpResponse r = call("GET", "/v1/jobs", alice);
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(body_of(r)["error"]["code"], "rate_limited");
  EXPECT_EQ(header(r, "Retry-After"), "1");
  EXPECT_EQ(call("GET", "/v1/jobs", bob).status, 200) << "buckets are per token";
  f_.clock.advance_ms(500);  // one request's worth refills at 2/s
  EXPECT_EQ(call("GET", "/v1/jobs", alice).status, 200);
  EXPECT_EQ(call("GET", "/v1/jobs", alice).status, 429);
}

TEST_F(Auth, WaitingJobsPerUserAreLimited) {
  const std::string alice = token("alice", "user");
  const std::string bob = token("bob", "user");
  for (int i = 0; i < 3; ++i) submit(alice);
  const std::string before = f_.dump();
  net::HttpResponse r = call("POST", "/v1/jobs", alice, mlp_spec());
  EXPECT_EQ(r.status, 429) << r.body;
  EXPECT_EQ(body_of(r)["error"]["code"], "limit_exceeded");
  EXPECT_NE(body_of(r)["error"]["message"].get<std::string>().find("max_waiting_jobs_per_user"), std::string::npos);
  EXPECT_EQ(f_.dump(), before);
  submit(bob);  // per user
  // A cancelled job no longer counts.
  EXPECT_EQ(call("POST", "/v1/jobs/1/cancel", alice).status, 200);
  submit(alice);
}

TEST_F(Auth, AJobBeyondTheMonthlyBudgetIsHeldWithTheReason) {
  const std::string alice = token("alice", "user");
  const std::string bob = token("bob", "user");
  spend_.alice_usd = 99.5;
  const int64_t under = submit(alice);
  EXPECT_EQ(body_of(call("GET", "/v1/jobs/" + std::to_string(under), alice))["state"], "queued");
  spend_.alice_usd = 100.25;
  net::HttpResponse r = call("POST", "/v1/jobs", alice, mlp_spec());
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(body_of(r)["state"], "held");
  json detail = body_of(call("GET", "/v1/jobs/" + body_of(r)["id"].dump(), alice));
  EXPECT_EQ(detail["state"], "held");
  ASSERT_EQ(detail["events"].size(), 2u);
  EXPECT_EQ(detail["events"][1]["type"], "held");
  const std::string reason = detail["events"][1]["detail"]["reason"];
  EXPECT_NE(reason.find("monthly budget"), std::string::npos) << reason;
  EXPECT_NE(reason.find("$100.25"), std::string::npos) << reason;
  // Why it waits says the same, and it is in no queue.
  EXPECT_EQ(detail["waiting"]["reason"], "held: " + reason) << detail["waiting"].dump();
  EXPECT_EQ(detail["waiting"]["position"], nullptr) << detail["waiting"].dump();
  EXPECT_EQ(detail["waiting"]["expected_start_ms"], nullptr) << detail["waiting"].dump();
  const json listed = body_of(call("GET", "/v1/jobs?state=held", alice));
  ASSERT_EQ(listed["jobs"].size(), 1u) << listed.dump();
  EXPECT_EQ(listed["jobs"][0]["waiting"], detail["waiting"]);
  EXPECT_EQ(f_.svc->queued_count(), 1u) << "a held job is not offered to workers";
  EXPECT_EQ(body_of(call("POST", "/v1/jobs", bob, mlp_spec()))["state"], "queued") << "bob has no budget";
  EXPECT_EQ(auth::month_start_ms(1795320425894), 1793491200000);  // 2026-11-01T00:00:00Z
}

// The same with the real source: the cost ledger (daemon/ledger/ledger.h).
TEST(AuthLedger, BudgetHoldsReadTheCostLedger) {
  ServiceFixture f;
  auth::SecurityOptions o;
  o.auth.enabled = true;
  o.limits.requests_per_s = 0;
  o.limits.monthly_budget_usd = 50;
  net::Router router = make_api_router(*f.svc);
  auto installed = install_hardening(router, *f.svc, *f.db, f.clock, o);  // spend: the ledger
  ASSERT_TRUE(installed) << installed.error().message;
  auto& h = *installed;
  auto alice = h->tokens.create("alice", "user");
  ASSERT_TRUE(alice);
  auto submit = [&]() {
    net::HttpRequest req;
    req.method = "POST";
    req.target = req.path = "/v1/jobs";
    req.body = mlp_spec();
    req.content_type = "application/json";
    req.set_header("Authorization", "Bearer " + alice->secret);
    std::promise<net::HttpResponse> p;
    auto fut = p.get_future();
    router.handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    return json::parse(fut.get().body);
  };
  EXPECT_EQ(submit()["state"], "queued");
  ledger::Ledger ledger(*f.db);
  const int64_t now = f.clock.now_ms();
  // 30 minutes at $120/h this month: $60 > $50; bob's spend does not count for alice.
  ASSERT_TRUE(ledger.accrue({0, "instance:i-1", "on_demand", now - 3'600'000, now - 1'800'000, 120.0, "alice", 0}));
  ASSERT_TRUE(ledger.accrue({0, "instance:i-2", "on_demand", now - 3'600'000, now, 500.0, "bob", 0}));
  f.clock.advance_ms(10'000);  // past the spend cache
  json held = submit();
  EXPECT_EQ(held["state"], "held");
  auto spend = h->ledger_spend.month_by_kind();
  ASSERT_TRUE(spend);
  EXPECT_NEAR((*spend)["on_demand"], 560.0, 0.01);
}

TEST_F(Auth, ARetriedSubmitWithTheSameIdempotencyKeyReturnsTheFirstJob) {
  const std::string alice = token("alice", "user");
  const std::string bob = token("bob", "user");
  net::HttpResponse first = call("POST", "/v1/jobs", alice, mlp_spec(), "k-1");
  ASSERT_EQ(first.status, 201);
  const std::string after_first = f_.dump();
  net::HttpResponse again = call("POST", "/v1/jobs", alice, mlp_spec(), "k-1");
  EXPECT_EQ(again.status, 201);
  EXPECT_EQ(body_of(again)["id"], body_of(first)["id"]);
  EXPECT_EQ(f_.dump(), after_first);
  // Keys are per user.
  EXPECT_NE(body_of(call("POST", "/v1/jobs", bob, mlp_spec(), "k-1"))["id"], body_of(first)["id"]);
  EXPECT_EQ(call("POST", "/v1/jobs", alice, mlp_spec(), std::string(201, 'k')).status, 400);
}

class AuthOff : public Auth {
 protected:
  AuthOff() : Auth(false) {}
};

TEST_F(AuthOff, EverythingIsOpenButTokenAdministration) {
  net::HttpResponse r = call("POST", "/v1/jobs", "", mlp_spec());
  EXPECT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(*f_.db->job_owner(body_of(r)["id"]), std::optional<std::string>(""));
  EXPECT_EQ(call("GET", "/v1/jobs", "").status, 200);
  EXPECT_EQ(call("GET", "/metrics", "").status, 200);
  expect_refused("POST", "/v1/tokens", "", R"({"user":"x","role":"admin"})", 403, "permission_denied");
  // Idempotency keys work without auth too (owner "").
  net::HttpResponse a = call("POST", "/v1/jobs", "", mlp_spec(), "same");
  net::HttpResponse b = call("POST", "/v1/jobs", "", mlp_spec(), "same");
  EXPECT_EQ(body_of(a)["id"], body_of(b)["id"]);
}

}  // namespace
}  // namespace jobctl::daemon::http
