// submit, ls, show, cancel, outputs, logs, workers, instances: the commands that talk to jobctld (docs/api.md).
#include <chrono>
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
#include "cli/commands.h"
#include "cli/spec_builder.h"
#include "cli/table.h"
#include "client/api_client.h"

namespace jobctl::cli {

using nlohmann::json;

namespace {

// Prints the error the way every job command does and leaves with exit code 1.
[[noreturn]] void fail(CliContext& ctx, const Error& e) {
  std::ostream& err = *ctx.err;
  if (e.code == ErrorCode::unavailable) {
    err << "jobctl: cannot reach jobctld at " << ctx.server << " (" << e.message
        << ").\n       Is jobctld running? Point --server or JOBCTL_SERVER at it.\n";
  } else {
    // The message may quote a job's or another user's text.
    err << "jobctl: error: " << terminal_text(e.message, true);
    if (!e.field.empty()) err << " (field: " << terminal_text(e.field, false) << ")";
    err << "\n";
  }
  throw CLI::RuntimeError(1);
}

template <class T>
T must(CliContext& ctx, Expected<T> r) {
  if (!r) fail(ctx, r.error());
  return std::move(*r);
}

bool json_output(const CliContext& ctx) { return ctx.output == "json"; }

void print_json(CliContext& ctx, const json& j) { *ctx.out << j.dump(2) << "\n"; }

std::string num(const json& v, int precision = 4) {
  if (!v.is_number()) return "-";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  std::ostringstream s;
  s << std::setprecision(precision) << v.get<double>();
  return s.str();
}

// One short line about how a job is doing, for tables.
std::string progress_summary(const json& job) {
  const std::string state = job.value("state", "");
  const json& result = job.contains("result") ? job["result"] : json();
  const json& progress = job.contains("progress") ? job["progress"] : json();
  if (state == "succeeded" && result.is_object()) {
    std::string s = "acc " + num(result.value("test_accuracy", json()), 4);
    if (result.contains("final_loss")) s += ", loss " + num(result["final_loss"], 4);
    return s;
  }
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
  for (const auto& j : jobs)
    t.add_row({num(j["id"]), j.value("name", ""), j.value("state", ""), num(j["priority"]),
               worker_cell(j), age(j.value("created_ms", int64_t{0}), now), progress_summary(j)});
  if (t.empty()) {
    *ctx.out << "no jobs\n";
    return;
  }
  t.print(*ctx.out);
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
  if (spec.contains("train"))
    row("train", num(spec["train"]["epochs"]) + " epochs, batch " + num(spec["train"]["batch_size"]) +
                     ", " + spec["train"].value("optimizer", "") + " lr " + num(spec["train"]["lr"]));
  row("resources", "gpu " + j["resources"].value("gpu", "any") + " x" + num(j["resources"]["gpus"]));
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
  if (j.contains("result") && j["result"].is_object()) {
    const json& r = j["result"];
    row("result", "test accuracy " + num(r.value("test_accuracy", json()), 4) + ", final loss " +
                      num(r.value("final_loss", json()), 4) + ", " + num(r.value("steps", json())) +
                      " steps in " + num(r.value("elapsed_s", json()), 3) + " s");
  }
  if (j.contains("error") && j["error"].is_string()) row("error", j["error"]);
  if (j.contains("runtime") && j["runtime"].is_object()) {  // estimate vs actual
    const json& rt = j["runtime"];
    auto hours = [&](const char* k) { return rt.contains(k) && rt[k].is_number() ? rt[k].get<double>() : std::nan(""); };
    row("runtime", "estimated " + readable::duration_hours(hours("estimated_hours")) +
                       (rt.contains("actual_hours") && rt["actual_hours"].is_number()
                            ? ", actual " + readable::duration_hours(hours("actual_hours")) + ", error " +
                                  readable::percent(hours("error_fraction"))
                            : ""));
  }
  if (j.contains("placement") && j["placement"].is_object()) {
    out << "placement:\n";
    print_placement(out, j["placement"], all_options);
  }
  if (j.contains("segments") && j["segments"].is_array() && !j["segments"].empty()) {
    // Where it ran (one row per machine and stretch: a move or a recovery starts a new one), what
    // each cost, and the same time at on-demand prices.
    out << "segments:\n";
    Table table({"where", "option", "billed", "cost", "at on-demand"});
    for (const auto& seg : j["segments"])
      table.add_row({seg.value("where", ""), seg.value("option", ""),
                     fixed_decimal(static_cast<double>(seg.value("billed_seconds", int64_t{0})), 0) + " s" +
                         (seg.value("open", false) ? " (running)" : ""),
                     "$" + fixed_decimal(seg.value("usd", 0.0), 4), "$" + fixed_decimal(seg.value("on_demand_usd", 0.0), 4)});
    std::ostringstream text;
    table.print(text);
    std::istringstream lines(text.str());
    for (std::string line; std::getline(lines, line);) out << "  " << line << "\n";
    const json& c = j["cost"];
    out << "  total $" << fixed_decimal(c.value("usd", 0.0), 4) << ", all on-demand $"
        << fixed_decimal(c.value("on_demand_usd", 0.0), 4) << ", saved $" << fixed_decimal(c.value("saved_usd", 0.0), 4)
        << "\n";
  }
  out << "events:\n";
  for (const auto& ev : j["events"]) out << "  " << terminal_text(event_line(ev), false) << "\n";
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
  cmd->add_option("--gpus", o->f.gpus, "GPUs per job");
  cmd->add_option("--priority", o->f.priority, "0..100, higher runs first");
  cmd->add_option("--mode", o->f.mode, "placement.mode: auto (default), local or cloud");
  cmd->add_option("--spot", o->f.spot, "placement.spot: auto (default), always or never");
  cmd->add_option("--deadline-hours", o->f.deadline_hours, "placement.deadline_hours: finish within H hours of submission");
  cmd->add_option("--max-usd-per-hour", o->f.max_usd_per_hour, "placement.max_usd_per_hour: the most an option may cost");
  cmd->add_option("--env", o->f.env, "NAME=VALUE in a command job's environment (repeatable)")->allow_extra_args(false);
  cmd->add_option("--setup", o->f.setup,
                  "a shell command run in a command job's folder before its program (repeatable, in order)")
      ->allow_extra_args(false);
  cmd->add_option("--estimate-hours", o->f.estimate_hours, "a command job's runtime hint: hours on one estimate.gpu (V100)");
  cmd->add_flag("--wait", o->wait, "wait until the job finishes; exit 0 only if it succeeded");
  cmd->add_option("--workdir", o->workdir,
                  "a command job's code: pack this folder (without .git) into a bundle the worker unpacks into the "
                  "job's working directory (docs/job-protocol.md)");
  cmd->add_option("--workdir-limit-mb", o->workdir_limit_mb, "most MiB of files --workdir packs (default 100)")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}));
  cmd->callback([o, &ctx] {
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
      bundle::BundleStats packed;
      const std::string bytes =
          must(ctx, bundle::pack_directory(o->workdir, static_cast<uint64_t>(o->workdir_limit_mb) << 20, &packed));
      auto r = api.http().request("POST", "/v1/bundles", bytes, 0, {"Content-Type: application/octet-stream"});
      if (!r) fail(ctx, r.error());
      const json answer = must(ctx, client::json_from_response(*r));
      spec["bundle"] = answer.value("bundle", "");
      if (!json_output(ctx))
        *ctx.err << "packed " << o->workdir << ": " << packed.files << " files, " << packed.file_bytes
                 << " bytes, bundle " << packed.bundle_bytes << " bytes\n";
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

void add_ls(CLI::App& app, CliContext& ctx) {
  struct Opts {
    std::optional<std::string> state;
    int limit = 50;
    std::string after;
    bool all = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("ls", "list jobs (oldest first)");
  cmd->add_option("--state", o->state, "only jobs in this state (queued, running, succeeded, ...)");
  cmd->add_option("--limit", o->limit, "jobs per page (default 50)");
  cmd->add_option("--after", o->after, "start after this job ID (the `next` cursor)");
  cmd->add_flag("--all", o->all, "follow the pages to the end");
  cmd->callback([o, &ctx] {
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    json jobs = json::array();
    std::string after = o->after;
    json next;
    for (;;) {
      json page = must(ctx, api.list_jobs(o->state, o->limit, after));
      for (auto& j : page["jobs"]) jobs.push_back(std::move(j));
      next = page["next"];
      if (!o->all || next.is_null()) break;
      after = next.get<std::string>();
    }
    if (json_output(ctx)) {
      print_json(ctx, json{{"jobs", jobs}, {"next", next}});
      return;
    }
    print_job_table(ctx, jobs);
    if (!next.is_null()) *ctx.out << "(more: --after " << next.get<std::string>() << ", or --all)\n";
  });
}

void add_show(CLI::App& app, CliContext& ctx) {
  struct Opts {
    std::string id;
    bool all = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("show", "show a job: spec, state, progress, result, events");
  cmd->add_option("ID", o->id, "job ID")->required();
  cmd->add_flag("--all", o->all, "list every placement option (default: the cheapest that fit, rejections counted)");
  cmd->callback([o, &ctx] {
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    json job = must(ctx, api.get_job(must(ctx, parse_id(o->id))));
    if (json_output(ctx))
      print_json(ctx, job);
    else
      print_job_detail(ctx, job, o->all);
  });
}

void add_cancel(CLI::App& app, CliContext& ctx) {
  auto id = std::make_shared<std::string>();
  auto* cmd = app.add_subcommand("cancel", "cancel a job (a running one stops at its next heartbeat)");
  cmd->add_option("ID", *id, "job ID")->required();
  cmd->callback([id, &ctx] {
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
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

void add_logs(CLI::App& app, CliContext& ctx) {
  struct Opts {
    std::string id;
    bool follow = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand("logs", "print a job's events, progress and output (-f: follow until it ends)");
  cmd->add_option("ID", o->id, "job ID")->required();
  cmd->add_flag("-f,--follow", o->follow, "keep printing new events and progress");
  cmd->callback([o, &ctx] {
    client::ApiClient api(ctx.server, client::HttpClientOptions{.bearer_token = bearer_token(ctx)});
    const int64_t id = must(ctx, parse_id(o->id));
    size_t printed = 0;
    std::string last_progress;
    int64_t log_offset = 0;
    for (;;) {
      json job = must(ctx, api.get_job(id));
      // The program's output since the last poll (a daemon without the route has none to give).
      if (auto r = api.http().request("GET", "/v1/jobs/" + std::to_string(id) + "/log?after=" + std::to_string(log_offset));
          r && r->status == 200) {
        const json chunk = json::parse(r->body, nullptr, false);
        if (chunk.is_object()) {
          const std::string text = chunk.value("text", "");
          log_offset = chunk.value("next", log_offset);
          if (!text.empty()) {
            if (json_output(ctx))
              *ctx.out << json{{"log", text}}.dump() << "\n";
            else
              *ctx.out << terminal_text(text, true) << (text.back() == '\n' ? "" : "\n");
          }
        }
      }
      const json& events = job["events"];
      for (; printed < events.size(); ++printed) {
        if (json_output(ctx))
          *ctx.out << json{{"event", events[printed]}}.dump() << "\n";
        else
          *ctx.out << terminal_text(event_line(events[printed]), false) << "\n";
      }
      if (job.contains("progress") && job["progress"].is_object()) {
        const std::string p = job["progress"].dump();
        if (p != last_progress) {
          last_progress = p;
          if (json_output(ctx))
            *ctx.out << json{{"progress", job["progress"]}}.dump() << "\n";
          else
            *ctx.out << utc_time(job.value("updated_ms", int64_t{0})) << "  progress  "
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
    *ctx.out << terminal_text("provider " + r.value("provider", "") + ", tag " + r.value("tag", "") +
                                  (r.value("reconciled", false) ? "" : ", not reconciled yet") +
                                  (r["last_error"].is_string() ? ", last error: " + r["last_error"].get<std::string>() : ""),
                              false)
             << "\n";
    if (t.empty())
      *ctx.out << "no instances\n";
    else
      t.print(*ctx.out);
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
    if (t.empty())
      *ctx.out << "no workers\n";
    else
      t.print(*ctx.out);
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
