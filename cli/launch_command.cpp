// jobctl launch TASK.yaml [--set KEY=VALUE]... [--dry-run]: a task file (task/task_file.h,
// docs/task-files.md) validated, its workdir packed, then quoted (--dry-run) or submitted: one
// job, or with `sweep` one job array (POST /v1/arrays).
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/terminal_text.h"
#include "bundle/code_bundle.h"
#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cli/workdir_bundle.h"
#include "client/api_client.h"
#include "task/task_file.h"

namespace jobctl::cli {

using nlohmann::json;

namespace {

struct LaunchOptions {
  std::string file;
  std::vector<std::string> sets;
  bool dry_run = false;
  int64_t workdir_limit_mb = static_cast<int64_t>(bundle::kDefaultMaxPackedInput >> 20);
};

void run_launch(CliContext& ctx, const LaunchOptions& o) {
  check_output(ctx, {"table", "json"});
  auto loaded = task::load_task_file(o.file, o.sets);
  if (!loaded) fail(ctx, loaded.error());
  task::TaskFile task = std::move(*loaded);
  auto jobs = task::validate_task(task);
  if (!jobs) fail(ctx, jobs.error());
  client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
  json spec = task.spec;
  if (!task.workdir.empty()) {
    auto packed = pack_workdir(task.workdir, static_cast<uint64_t>(o.workdir_limit_mb) << 20);
    if (!packed) fail(ctx, packed.error());
    if (ctx.output != "json") *ctx.err << packed_summary(task.workdir, *packed) << "\n";
    if (!o.dry_run) {  // a quote needs no code: nothing is stored for a dry run
      auto sha = upload_bundle(api, *packed);
      if (!sha) fail(ctx, sha.error());
      spec["bundle"] = *sha;
    }
  }
  // jobctld's errors name spec fields too: shown where the task file wrote them.
  auto answered = [&](Expected<json> r) {
    if (!r) fail(ctx, task::locate_error(task, r.error()));
    return std::move(*r);
  };
  if (o.dry_run) {
    // Every case of a sweep differs only in its parameters: one quote stands for each.
    json one = spec;
    one.erase("sweep");
    auto r = api.http().request("POST", "/v1/quote", one.dump());
    if (!r) fail(ctx, r.error());
    const json quote = answered(client::json_from_response(*r));
    if (ctx.output == "json") {
      *ctx.out << json{{"jobs", *jobs}, {"spec", spec}, {"quote", quote}}.dump(2) << "\n";
      return;
    }
    *ctx.out << terminal_text(task.path, false) << ": valid; " << *jobs << (*jobs == 1 ? " job" : " jobs")
             << " (dry run: nothing submitted)\n";
    print_placement(*ctx.out, quote);
    return;
  }
  if (spec.contains("sweep")) {
    const json answer = answered(api.submit_array(spec.dump()));
    if (ctx.output == "json") {
      *ctx.out << answer.dump(2) << "\n";
      return;
    }
    std::string ids;
    for (const auto& j : answer["jobs"]) ids += (ids.empty() ? "" : ", ") + std::to_string(j["id"].get<int64_t>());
    *ctx.out << "submitted array a" << answer["array_id"].get<int64_t>() << " (" << answer["jobs"].size()
             << " jobs: " << ids << "); jobctl ls --array a" << answer["array_id"].get<int64_t>()
             << " lists them side by side\n";
    return;
  }
  const json job = answered(api.submit_job(spec.dump()));
  if (ctx.output == "json") {
    *ctx.out << job.dump(2) << "\n";
    return;
  }
  *ctx.out << "submitted job " << job["id"].get<int64_t>() << " (" << terminal_text(job.value("name", ""), false)
           << "), state " << terminal_text(job.value("state", ""), false) << "\n";
}

}  // namespace

void add_launch_command(CLI::App& app, CliContext& ctx) {
  auto o = std::make_shared<LaunchOptions>();
  auto* cmd = app.add_subcommand("launch", "launch a task file (YAML: docs/task-files.md): pack its workdir and "
                                            "submit its job, or one job per case of its sweep");
  cmd->add_option("TASK", o->file, "the task file (YAML)")->required();
  cmd->add_option("--set", o->sets, "KEY=VALUE: replace a field of the task file (dotted, e.g. resources.gpus=2; "
                                    "repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--dry-run", o->dry_run, "validate, pack and print the quote (where it would run, what it would "
                                         "cost) without submitting");
  cmd->add_option("--workdir-limit-mb", o->workdir_limit_mb, "most MiB of files the workdir packs (default 100)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->callback([o, &ctx] { run_launch(ctx, *o); });
}

}  // namespace jobctl::cli
