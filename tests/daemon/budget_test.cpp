// Budgets that hold (docs/cost-model.md, "Budgets"), with real parts: the store (SQLite), the
// placement service (the job's own estimate is its placement quote), owned-GPU billing into the
// cost ledger (the spend), the auth gate and the submit route; only the clock is a manual one.
//
// At submit: the spend this month + the user's queued and running jobs' remaining estimates +
// this job's estimate is compared with the budget; over it, the job is held with each figure in
// the reason. While jobs run: a user whose spend crosses the budget gets an `over_budget` event on
// each open job; under "finish" running jobs run on and waiting ones are held; under "stop" the
// running ones are also checkpointed (moved) and held.
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/auth/auth_budget_watch.h"
#include "daemon/http/api_routes.h"
#include "daemon/http/auth_setup.h"
#include "net/json_body.h"
#include "tests/daemon/placement_support.h"

namespace jobctl::daemon::testing {
namespace {

using nlohmann::json;

// One owned H100 at about $1.82 per GPU-hour (amortised).
placement::PlacementSettings owned_h100() {
  placement::PlacementSettings s;
  cost::LocalGpuInventory g;
  g.gpu_model = "H100";
  g.count = 1;
  g.purchase_usd = 30000;
  g.lifetime_years = 4;
  g.utilisation = 0.5;
  g.power_kw = 0.7;
  g.electricity_usd_per_kwh = 0.15;
  s.local_gpus = {g};
  return s;
}

// A command job said to take `hours` on an H100.
std::string command_spec(const std::string& name, double hours) {
  return json{{"name", name},
              {"command", {"/bin/true"}},
              {"estimate", {{"hours", hours}, {"gpu", "H100"}}},
              {"resources", {{"gpu", "H100"}, {"gpus", 1}}}}
      .dump();
}

class Budgets : public ::testing::Test {
 protected:
  void start(double budget, const std::string& policy) {
    auth::SecurityOptions o;
    o.auth.enabled = true;
    o.limits.requests_per_s = 0;
    o.limits.user_budgets_usd["alice"] = budget;
    o.limits.over_budget = policy;
    router_ = http::make_api_router(*f_.svc);
    auto installed = http::install_hardening(router_, *f_.svc, *f_.db, f_.clock, o);  // spend: the ledger
    ASSERT_TRUE(installed) << installed.error().message;
    h_ = std::move(*installed);
    h_->admission.set_job_estimate([this](const train::JobSpec& spec) { return f_.placement->estimated_cost_usd(spec); });
    auto t = h_->tokens.create("alice", "user", {"commands"});
    ASSERT_TRUE(t) << t.error().message;
    alice_ = t->secret;
    watch_.emplace(*f_.db, f_.clock, *f_.svc, h_->admission, h_->ledger_spend, policy);
    worker_ = f_.add_worker({{"NVIDIA H100 80GB HBM3", 81559}}, {}, true);  // runs command jobs
  }

  json submit(const std::string& spec) {
    net::HttpRequest req;
    req.method = "POST";
    req.target = req.path = "/v1/jobs";
    req.body = spec;
    req.content_type = "application/json";
    req.set_header("Authorization", "Bearer " + alice_);
    std::promise<net::HttpResponse> p;
    auto fut = p.get_future();
    router_.handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    const net::HttpResponse r = fut.get();
    EXPECT_EQ(r.status, 201) << r.body;
    json j = json::parse(r.body, nullptr, false);
    EXPECT_TRUE(f_.placement->reevaluate());
    return j;
  }

  json detail(int64_t id) {
    auto d = f_.svc->get_job(id);
    EXPECT_TRUE(d);
    json events = json::array();
    for (const auto& e : d->events)
      events.push_back(json{{"type", e.type}, {"detail", e.detail_json.empty() ? json() : json::parse(e.detail_json)}});
    return {{"state", std::string(scheduler::to_string(d->job.state))}, {"events", events}};
  }

  static json last_event(const json& job, const std::string& type) {
    json last;
    for (const auto& e : job["events"])
      if (e["type"] == type) last = e;
    return last;
  }

