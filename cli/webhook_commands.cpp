// `jobctl webhook add URL [--event E]...`, `jobctl webhook ls`, `jobctl webhook rm ID`,
// `jobctl webhook deliveries ID`: a user's webhooks (docs/notifications.md) through jobctld's
// /v1/webhooks routes.
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cli/cost_command_support.h"
#include "cli/table.h"
#include "client/http_client.h"

namespace jobctl::cli {

using nlohmann::json;

namespace {

void print_rows(CliContext& ctx, const std::vector<std::string>& header, const std::vector<std::vector<std::string>>& rows,
                const char* none) {
  if (ctx.output == "csv")
    print_csv(*ctx.out, header, rows);
  else if (rows.empty())
    *ctx.out << none << "\n";
  else
    print_table(*ctx.out, header, rows);
}

std::string joined(const json& list) {
  std::string out;
  if (list.is_array())
    for (const auto& e : list) out += (out.empty() ? "" : ",") + (e.is_string() ? e.get<std::string>() : e.dump());
  return out;
}

}  // namespace

void add_webhook_commands(CLI::App& app, CliContext& ctx) {
  auto* group = app.add_subcommand("webhook", "webhooks: jobctld POSTs your jobs' events to a URL, signed (docs/notifications.md)");
  group->require_subcommand(1);

  auto* add = group->add_subcommand("add", "register a webhook; prints its signing secret once");
  auto url = std::make_shared<std::string>();
  auto events = std::make_shared<std::vector<std::string>>();
  add->add_option("url", *url, "the receiver's http:// or https:// URL")->required();
  add->add_option("--event", *events,
                  "an event to send: succeeded, failed, cancelled, held, over_budget, moved (repeatable; default: all)");
  add->callback([&ctx, url, events] {
    check_output(ctx, {"table", "json"});
    json body{{"url", *url}};
    if (!events->empty()) body["events"] = *events;
    json r = daemon_call(ctx, "POST", "/v1/webhooks", body.dump());
    if (ctx.output == "json") {
      *ctx.out << r.dump(2) << "\n";
      return;
    }
    *ctx.out << "webhook " << r.value("id", int64_t{0}) << " sends " << joined(r["events"]) << " to "
             << r.value("url", "") << "\n"
             << "secret: " << r.value("secret", "") << "\n"
             << "Keep the secret: it is shown only now. Verify each delivery's Jobctl-Signature with it "
                "(docs/notifications.md).\n";
  });

  auto* ls = group->add_subcommand("ls", "list your webhooks");
  ls->callback([&ctx] {
    check_output(ctx, {"table", "json", "csv"});
    json r = daemon_call(ctx, "GET", "/v1/webhooks");
    if (ctx.output == "json") {
      *ctx.out << r.dump(2) << "\n";
      return;
    }
    const int64_t now = SystemClock().now_ms();
    std::vector<std::vector<std::string>> rows;
    for (const auto& w : r["webhooks"])
      rows.push_back({std::to_string(w.value("id", int64_t{0})), w.value("user", ""), w.value("url", ""),
                      joined(w["events"]), age(w.value("created_ms", int64_t{0}), now)});
    print_rows(ctx, {"ID", "USER", "URL", "EVENTS", "AGE"}, rows, "no webhooks");
  });

  auto* rm = group->add_subcommand("rm", "delete a webhook and its delivery records");
  auto rm_id = std::make_shared<int64_t>(0);
  rm->add_option("id", *rm_id, "the webhook's id")->required()->check(CLI::PositiveNumber);
  rm->callback([&ctx, rm_id] {
    check_output(ctx, {"table", "json"});
    json r = daemon_call(ctx, "POST", "/v1/webhooks/" + std::to_string(*rm_id) + "/delete", "{}");
    if (ctx.output == "json")
      *ctx.out << r.dump(2) << "\n";
    else
      *ctx.out << "deleted webhook " << *rm_id << "\n";
  });

  auto* deliveries = group->add_subcommand("deliveries", "a webhook's newest deliveries and how each went");
  auto d_id = std::make_shared<int64_t>(0);
  auto limit = std::make_shared<int>(20);
  deliveries->add_option("id", *d_id, "the webhook's id")->required()->check(CLI::PositiveNumber);
  deliveries->add_option("--limit", *limit, "how many (default 20, at most 1000)")->check(CLI::Range(1, 1000));
  deliveries->callback([&ctx, d_id, limit] {
    check_output(ctx, {"table", "json", "csv"});
    json r = daemon_call(ctx, "GET", "/v1/webhooks/" + std::to_string(*d_id) + "/deliveries?limit=" + std::to_string(*limit));
    if (ctx.output == "json") {
      *ctx.out << r.dump(2) << "\n";
      return;
    }
    const int64_t now = SystemClock().now_ms();
    std::vector<std::vector<std::string>> rows;
    for (const auto& d : r["deliveries"]) {
      std::string outcome = d["last_status"].is_number() ? "HTTP " + std::to_string(d["last_status"].get<int>()) : "";
      const std::string error = d.value("last_error", "");
      if (!error.empty() && d.value("state", "") != "delivered") outcome += (outcome.empty() ? "" : ": ") + error;
      std::string next = d["next_attempt_ms"].is_number() ? "in " + age(now, d["next_attempt_ms"].get<int64_t>()) : "-";
      rows.push_back({std::to_string(d.value("id", int64_t{0})), std::to_string(d.value("job", int64_t{0})),
                      d.value("event", ""), d.value("state", ""), std::to_string(d.value("attempts", 0)), outcome, next,
                      age(d.value("created_ms", int64_t{0}), now)});
    }
    print_rows(ctx, {"ID", "JOB", "EVENT", "STATE", "ATTEMPTS", "LAST ANSWER", "NEXT TRY", "AGE"}, rows,
               "no deliveries yet");
  });
}

}  // namespace jobctl::cli
