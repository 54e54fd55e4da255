// submit, ls, show, cancel, outputs, logs, workers, instances: the commands that talk to jobctld (docs/api.md).
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "base/fixed_decimal.h"
#include "base/readable.h"
#include "base/terminal_text.h"
#include "base/utc_time.h"
#include "bundle/code_bundle.h"
#include "bundle/folder_files.h"
#include "cli/cli_error.h"
#include "cli/commands.h"
#include "cli/spec_builder.h"
#include "cli/table.h"
#include "cli/workdir_bundle.h"
#include "client/api_client.h"

namespace jobctl::cli {

using nlohmann::json;

namespace {

template <class T>
T must(CliContext& ctx, Expected<T> r) {
  if (!r) fail(ctx, r.error());
  return std::move(*r);
}

bool json_output(const CliContext& ctx) { return ctx.output == "json"; }

// A listing's table as the reader asked for it: CSV (the header row even when empty) or aligned
// columns, `none` in place of an empty one.
void print_listing(CliContext& ctx, const Table& t, const char* none) {
  if (ctx.output == "csv")
    t.print_csv(*ctx.out);
  else if (t.empty())
    *ctx.out << none << "\n";
  else
    t.print(*ctx.out);
}

void print_json(CliContext& ctx, const json& j) { *ctx.out << j.dump(2) << "\n"; }

std::string num(const json& v, int precision = 4) {
  if (!v.is_number()) return "-";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  std::ostringstream s;
  s << std::setprecision(precision) << v.get<double>();
  return s.str();
}

// The fields a result carries, "name value" joined: what a command job's program printed on its
// result line (docs/job-protocol.md), shown as it is.
std::string result_fields(const json& result) {
  std::string s;
  for (const auto& [key, value] : result.items()) {
    if (!s.empty()) s += ", ";
    s += key + " " + (value.is_number() ? num(value, 6) : value.is_string() ? value.get<std::string>() : value.dump());
  }
  return s.empty() ? "(no fields)" : s;
}

// A waiting job's place and reason (GET /v1/jobs' `waiting`), for tables: "#1/2, starts in 30.0
// min: placed on local V100 x1; ...".
std::string wait_summary(const json& wait, int64_t now_ms) {
  std::string s;
  if (wait.contains("position") && wait["position"].is_number())
    s = "#" + num(wait["position"]) + "/" + num(wait["queue_length"]);
  if (wait.contains("expected_start_ms") && wait["expected_start_ms"].is_number()) {
    const int64_t at = wait["expected_start_ms"].get<int64_t>();
    s += std::string(s.empty() ? "" : ", ") +
         (at <= now_ms ? "starts now" : "starts in " + readable::duration_hours(static_cast<double>(at - now_ms) / 3.6e6));
  }
  const std::string reason = wait.value("reason", "");
  s += (s.empty() ? "" : ": ") + reason;
  constexpr size_t kWidth = 90;  // a table cell, not the whole reason: `jobctl show` has it
  if (s.size() > kWidth) s = s.substr(0, kWidth - 3) + "...";
  return s;
}

// One short line about how a job is doing, for tables.
std::string progress_summary(const json& job) {
  const std::string state = job.value("state", "");
  const json& result = job.contains("result") ? job["result"] : json();
  const json& progress = job.contains("progress") ? job["progress"] : json();
  if (state == "succeeded" && result.is_object()) {
    // A built-in model's result has its accuracy; a command job's has what its program printed.
    if (!result.contains("test_accuracy")) return result_fields(result);
    std::string s = "acc " + num(result.value("test_accuracy", json()), 4);
    if (result.contains("final_loss")) s += ", loss " + num(result["final_loss"], 4);
    return s;
  }
  if (job.contains("waiting") && job["waiting"].is_object()) return wait_summary(job["waiting"], SystemClock().now_ms());
  if (state == "failed" && job.contains("error") && job["error"].is_string()) return job["error"];
  if (progress.is_object() && progress.contains("step")) {
    std::string s = "step " + num(progress["step"]);
    if (progress.contains("total_steps")) s += "/" + num(progress["total_steps"]);
    if (progress.contains("loss")) s += ", loss " + num(progress["loss"], 4);
    return s;
  }
  return "";
}

std::string worker_cell(const json& job) {
  return job.contains("worker_id") && job["worker_id"].is_number() ? num(job["worker_id"]) : "-";
}

void print_job_table(CliContext& ctx, const json& jobs) {
  const int64_t now = SystemClock().now_ms();
  Table t({"ID", "NAME", "STATE", "PRIO", "WORKER", "AGE", "PROGRESS"});
  for (const auto& j : jobs) {
    // A sweep's job says its array (a12): `jobctl ls --array a12` lists the array side by side.
    const std::string array = j.contains("array_id") && j["array_id"].is_number() ? " (a" + num(j["array_id"]) + ")" : "";
    t.add_row({num(j["id"]), j.value("name", "") + array, j.value("state", ""), num(j["priority"]),
               worker_cell(j), age(j.value("created_ms", int64_t{0}), now), progress_summary(j)});
  }
  print_listing(ctx, t, "no jobs");
}

std::string event_line(const json& ev) {
  std::string line = utc_time(ev.value("time_ms", int64_t{0})) + "  " + ev.value("type", "");
  if (ev.contains("from") && ev["from"].is_string())
    line += "  " + ev["from"].get<std::string>() + " -> " + ev.value("to", "");
  else if (ev.contains("to") && ev["to"].is_string())
    line += "  -> " + ev["to"].get<std::string>();
  if (ev.contains("detail") && ev["detail"].is_object() && !ev["detail"].empty())
    line += "  " + ev["detail"].dump();
  return line;
}

void print_job_detail(CliContext& ctx, const json& j, bool all_options) {
  std::ostream& out = *ctx.out;
  const int64_t now = SystemClock().now_ms();
  const json& spec = j.contains("spec") ? j["spec"] : json::object();
  auto row = [&out](const std::string& k, const std::string& v) {
    out << std::left << std::setw(12) << (k + ":") << terminal_text(v, true) << "\n";
  };
  row("id", num(j["id"]));
  row("name", j.value("name", ""));
  row("state", j.value("state", ""));
  row("priority", num(j["priority"]));
  if (spec.contains("model"))
    row("model", spec["model"].value("kind", "") + " " + spec["model"].dump());
  if (spec.contains("data")) row("data", spec["data"].value("dataset", ""));
  if (spec.contains("command") && spec["command"].is_array()) {  // a command job: the program, as run
    std::string command;
    for (const auto& arg : spec["command"]) {
      const std::string a = arg.is_string() ? arg.get<std::string>() : arg.dump();
      const bool plain = !a.empty() && a.find_first_of(" \t'\"\\$`*?;&|<>()") == std::string::npos;
      command += (command.empty() ? "" : " ") + (plain ? a : json(a).dump());
    }
    row("command", command);
    if (j.contains("bundle") && j["bundle"].is_object()) {
      const json& b = j["bundle"];
      const std::string sha = b.value("sha256", "");
      row("bundle", sha.substr(0, 12) + " (" +
                        (b.contains("bytes") && b["bytes"].is_number()
                             ? num(b["bytes"]) + " bytes)"
                             : "no longer stored)") +
                        "  sha256 " + sha);
    } else {
      row("bundle", "none: the program runs in the worker's job folder as it is");
    }
    if (spec.contains("image") && spec["image"].is_string()) {  // what ran: the tag as resolved at the pull
      const bool resolved = j.contains("image_digest") && j["image_digest"].is_string();
      row("image", spec["image"].get<std::string>() + "  (" + spec.value("image_pull", std::string("if_missing")) +
                       ")" + (resolved ? "" : "  digest not reported yet"));
      if (resolved) row("digest", j["image_digest"].get<std::string>());
      if (spec.contains("mounts") && spec["mounts"].is_array())
        for (const auto& m : spec["mounts"])
          row("mount", m.value("source", "") + " -> " + m.value("target", "") + (m.value("writable", false) ? " (rw)" : " (ro)"));
    }
  }
  if (spec.contains("train"))
    row("train", num(spec["train"]["epochs"]) + " epochs, batch " + num(spec["train"]["batch_size"]) +
                     ", " + spec["train"].value("optimizer", "") + " lr " + num(spec["train"]["lr"]));
  // resources.gpus "auto": the count placement chose to fit (the least it runs on until placed).
  const bool gpus_auto = spec.contains("resources") && spec["resources"].value("gpus", json()) == "auto";
  row("resources", "gpu " + j["resources"].value("gpu", "any") + " x" + num(j["resources"]["gpus"]) +
                       (gpus_auto ? " (gpus auto: the smallest count that fits where it is placed)" : ""));
  row("created", utc_time(j.value("created_ms", int64_t{0})) + " UTC (" +
                     age(j.value("created_ms", int64_t{0}), now) + " ago)");
  row("worker", worker_cell(j) + (j.value("lease_epoch", 0) > 0 ? " (lease epoch " + num(j["lease_epoch"]) + ")" : ""));
  row("recoveries", num(j["recoveries"]));
  if (j.contains("progress") && j["progress"].is_object()) row("progress", progress_summary(json{{"state", "running"}, {"progress", j["progress"]}}));
  if (j.contains("progress") && j["progress"].is_object() && j["progress"].contains("kernels") &&
      j["progress"]["kernels"].is_string()) {
    // What the products run on (jobctl-train's start event), and a resume that changed them.
    const json& p = j["progress"];
    std::string kernels = p["kernels"].get<std::string>();
    if (p.value("kernels_changed", false) && p.contains("checkpoint_kernels") && p["checkpoint_kernels"].is_string())
      kernels += " (resumed from a checkpoint computed with " + p["checkpoint_kernels"].get<std::string>() +
                 ": not bit-identical to an uninterrupted run)";
    row("kernels", kernels);
  }
  if (j.contains("waiting") && j["waiting"].is_object()) {  // why it has not started (GET /v1/jobs/{id})
    const json& w = j["waiting"];
    row("waiting", w.value("reason", ""));
    if (w.contains("position") && w["position"].is_number())
      row("queue", "#" + num(w["position"]) + " of " + num(w["queue_length"]) + " waiting for " + w.value("queue", ""));
    if (w.contains("expected_start_ms") && w["expected_start_ms"].is_number()) {
      const int64_t at = w["expected_start_ms"].get<int64_t>();
      row("expected", "start " + utc_time(at) + " UTC" +
                          (at > now ? " (in " + readable::duration_hours(static_cast<double>(at - now) / 3.6e6) + ")" : " (now)") +
                          "; from " + w.value("expected_start_basis", ""));
    } else {
      row("expected", "start: " + w.value("expected_start_basis", "none"));
    }
  }
  if (j.contains("result") && j["result"].is_object() && !j["result"].contains("test_accuracy")) {
    row("result", result_fields(j["result"]));  // what a command job's program printed
  } else if (j.contains("result") && j["result"].is_object()) {
    const json& r = j["result"];
    row("result", "test accuracy " + num(r.value("test_accuracy", json()), 4) + ", final loss " +
                      num(r.value("final_loss", json()), 4) + ", " + num(r.value("steps", json())) +
                      " steps in " + num(r.value("elapsed_s", json()), 3) + " s");
  }
  if (j.contains("error") && j["error"].is_string()) row("error", j["error"]);
  if (j.contains("runtime") && j["runtime"].is_object()) {  // estimate vs actual
    const json& rt = j["runtime"];
    auto hours = [&](const char* k) { return rt.contains(k) && rt[k].is_number() ? rt[k].get<double>() : std::nan(""); };
    const bool actual = rt.contains("actual_hours") && rt["actual_hours"].is_number();
    const std::string basis = rt.contains("basis") && rt["basis"].is_string() ? rt["basis"].get<std::string>() : "";
    if (basis == "assumed") {
      // No estimate was made: an error against an assumption would be noise.
      row("runtime", "assumed " + readable::duration_hours(hours("estimated_hours")) +
                         " (no runtime estimate: give estimate.hours, or let earlier runs of this job teach it)" +
                         (actual ? ", actual " + readable::duration_hours(hours("actual_hours")) : ""));
    } else {
      row("runtime", "estimated " + readable::duration_hours(hours("estimated_hours")) +
                         (basis == "history" ? " (from earlier runs of this job)" : "") +
                         (actual ? ", actual " + readable::duration_hours(hours("actual_hours")) + ", error " +
                                       readable::percent(hours("error_fraction"))
                                 : ""));
    }
  }
  if (j.contains("placement") && j["placement"].is_object()) {
    out << "placement:\n";
    print_placement(out, j["placement"], all_options);
  }
  if (j.contains("segments") && j["segments"].is_array() && !j["segments"].empty()) {
    // Where it ran (one row per machine and stretch: a move or a recovery starts a new one), what
    // each cost, and the same time at on-demand prices.
    out << "segments:\n";
    // A null on-demand figure: no offer of that GPU model, so nothing to compare with.
    auto on_demand = [](const json& o, const char* key) {
      auto it = o.find(key);
      return it != o.end() && it->is_number() ? "$" + fixed_decimal(it->get<double>(), 4)
                                              : std::string("no on-demand equivalent");
    };
    Table table({"where", "option", "billed", "cost", "at on-demand"});
    for (const auto& seg : j["segments"])
      table.add_row({seg.value("where", ""), seg.value("option", ""),
                     fixed_decimal(static_cast<double>(seg.value("billed_seconds", int64_t{0})), 0) + " s" +
                         (seg.value("open", false) ? " (running)" : ""),
                     "$" + fixed_decimal(seg.value("usd", 0.0), 4), on_demand(seg, "on_demand_usd")});
    std::ostringstream text;
    table.print(text);
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
    const json& c = j["cost"];
    out << "  total $" << fixed_decimal(c.value("usd", 0.0), 4) << ", all on-demand " << on_demand(c, "on_demand_usd");
    if (c.contains("saved_usd") && c["saved_usd"].is_number())
      out << ", saved $" << fixed_decimal(c["saved_usd"].get<double>(), 4);
    out << "\n";
  }
  out << "events:\n";
  for (const auto& ev : j["events"]) out << "  " << terminal_text(event_line(ev), false) << "\n";
}

// The job's fields named in `names`; a name the job does not have fails naming
// the ones it has.
json job_fields(CliContext& ctx, const json& job, const std::vector<std::string>& names) {
  json picked = json::object();
  for (const auto& name : names) {
    if (!job.contains(name)) {
      std::string known;
      for (const auto& [key, value] : job.items()) known += (known.empty() ? "" : ",") + key;
      cli::fail(ctx, "--fields: job " + num(job["id"]) + " has no field '" + name + "' (it has " + known + ")");
    }
    picked[name] = job[name];
  }
  return picked;
}

Expected<int64_t> parse_id(const std::string& text) {
  try {
    size_t used = 0;
    const long long v = std::stoll(text, &used);
    if (used == text.size() && v > 0) return static_cast<int64_t>(v);
  } catch (const std::exception&) {
  }
  return make_error(ErrorCode::invalid_argument, "a job ID is a positive integer (got '" + text + "')", "ID");
}

bool is_terminal(const std::string& state) {
  return state == "succeeded" || state == "failed" || state == "cancelled";
}

Expected<std::string> read_spec_text(const std::string& path) {
  std::ostringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(path);
    if (!in) return make_error(ErrorCode::not_found, "cannot read the spec file " + path, "SPEC");
    text << in.rdbuf();
  }
  return text.str();
}

// `submit`'s usage line also shows what main.cpp takes after `--` (CLI11 never sees it).
class CommandUsageFormatter : public CLI::Formatter {
 public:
  std::string make_usage(const CLI::App* app, std::string name) const override {
    std::string line = CLI::Formatter::make_usage(app, std::move(name));
    const size_t end = line.find_last_not_of('\n');
    return line.substr(0, end + 1) + " [-- COMMAND...]\n";
  }
};

void add_submit(CLI::App& app, CliContext& ctx) {
  struct Opts {
    std::string file;
    SpecFlags f;
    bool wait = false;
    std::string workdir;
    int64_t workdir_limit_mb = static_cast<int64_t>(bundle::kDefaultMaxPackedInput >> 20);
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("submit", "submit a job from a spec file (SPEC.json, - for stdin) and/or flags; "
                                            "what follows -- is a command job's program and its arguments");
  cmd->formatter(std::make_shared<CommandUsageFormatter>());
  cmd->add_option("SPEC", o->file, "job spec file (JSON); flags override its keys");
  cmd->add_option("--name", o->f.name, "job name");
  cmd->add_option("--model", o->f.model, "mlp or cnn");
  cmd->add_option("--hidden", o->f.hidden, "hidden layer sizes, e.g. 256,128");
  cmd->add_option("--channels", o->f.channels, "CNN conv channels, e.g. 32,64");
  cmd->add_option("--activation", o->f.activation, "relu or gelu");
  cmd->add_option("--dataset", o->f.dataset, "fashion-mnist or synthetic");
  cmd->add_option("--data-path", o->f.data_path, "dataset folder");
  cmd->add_option("--samples", o->f.samples, "synthetic dataset size");
  cmd->add_option("--epochs", o->f.epochs, "training epochs");
  cmd->add_option("--batch-size", o->f.batch_size, "batch size");
  cmd->add_option("--lr", o->f.lr, "learning rate");
  cmd->add_option("--optimizer", o->f.optimizer, "adamw or sgd");
  cmd->add_option("--schedule", o->f.schedule, "constant, step or cosine");
  cmd->add_option("--seed", o->f.seed, "random seed");
  cmd->add_option("--gpu", o->f.gpu, "any, cpu, or a GPU model such as A100");
  cmd->add_option("--gpus", o->f.gpus, "GPUs per job (per machine with --nodes)");
  cmd->add_option("--nodes", o->f.nodes, "machines the command runs on at once (resources.nodes; docs/job-spec.md)");
  cmd->add_option("--on-node-loss", o->f.on_node_loss,
                  "a gang's answer to a lost node: restart_gang (default) or replace_node (resources.on_node_loss)");
  cmd->add_option("--priority", o->f.priority, "0..100, higher runs first");
  cmd->add_option("--after", o->f.after, "run only after this job (12) or every job of this array (a14) has succeeded; "
                                         "cancelled if one fails (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--mode", o->f.mode, "placement.mode: auto (default), local or cloud");
  cmd->add_option("--spot", o->f.spot, "placement.spot: auto (default), always or never");
  cmd->add_option("--deadline-hours", o->f.deadline_hours, "placement.deadline_hours: finish within H hours of submission");
  cmd->add_option("--max-usd-per-hour", o->f.max_usd_per_hour, "placement.max_usd_per_hour: the most an option may cost");
  cmd->add_option("--env", o->f.env, "NAME=VALUE in a command job's environment (repeatable)")->allow_extra_args(false);
  cmd->add_option("--setup", o->f.setup,
                  "a shell command run in a command job's folder before its program (repeatable, in order)")
      ->allow_extra_args(false);
  cmd->add_option("--estimate-hours", o->f.estimate_hours, "a command job's runtime hint: hours on one estimate.gpu (V100)");
  cmd->add_option("--image", o->f.image,
                  "run a command job in this container image, named with its registry "
                  "(registry.example.com/team/train:1 or ...@sha256:DIGEST; docs/job-spec.md)");
  cmd->add_option("--image-pull", o->f.image_pull, "when the worker pulls the image: if_missing (default), always or never");
  cmd->add_option("--mount", o->f.mounts,
                  "a folder of the worker's machine the job in its image sees: SOURCE:TARGET, read-only, or "
                  "SOURCE:TARGET:rw (repeatable)")
      ->allow_extra_args(false);
  cmd->add_flag("--wait", o->wait, "wait until the job finishes; exit 0 only if it succeeded");
  cmd->add_option("--workdir", o->workdir,
                  "a command job's code: pack this folder (without .git) into a bundle the worker unpacks into the "
                  "job's working directory (docs/job-protocol.md)");
  cmd->add_option("--workdir-limit-mb", o->workdir_limit_mb, "most MiB of files --workdir packs (default 100)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->callback([o, &ctx] {
    check_output(ctx, {"table", "json"});
    json base = json::object();
    if (!o->file.empty()) {
      const std::string text = must(ctx, read_spec_text(o->file));
      base = json::parse(text, nullptr, false);
      if (base.is_discarded())
        fail(ctx, make_error(ErrorCode::malformed_json, o->file + " is not valid JSON", "SPEC"));
    }
    // `-- PROGRAM ARGS...`: a command job (docs/job-spec.md, "Command jobs").
    if (!ctx.after_dashes.empty()) base["command"] = ctx.after_dashes;
    if (!o->workdir.empty() && !base.contains("command"))
      fail(ctx, make_error(ErrorCode::invalid_argument, "--workdir is for a command job: give the command after --",
                           "--workdir"));
    json spec = must(ctx, build_spec(base, o->f));
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    if (!o->workdir.empty()) {
      const PackedWorkdir packed =
          must(ctx, pack_workdir(o->workdir, static_cast<uint64_t>(o->workdir_limit_mb) << 20));
      spec["bundle"] = must(ctx, upload_bundle(api, packed));
      if (!json_output(ctx)) *ctx.err << packed_summary(o->workdir, packed) << "\n";
    }
    if (spec.contains("sweep")) {  // a sweep: one job per case, a job array (docs/task-files.md)
      if (o->wait) fail(ctx, make_error(ErrorCode::invalid_argument, "--wait waits for one job; a sweep is an array: "
                                                                    "jobctl ls --array ID follows it", "--wait"));
      json answer = must(ctx, api.submit_array(spec.dump()));
      if (json_output(ctx)) return print_json(ctx, answer);
      *ctx.out << "submitted array a" << answer["array_id"].get<int64_t>() << " (" << answer["jobs"].size() << " jobs)\n";
      return;
    }
    json job = must(ctx, api.submit_job(spec.dump()));
    const int64_t id = job["id"];
    if (!o->wait) {
      if (json_output(ctx))
        print_json(ctx, job);
      else
        *ctx.out << "submitted job " << id << " (" << terminal_text(job.value("name", ""), false) << "), state "
                 << terminal_text(job.value("state", ""), false) << "\n";
      return;
    }
    if (!json_output(ctx)) *ctx.out << "submitted job " << id << "; waiting...\n";
    for (;;) {
      job = must(ctx, api.get_job(id));
      if (is_terminal(job.value("state", ""))) break;
      std::this_thread::sleep_for(std::chrono::seconds(1));
    }
    if (json_output(ctx))
      print_json(ctx, job);
    else
      *ctx.out << "job " << id << " " << terminal_text(job.value("state", "") + "  " + progress_summary(job), false) << "\n";
    if (job.value("state", "") != "succeeded") throw CLI::RuntimeError(1);
  });
}

// A job array's ID as the CLI writes it, "a12", or as the API does, "12".
Expected<int64_t> parse_array_id(const std::string& text) {
  auto id = parse_id(text.size() > 1 && text[0] == 'a' ? text.substr(1) : text);
  if (!id) return make_error(ErrorCode::invalid_argument, "an array ID is a12 or 12 (got '" + text + "')", "--array");
  return id;
}

// A sweep's jobs side by side: each case's parameters, state, result and cost (each job's detail,
// GET /v1/jobs/{id}, has its parameters and its cost).
void print_array_table(CliContext& ctx, client::ApiClient& api, const json& jobs) {
  json details = json::array();
  for (const auto& j : jobs) details.push_back(must(ctx, api.get_job(j["id"].get<int64_t>())));
  if (json_output(ctx)) {
    print_json(ctx, json{{"jobs", details}});
    return;
  }
  Table t({"INDEX", "ID", "PARAMETERS", "STATE", "RESULT", "COST"});
  for (const auto& d : details) {
    const json& array = d.contains("spec") && d["spec"].is_object() && d["spec"].contains("array") ? d["spec"]["array"] : json();
    std::string params;
    if (array.is_object() && array.contains("parameters"))
      for (const auto& [k, v] : array["parameters"].items())
        params += (params.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    const double usd = d.contains("cost") && d["cost"].is_object() ? d["cost"].value("usd", 0.0) : 0.0;
    t.add_row({array.is_object() ? num(array.value("index", json())) : "-", num(d["id"]), terminal_text(params, false),
               d.value("state", ""), terminal_text(progress_summary(d), false), "$" + fixed_decimal(usd, 4)});
  }
  print_listing(ctx, t, "no jobs");
}

void add_ls(CLI::App& app, CliContext& ctx) {
  struct Opts {
    std::optional<std::string> state;
    int limit = 50;
    std::string after;
    bool all = false;
    std::string array;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("ls", "list jobs (oldest first)");
  cmd->add_option("--state", o->state, "only jobs in this state (queued, running, succeeded, ...)");
  cmd->add_option("--limit", o->limit, "jobs per page (default 50)");
  cmd->add_option("--after", o->after, "start after this job ID (the `next` cursor)");
  cmd->add_flag("--all", o->all, "follow the pages to the end");
  cmd->add_option("--array", o->array,
                  "only this job array's jobs (a sweep: `jobctl launch` printed its ID, a12), side by side: "
                  "each case's parameters, state, result and cost");
  cmd->callback([o, &ctx] {
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    std::optional<int64_t> array;
    if (!o->array.empty()) array = must(ctx, parse_array_id(o->array));
    json jobs = json::array();
    std::string after = o->after;
    json next;
    for (;;) {
      // An array is listed whole: its table is its cases side by side.
      json page = must(ctx, api.list_jobs(o->state, o->limit, after, array));
      for (auto& j : page["jobs"]) jobs.push_back(std::move(j));
      next = page["next"];
      if ((!o->all && !array) || next.is_null()) break;
      after = next.get<std::string>();
    }
    if (array) {
      print_array_table(ctx, api, jobs);
      return;
    }
    if (json_output(ctx)) {
      print_json(ctx, json{{"jobs", jobs}, {"next", next}});
      return;
    }
    print_job_table(ctx, jobs);
    if (!next.is_null() && ctx.output != "csv") *ctx.out << "(more: --after " << next.get<std::string>() << ", or --all)\n";
  });
}

void add_show(CLI::App& app, CliContext& ctx) {
  struct Opts {
    std::string id;
    bool all = false;
    std::vector<std::string> fields;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("show", "show a job: spec, state, progress, result, events");
  cmd->add_option("ID", o->id, "job ID")->required();
  cmd->add_flag("--all", o->all, "list every placement option (default: the cheapest that fit, rejections counted)");
  cmd->add_option("--fields", o->fields,
                  "print only these top-level fields of the job as compact JSON, e.g. state,result")
      ->delimiter(',');
  cmd->callback([o, &ctx] {
    check_output(ctx, {"table", "json"});
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    json job = must(ctx, api.get_job(must(ctx, parse_id(o->id))));
    if (!o->fields.empty())
      *ctx.out << job_fields(ctx, job, o->fields).dump() << "\n";
    else if (json_output(ctx))
      print_json(ctx, job);
    else
      print_job_detail(ctx, job, o->all);
  });
}

void add_cancel(CLI::App& app, CliContext& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("cancel", "cancel a job, or with an array ID (a12) every job of a sweep that has not "
                                            "ended (a running one stops at its next heartbeat)");
  cmd->add_option("ID", *id, "job ID, or a job array's ID (a12)")->required();
  cmd->callback([id, &ctx] {
    check_output(ctx, {"table", "json"});
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    if (id->size() > 1 && (*id)[0] == 'a' && id->find_first_not_of("0123456789", 1) == std::string::npos) {
      const int64_t array_id = must(ctx, parse_array_id(*id));
      json answer = must(ctx, api.cancel_array(array_id));
      if (json_output(ctx)) return print_json(ctx, answer);
      for (const auto& job : answer["jobs"])
        *ctx.out << "job " << job["id"] << " " << terminal_text(job.value("state", ""), false) << "\n";
      return;
    }
    json job = must(ctx, api.cancel_job(must(ctx, parse_id(*id))));
    if (json_output(ctx))
      print_json(ctx, job);
    else
      *ctx.out << "job " << job["id"] << " " << terminal_text(job.value("state", ""), false) << "\n";
  });
}

// jobctl outputs ID [--to DIR]: the job's outputs listed, or written under DIR (each file
// streamed to disk; a path that would leave DIR is refused: bundle/folder_files.h).
void add_outputs(CLI::App& app, CliContext& ctx) {
  auto id = std::make_shared<std::string>();
  auto to = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("outputs", "list a job's outputs (the files its program left in JOBCTL_OUTPUT_DIR), "
                                            "or download them with --to DIR");
  cmd->add_option("ID", *id, "job ID")->required();
  cmd->add_option("--to", *to, "write the files under this folder (created if absent)");
  cmd->callback([id, to, &ctx] {
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    const int64_t job_id = must(ctx, parse_id(*id));
    json listed = must(ctx, api.list_outputs(job_id));
    const json outputs = listed.value("outputs", json::array());
    if (to->empty()) {
      if (json_output(ctx)) return print_json(ctx, listed);
      if (outputs.empty()) {
        *ctx.out << "job " << job_id << " has no outputs\n";
        return;
      }
      Table t({"PATH", "BYTES", "UPLOADED"});
      for (const auto& o : outputs)
        t.add_row({terminal_text(o.value("path", ""), false), std::to_string(o.value("bytes", int64_t{0})),
                 format_utc(o.value("uploaded_ms", int64_t{0}), UtcStyle::rfc3339)});
      t.print(*ctx.out);
      return;
    }
    int written = 0;
    for (const auto& o : outputs) {
      const std::string path = o.value("path", "");
      auto file = bundle::FileInside::create(*to, path);
      if (!file) fail(ctx, file.error());
      if (auto st = api.download_output(job_id, path, file->fd()); !st) fail(ctx, st.error());
      if (auto st = file->commit(); !st) fail(ctx, st.error());
      ++written;
    }
    *ctx.out << "wrote " << written << " file(s) of job " << job_id << " to " << terminal_text(*to, false) << "\n";
  });
}

void add_move(CLI::App& app, CliContext& ctx) {
  auto id = std::make_shared<std::string>();
  auto to = std::make_shared<std::string>();
  auto reason = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand(
      "move", "move a running job: it checkpoints at once and is placed anew (on OPTION with --to)");
  cmd->add_option("ID", *id, "job ID")->required();
  cmd->add_option("--to", *to, "where it must go: local, on_demand or spot (default: wherever is cheapest)")
      ->check(CLI::IsMember({"local", "on_demand", "spot"}));
  cmd->add_option("--reason", *reason, "why, recorded in the job's events");
  cmd->callback([id, to, reason, &ctx] {
    check_output(ctx, {"table", "json"});
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    json job = must(ctx, api.move_job(must(ctx, parse_id(*id)), *to, *reason));
    if (json_output(ctx))
      print_json(ctx, job);
    else
      *ctx.out << "job " << job["id"] << " will checkpoint and move"
               << (to->empty() ? std::string(" to wherever is cheapest") : " to " + *to)
               << " at its next heartbeat\n";
  });
}

// `--since`: a duration back from now ("90s", "10m", "2h", "1d") or an RFC 3339 time.
Expected<int64_t> parse_since(const std::string& text, int64_t now_ms) {
  if (auto t = parse_rfc3339(text)) return *t;
  static const std::pair<char, int64_t> units[] = {{'s', 1000}, {'m', 60000}, {'h', 3600000}, {'d', 86400000}};
  if (text.size() >= 2)
    for (const auto& [unit, ms] : units)
      if (text.back() == unit) {
        int64_t n = 0;
        auto r = std::from_chars(text.data(), text.data() + text.size() - 1, n);
        if (r.ec == std::errc() && r.ptr == text.data() + text.size() - 1 && n >= 0 && n <= 3650 * int64_t{86400000} / ms)
          return now_ms - n * ms;
      }
  return make_error(ErrorCode::invalid_argument,
                    "--since must be a duration back from now (90s, 10m, 2h, 1d) or an RFC 3339 time "
                    "(2026-11-27T10:00:00Z), not '" + text + "'",
                    "since");
}

// GET /v1/jobs/{id}/log/download into `file` (FILE.part first, renamed when whole).
void download_log(CliContext& ctx, client::ApiClient& api, int64_t id, const std::string& file) {
  const std::string part = file + ".part";
  std::FILE* out = std::fopen(part.c_str(), "wb");
  if (out == nullptr)
    fail(ctx, make_error(ErrorCode::io, "cannot write " + part + ": " + std::strerror(errno), "download"));
  auto r = api.http().get_to_file("/v1/jobs/" + std::to_string(id) + "/log/download", out, 3600 * 1000);
  const bool closed = std::fclose(out) == 0;
  if (!r || r->status != 200 || !closed) {
    std::remove(part.c_str());
    if (!r) fail(ctx, r.error());
    if (r->status != 200) fail(ctx, client::error_from_answer(r->status, r->body));
    fail(ctx, make_error(ErrorCode::io, "cannot write " + part, "download"));
  }
  if (std::rename(part.c_str(), file.c_str()) != 0)
    fail(ctx, make_error(ErrorCode::io, "cannot rename " + part + " to " + file + ": " + std::strerror(errno), "download"));
  *ctx.err << "jobctl: job " << id << "'s log written to " << file << "\n";
}

void add_logs(CLI::App& app, CliContext& ctx) {
  struct Opts {
    std::string id;
    bool follow = false;
    std::string since;
    std::string tail;
    bool timestamps = false;
    std::string download;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("logs", "print a job's events, progress and output (-f: follow until it ends)");
  cmd->add_option("ID", o->id, "job ID")->required();
  cmd->add_flag("-f,--follow", o->follow, "keep printing new output, events and progress until the job ends");
  cmd->add_option("--since", o->since, "only what came since: a duration back from now (10m, 2h) or an RFC 3339 time");
  cmd->add_option("--tail", o->tail, "only the last N lines of output");
  cmd->add_flag("--timestamps", o->timestamps, "start each output line with the time its worker read it (UTC)");
  cmd->add_option("--download", o->download, "save the whole stored log (each line numbered and timed) to FILE");
  cmd->callback([o, &ctx] {
    check_output(ctx, {"table", "json"});
    const int64_t id = must(ctx, parse_id(o->id));
    int64_t tail = 0;
    if (!o->tail.empty()) {
      auto r = std::from_chars(o->tail.data(), o->tail.data() + o->tail.size(), tail);
      if (r.ec != std::errc() || r.ptr != o->tail.data() + o->tail.size() || tail < 1 || tail > 100000)
        fail(ctx, make_error(ErrorCode::invalid_argument,
                             "--tail must be a number of lines from 1 to 100000, not '" + o->tail + "'", "tail"));
    }
    const int64_t since = o->since.empty() ? 0 : must(ctx, parse_since(o->since, SystemClock().now_ms()));
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    if (!o->download.empty()) {
      if (o->follow || tail > 0 || since > 0 || o->timestamps)
        fail(ctx, make_error(ErrorCode::invalid_argument,
                             "--download saves the whole log; it takes no -f, --since, --tail or --timestamps",
                             "download"));
      return download_log(ctx, api, id, o->download);
    }
    size_t printed = 0;
    std::string last_progress;
    int64_t after = 0;
    bool first = true;
    int64_t shown_from = since;  // events and progress before this are not printed
    for (;;) {
      json job = must(ctx, api.get_job(id));
      // The program's output since the last poll (the first poll: what --since and --tail ask).
      for (;;) {
        std::string path = "/v1/jobs/" + std::to_string(id) + "/log?after=" + std::to_string(after);
        if (first && since > 0) path += "&since=" + std::to_string(since);
        if (first && tail > 0) path += "&tail=" + std::to_string(tail);
        json page = must(ctx, client::json_from_response(must(ctx, api.http().request("GET", path))));
        const bool filtered = first && (since > 0 || tail > 0);
        if (first && tail > 0 && !page["lines"].empty() && since == 0)
          shown_from = page["lines"][0].value("time_ms", int64_t{0});
        first = false;
        for (const json& l : page["lines"]) {
          const int64_t n = l.value("n", int64_t{0});
          if (json_output(ctx)) {
            *ctx.out << json{{"log", l}}.dump() << "\n";
          } else {
            if (!filtered && n > after + 1)
              *ctx.out << "[... " << (n - after - 1) << " lines of output dropped (the log's size limit) ...]\n";
            if (o->timestamps) *ctx.out << format_utc_ms(l.value("time_ms", int64_t{0})) << " ";
            *ctx.out << terminal_text(l.value("text", ""), true) << "\n";
          }
          after = n;
        }
        after = std::max(after, page.value("next", after));
        if (!page.value("more", false)) break;
      }
      const json& events = job["events"];
      for (; printed < events.size(); ++printed) {
        if (events[printed].value("time_ms", int64_t{0}) < shown_from) continue;
        if (json_output(ctx))
          *ctx.out << json{{"event", events[printed]}}.dump() << "\n";
        else
          *ctx.out << terminal_text(event_line(events[printed]), false) << "\n";
      }
      if (job.contains("progress") && job["progress"].is_object()) {
        const std::string p = job["progress"].dump();
        // The time the worker read it (older workers sent none: the job's last change).
        const json& stamp = job["progress"].contains("time_ms") ? job["progress"]["time_ms"] : job["updated_ms"];
        const int64_t at = stamp.is_number_integer() ? stamp.get<int64_t>() : 0;
        if (p != last_progress && at >= shown_from) {
          last_progress = p;
          if (json_output(ctx))
            *ctx.out << json{{"progress", job["progress"]}}.dump() << "\n";
          else
            *ctx.out << utc_time(at) << "  progress  "
                     << terminal_text(progress_summary(json{{"state", "running"}, {"progress", job["progress"]}}), false)
                     << "\n";
        }
      }
      ctx.out->flush();
      if (!o->follow || is_terminal(job.value("state", ""))) break;
      std::this_thread::sleep_for(std::chrono::seconds(2));
    }
  });
}

void add_instances(CLI::App& app, CliContext& ctx) {
  auto* cmd = app.add_subcommand("instances", "list the cloud instances jobctld launched or adopted");
  cmd->callback([&ctx] {
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    json r = must(ctx, api.list_instances());
    if (json_output(ctx)) {
      print_json(ctx, r);
      return;
    }
    if (r["provider"].is_null()) {
      *ctx.out << "no cloud provider is configured (docs/clouds.md)\n";
      return;
    }
    const int64_t now = SystemClock().now_ms();
    Table t({"ID", "TYPE", "MARKET", "STATE", "JOB", "WORKER", "$/H", "BILLED $", "AGE", "REASON"});
    for (const auto& i : r["instances"]) {
      const int64_t end = i["ended_ms"].is_number() ? i["ended_ms"].get<int64_t>() : now;
      const std::string price = fixed_decimal(i.value("usd_per_hour", 0.0), 4);
      const std::string billed = fixed_decimal(i.value("billed_usd", 0.0), 4);
      t.add_row({i.value("id", ""), i.value("instance_type", ""), i.value("spot", false) ? "spot" : "on-demand",
                 i.value("state", ""), i["job_id"].is_null() ? "-" : num(i["job_id"]),
                 i["worker_id"].is_null() ? "-" : num(i["worker_id"]), price, billed,
                 age(i.value("launched_ms", int64_t{0}), end), i.value("reason", "")});
    }
    if (ctx.output != "csv")
      *ctx.out << terminal_text("provider " + r.value("provider", "") + ", tag " + r.value("tag", "") +
                                  (r.value("reconciled", false) ? "" : ", not reconciled yet") +
                                  (r["last_error"].is_string() ? ", last error: " + r["last_error"].get<std::string>() : ""),
                              false)
             << "\n";
    print_listing(ctx, t, "no instances");
  });
}

void add_workers(CLI::App& app, CliContext& ctx) {
  auto* cmd = app.add_subcommand("workers", "list registered workers");
  cmd->callback([&ctx] {
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    json r = must(ctx, api.list_workers());
    if (json_output(ctx)) {
      print_json(ctx, r);
      return;
    }
    const int64_t now = SystemClock().now_ms();
    Table t({"ID", "NAME", "STATE", "GPUS", "CPUS", "MEMORY", "LAST SEEN", "JOBS"});
    for (const auto& w : r["workers"]) {
      const json& caps = w["capabilities"];
      std::string gpus = "cpu only";
      if (caps.contains("gpus") && !caps["gpus"].empty()) {
        // What the GPUs are (the daemon identified them), then what the driver calls them.
        const json& identified = w.contains("gpus") && w["gpus"].is_array() && !w["gpus"].empty() ? w["gpus"][0] : json();
        const std::string model = caps["gpus"][0].value("model", "?");
        gpus = std::to_string(caps["gpus"].size()) + "x " + (identified.is_string() ? identified.get<std::string>() : model);
        gpus += " (" + (identified.is_string() ? model + ", " : std::string()) +
                std::to_string(caps["gpus"][0].value("memory_mb", int64_t{0}) / 1024) + " GiB)";
      }
      if (w.value("simulated", false)) gpus += " [simulated]";
      std::string jobs;
      for (const auto& id : w["jobs"]) jobs += (jobs.empty() ? "" : ",") + num(id);
      t.add_row({num(w["id"]), w.value("name", ""), w.value("state", ""), gpus, num(caps.value("cpu_cores", json())),
                 std::to_string(caps.value("memory_mb", int64_t{0}) / 1024) + " GiB",
                 age(w.value("last_seen_ms", int64_t{0}), now) + " ago", jobs.empty() ? "-" : jobs});
    }
    print_listing(ctx, t, "no workers");
    if (ctx.output == "csv") return;  // rows only
    for (const auto& w : r["workers"])
      for (const auto& warning : w.value("warnings", json::array()))
        if (warning.is_string())
          *ctx.out << "warning: worker " << num(w["id"]) << " (" << terminal_text(w.value("name", ""), false)
                    << "): " << terminal_text(warning.get<std::string>(), false) << "\n";
  });
}

}  // namespace

void add_job_commands(CLI::App& app, CliContext& ctx) {
  add_submit(app, ctx);
  add_ls(app, ctx);
  add_show(app, ctx);
  add_cancel(app, ctx);
  add_outputs(app, ctx);
  add_move(app, ctx);
  add_logs(app, ctx);
  add_workers(app, ctx);
  add_instances(app, ctx);
}

}  // namespace jobctl::cli