  PlacementFixture f_{owned_h100()};
  net::Router router_;
  std::unique_ptr<http::Hardening> h_;
  std::string alice_;
  std::optional<auth::BudgetWatch> watch_;
  int64_t worker_ = 0;
};

TEST_F(Budgets, AtSubmitTheJobsOwnEstimateAndTheQueuedJobsRemainingCountAndTheReasonNamesEachFigure) {
  start(0.25, "finish");
  // About $0.18 each (0.1 h at $1.82/h): the first fits the $0.25 budget, the second does not.
  const json first = submit(command_spec("first", 0.1));
  ASSERT_EQ(first["state"], "queued") << first.dump(2);
  const int64_t first_id = first["id"];
  ASSERT_TRUE(f_.job(first_id).chosen) << f_.placement_of(first_id).dump(2);
  const double first_estimate = f_.job(first_id).chosen->estimated_cost_usd;
  ASSERT_GT(first_estimate, 0.15);
  ASSERT_LT(first_estimate, 0.25);

  const json second = submit(command_spec("second", 0.1));
  EXPECT_EQ(second["state"], "held") << second.dump(2);
  const json held = last_event(detail(second["id"]), "held");
  const std::string reason = held["detail"].value("reason", "");
  const auto quote = f_.placement->quote(command_spec("second", 0.1));
  ASSERT_TRUE(quote);
  const double own = (*quote)["chosen"]["estimated_cost_usd"];
  EXPECT_NE(reason.find("spent $0.0000 this month"), std::string::npos) << reason;
  EXPECT_NE(reason.find(auth::budget_usd(first_estimate) + " still estimated for 1 queued or running job"),
            std::string::npos)
      << reason;
  EXPECT_NE(reason.find("this job's estimate " + auth::budget_usd(own)), std::string::npos) << reason;
  EXPECT_NE(reason.find("= " + auth::budget_usd(first_estimate + own) + " > budget $0.2500"), std::string::npos)
      << reason;
  EXPECT_DOUBLE_EQ(held["detail"]["estimate_usd"].get<double>(), own);
  EXPECT_DOUBLE_EQ(held["detail"]["committed_usd"].get<double>(), first_estimate);

  // A small job still fits beside the first: $0.18 + about $0.018 <= $0.25.
  EXPECT_EQ(submit(command_spec("small", 0.01))["state"], "queued");
}

TEST_F(Budgets, CrossingTheBudgetWhileRunningUnderFinishLetsRunningJobsFinishAndHoldsWaitingOnes) {
  start(0.05, "finish");
  // Said to take 36 s (about $0.018): under the budget at submit.
  const int64_t running = submit(command_spec("runs-long", 0.01))["id"];
  ASSERT_EQ(f_.lease(worker_), running);
  const int64_t waiting = submit(command_spec("waits", 0.001))["id"];
  ASSERT_EQ(detail(waiting)["state"], "placed");
  ASSERT_TRUE(watch_->check());
  EXPECT_TRUE(last_event(detail(running), "over_budget").is_null()) << "not over budget yet";

  // It runs for an hour: about $1.82 spent, past the $0.05 budget.
  f_.clock.advance_ms(3'600'000);
  auto over = watch_->check();
  ASSERT_TRUE(over) << over.error().message;
  EXPECT_EQ(*over, 1);
  const json r = detail(running);
  const json raised = last_event(r, "over_budget");
  ASSERT_TRUE(raised.is_object()) << r.dump(2);
  EXPECT_GT(raised["detail"]["spent_usd"].get<double>(), 1.5);
  EXPECT_EQ(raised["detail"]["policy"], "finish");
  EXPECT_NE(raised["detail"].value("reason", "").find("> budget $0.0500"), std::string::npos) << raised.dump(2);
  EXPECT_FALSE(f_.svc->move_requested(running)) << "finish: the running job runs on";
  EXPECT_EQ(r["state"], "placed");  // leased (no heartbeat yet), untouched
  EXPECT_EQ(detail(waiting)["state"], "held");
  EXPECT_FALSE(last_event(detail(waiting), "over_budget").is_null());
  // A later submit is held at once (its estimate is on top of the spend).
  EXPECT_EQ(submit(command_spec("later", 0.001))["state"], "held");
  // The event is raised once per crossing, not every check.
  ASSERT_TRUE(watch_->check());
  int raised_count = 0;
  const json after = detail(running);
  for (const auto& e : after["events"]) raised_count += e["type"] == "over_budget";
  EXPECT_EQ(raised_count, 1);
}

TEST_F(Budgets, CrossingTheBudgetWhileRunningUnderStopCheckpointsAndHoldsTheRunningJobs) {
  start(0.05, "stop");
  const int64_t running = submit(command_spec("runs-long", 0.01))["id"];
  ASSERT_EQ(f_.lease(worker_), running);
  f_.clock.advance_ms(3'600'000);
  auto over = watch_->check();
  ASSERT_TRUE(over) << over.error().message;
  EXPECT_EQ(*over, 1);
  ASSERT_TRUE(f_.svc->move_requested(running)) << detail(running).dump(2);
  // The worker checkpoints and gives the job back: it is held, not queued again.
  const store::JobRow row = f_.job(running);
  ASSERT_TRUE(row.lease());
  auto back = f_.svc->preempt(running, protocol::PreemptionReport{protocol::LeaseRef{row.lease()->worker_id, row.lease()->epoch}, "move"});
  ASSERT_TRUE(back) << back.error().message;
  const json r = detail(running);
  EXPECT_EQ(r["state"], "held") << r.dump(2);
  EXPECT_NE(last_event(r, "held")["detail"].value("reason", "").find("limits.over_budget: stop"), std::string::npos)
      << r.dump(2);
  EXPECT_EQ(f_.svc->queued_count(), 0u) << "a held job is offered to no worker";
}

}  // namespace
}  // namespace jobctl::daemon::testing
