// The job commands run in-process (as `jobctl` would run them) against an in-process jobctld.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "client/api_client.h"
#include "client/http_client.h"
#include "tests/daemon/in_process_daemon.h"
#include "tests/support/temp_dir.h"

namespace jobctl::cli {
namespace {

using nlohmann::json;

struct Result {
  int code = 0;
  std::string out, err;
};

class Cli : public ::testing::Test {
 protected:
  // `input`: the command's standard input.
  Result run(std::vector<std::string> args, const std::string& server = "", const std::string& input = "") {
    CLI::App app{"jobctl"};
    app.require_subcommand(1);
    app.fallthrough();
    std::ostringstream out, err;
    std::istringstream in(input);
    CliContext ctx{server.empty() ? daemon_.url() : server, "", "table", &out, &err};
    ctx.in = &in;
    app.add_option("--server", ctx.server);
    app.add_option("-o,--output", ctx.output);
    add_job_commands(app, ctx);
    add_registry_commands(app, ctx);
    // What follows `--` is the job's command, as main.cpp takes it.
    if (auto dashes = std::find(args.begin(), args.end(), "--"); dashes != args.end()) {
      ctx.after_dashes.assign(dashes + 1, args.end());
      args.erase(dashes, args.end());
    }
    args.insert(args.begin(), "jobctl");
    std::vector<const char*> argv;
    for (auto& a : args) argv.push_back(a.c_str());
    Result r;
    try {
      app.parse(static_cast<int>(argv.size()), argv.data());
    } catch (const CLI::ParseError& e) {
      r.code = e.get_exit_code();
    }
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  daemon::testing::Daemon daemon_;
  jobctl::testing::TempDir dir_;
};

TEST_F(Cli, SubmitFromFlagsThenShowAndListAsJson) {
  Result s = run({"submit", "--name", "cli-job", "--hidden", "64,32", "--epochs", "1", "-o", "json"});
  ASSERT_EQ(s.code, 0) << s.err;
  json job = json::parse(s.out);
  const std::string id = std::to_string(job["id"].get<int64_t>());
  EXPECT_EQ(job["state"], "queued");

  Result show = run({"show", id, "-o", "json"});
  ASSERT_EQ(show.code, 0) << show.err;
  json d = json::parse(show.out);
  EXPECT_EQ(d["state"], "queued");
  EXPECT_EQ(d["spec"]["model"]["hidden"], json::array({64, 32}));
  EXPECT_EQ(d["spec"]["data"]["dataset"], "fashion-mnist");

  Result ls = run({"-o", "json", "ls", "--state", "queued"});
  ASSERT_EQ(ls.code, 0) << ls.err;
  EXPECT_EQ(json::parse(ls.out)["jobs"].size(), 1u);

  Result table = run({"ls"});
  ASSERT_EQ(table.code, 0);
  EXPECT_NE(table.out.find("cli-job"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("STATE"), std::string::npos);

  Result human = run({"show", id});
  ASSERT_EQ(human.code, 0);
  EXPECT_NE(human.out.find("submitted"), std::string::npos) << human.out;

  Result cancel = run({"cancel", id});
  ASSERT_EQ(cancel.code, 0) << cancel.err;
  EXPECT_NE(cancel.out.find("cancelled"), std::string::npos);
  EXPECT_EQ(json::parse(run({"show", id, "-o", "json"}).out)["state"], "cancelled");
}

TEST_F(Cli, SubmitFromAFileWithOverrides) {
  const std::string path = dir_.file("spec.json");
  std::ofstream(path) << R"({"name":"filed","model":{"kind":"mlp","hidden":[16]},
    "data":{"dataset":"synthetic","samples":500},"train":{"epochs":3}})";
  Result s = run({"submit", path, "--epochs", "2", "--priority", "80", "-o", "json"});
  ASSERT_EQ(s.code, 0) << s.err;
  json d = json::parse(run({"show", std::to_string(json::parse(s.out)["id"].get<int64_t>()), "-o", "json"}).out);
  EXPECT_EQ(d["name"], "filed");
  EXPECT_EQ(d["priority"], 80);
  EXPECT_EQ(d["spec"]["train"]["epochs"], 2);
  EXPECT_EQ(d["spec"]["data"]["samples"], 500);
}

TEST_F(Cli, ServerErrorsPrintTheMessageAndFieldAndExitNonZero) {
  Result bad = run({"submit", "--epochs", "-1"});
  EXPECT_EQ(bad.code, 2);  // input jobctld refuses: the command line is wrong
  EXPECT_NE(bad.err.find("train.epochs"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("field: train.epochs"), std::string::npos) << bad.err;

  Result missing = run({"show", "4242"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;

  Result not_id = run({"cancel", "abc"});
  EXPECT_EQ(not_id.code, 2);
  EXPECT_NE(not_id.err.find("positive integer"), std::string::npos) << not_id.err;

  Result no_file = run({"submit", dir_.file("none.json")});
  EXPECT_EQ(no_file.code, 1);
  EXPECT_NE(no_file.err.find("cannot read"), std::string::npos);

  const std::string bad_json = dir_.file("bad.json");
  std::ofstream(bad_json) << "{";
  Result malformed = run({"submit", bad_json});
  EXPECT_EQ(malformed.code, 2);
  EXPECT_NE(malformed.err.find("not valid JSON"), std::string::npos);
}

// The flags for the common fields reach the stored spec, over a spec file's; a bad value is
// refused before anything is sent.
TEST_F(Cli, SubmitFlagsForPlacementEnvironmentSetupAndEstimate) {
  const std::string path = dir_.file("command.json");
  std::ofstream(path) << R"({"name":"flagged","env":{"FROM_FILE":"1","OVER":"file"},
    "placement":{"mode":"cloud","queue_if_unplaceable":true}})";
  Result s = run({"submit", path, "--mode", "local", "--spot", "never", "--deadline-hours", "6", "--max-usd-per-hour",
                  "2.5", "--gpu", "cpu", "--gpus", "1", "--env", "OVER=flag", "--env", "OMP_NUM_THREADS=1", "--setup",
                  "python3 -m venv --system-site-packages .venv", "--setup", "true", "--estimate-hours", "0.25", "-o",
                  "json", "--", "/bin/sh", "-c", "exit 0"});
  ASSERT_EQ(s.code, 0) << s.err;
  const json d = json::parse(run({"show", std::to_string(json::parse(s.out)["id"].get<int64_t>()), "-o", "json"}).out);
  const json& spec = d["spec"];
  EXPECT_EQ(spec["command"], json::array({"/bin/sh", "-c", "exit 0"}));
  EXPECT_EQ(spec["placement"]["mode"], "local");
  EXPECT_EQ(spec["placement"]["spot"], "never");
  EXPECT_EQ(spec["placement"]["deadline_hours"], 6.0);
  EXPECT_EQ(spec["placement"]["max_usd_per_hour"], 2.5);
  EXPECT_EQ(spec["placement"]["queue_if_unplaceable"], true) << "the file's other fields stay";
  EXPECT_EQ(spec["resources"]["gpu"], "cpu");
  EXPECT_EQ(spec["env"], json::parse(R"({"FROM_FILE":"1","OVER":"flag","OMP_NUM_THREADS":"1"})")) << spec.dump();
  EXPECT_EQ(spec["setup"], json::array({"python3 -m venv --system-site-packages .venv", "true"}));
  EXPECT_EQ(spec["estimate"]["hours"], 0.25);

  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--mode", "moon"}, {"--spot", "maybe"}, {"--deadline-hours", "0"},
        {"--max-usd-per-hour", "-1"}, {"--env", "NOEQUALS"}, {"--estimate-hours", "0"}, {"--gpus", "0"}}) {
    std::vector<std::string> args{"submit"};
    args.insert(args.end(), bad.begin(), bad.end());
    args.insert(args.end(), {"--", "/bin/true"});
    Result r = run(args);
    EXPECT_EQ(r.code, 2) << bad[0];
    EXPECT_NE(r.err.find(bad[0] + " "), std::string::npos) << r.err;
  }
  EXPECT_EQ(json::parse(run({"ls", "-o", "json"}).out)["jobs"].size(), 1u) << "a refused flag submitted nothing";
}

// A command job as what it is: `show` prints its command (arguments that need it quoted), says
// it has no bundle, and prints no model, data or epochs; two waiting jobs that want the same
// resources show their places in that queue, in `show` and in `ls`.
TEST_F(Cli, CommandJobsShowTheirCommandAndWhereTheyWait) {
  std::vector<std::string> ids;
  for (int i = 0; i < 2; ++i) {
    Result s = run({"submit", "--gpu", "cpu", "-o", "json", "--", "python3", "train.py", "--note", "two words"});
    ASSERT_EQ(s.code, 0) << s.err;
    ids.push_back(std::to_string(json::parse(s.out)["id"].get<int64_t>()));
  }
  const json first = json::parse(run({"show", ids[0], "-o", "json"}).out);
  EXPECT_EQ(first["name"], "train.py");
  EXPECT_EQ(first["waiting"]["position"], 1) << first.dump(2);
  EXPECT_EQ(first["waiting"]["queue_length"], 2) << first.dump(2);
  EXPECT_EQ(first["bundle"], nullptr);

  Result human = run({"show", ids[1]});
  ASSERT_EQ(human.code, 0) << human.err;
  EXPECT_NE(human.out.find("name:       train.py\n"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("command:    python3 train.py --note \"two words\"\n"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("bundle:     none"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("queue:      #2 of 2 waiting for unplaced: cpu x1, command\n"), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("waiting:    "), std::string::npos) << human.out;
  EXPECT_NE(human.out.find("expected:   start: none until placement decides or a worker takes it\n"), std::string::npos) << human.out;
  for (const char* built_in : {"model:", "data:", "train:", "epochs", "acc ", "accuracy"})
    EXPECT_EQ(human.out.find(built_in), std::string::npos) << built_in << " in\n" << human.out;

  Result table = run({"ls"});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("#1/2: "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("#2/2: "), std::string::npos) << table.out;

  // A started job waits no more: cancelled, it has no `waiting`, and the other is first.
  ASSERT_EQ(run({"cancel", ids[0]}).code, 0);
  EXPECT_EQ(json::parse(run({"show", ids[0], "-o", "json"}).out)["waiting"], nullptr);
  const json second = json::parse(run({"show", ids[1], "-o", "json"}).out);
  EXPECT_EQ(second["waiting"]["position"], 1) << second.dump(2);
  EXPECT_EQ(second["waiting"]["queue_length"], 1) << second.dump(2);
}

// A job in an image: --image, --image-pull and --mount make the spec's fields, and `show` prints
// the image and, once its worker reported it, the digest it runs.
TEST_F(Cli, SubmitInAnImageAndShowItsDigest) {
  Result s = run({"submit", "--gpu", "cpu", "--image", "127.0.0.1:5000/team/train:1", "--image-pull", "never",
                  "--mount", "/data/sets:/data", "--mount", "/scratch:/scratch:rw", "-o", "json", "--", "python3",
                  "train.py"});
  ASSERT_EQ(s.code, 0) << s.err;
  const int64_t job = json::parse(s.out)["id"];
  const std::string id = std::to_string(job);
  const json shown = json::parse(run({"show", id, "-o", "json"}).out);
  EXPECT_EQ(shown["spec"]["image"], "127.0.0.1:5000/team/train:1");
  EXPECT_EQ(shown["spec"]["image_pull"], "never");
  EXPECT_EQ(shown["spec"]["mounts"], json::parse(R"([{"source":"/data/sets","target":"/data"},
    {"source":"/scratch","target":"/scratch","writable":true}])"));
  EXPECT_EQ(shown["image_digest"], nullptr);
  Result before = run({"show", id});
  EXPECT_NE(before.out.find("image:      127.0.0.1:5000/team/train:1  (never)  digest not reported yet\n"),
            std::string::npos)
      << before.out;
  EXPECT_NE(before.out.find("mount:      /scratch -> /scratch (rw)\n"), std::string::npos) << before.out;

  client::ApiClient worker(daemon_.url());
  auto reg = worker.register_worker(json{
      {"name", "w"},
      {"capabilities", {{"cpu_cores", 2}, {"commands", true}, {"containers", "podman"},
                        {"mounts", {{{"prefix", "/data"}}, {{"prefix", "/scratch"}, {"writable", true}}}}}}});
  ASSERT_TRUE(reg);
  const int64_t w = (*reg)["worker_id"];
  worker.set_worker_secret((*reg)["worker_secret"]);
  auto lease = worker.lease(w, 5);
  ASSERT_TRUE(lease && *lease);
  const std::string digest = "sha256:" + std::string(64, 'c');
  auto reported = worker.report_image(
      job, json{{"worker_id", w}, {"epoch", (**lease)["epoch"]}, {"image", "127.0.0.1:5000/team/train:1"}, {"digest", digest}});
  ASSERT_TRUE(reported) << reported.error().message;
  Result after = run({"show", id});
  ASSERT_EQ(after.code, 0) << after.err;
  EXPECT_NE(after.out.find("digest:     " + digest + "\n"), std::string::npos) << after.out;
  EXPECT_NE(after.out.find("running image 127.0.0.1:5000/team/train:1 (" + digest + ")"), std::string::npos) << after.out;

  // What the spec refuses is jobctld's to say, naming the field; a malformed --mount is the CLI's.
  Result short_name = run({"submit", "--image", "python:3.11", "--", "python3", "x.py"});
  EXPECT_EQ(short_name.code, 2);
  EXPECT_NE(short_name.err.find("field: image"), std::string::npos) << short_name.err;
  Result bad_mount = run({"submit", "--image", "a.io/b", "--mount", "/only", "--", "x"});
  EXPECT_EQ(bad_mount.code, 2);
  EXPECT_NE(bad_mount.err.find("--mount"), std::string::npos) << bad_mount.err;
}

// `jobctl registry`: a login stored from standard input, listed without its password, removed.
TEST_F(Cli, RegistryLoginListAndLogout) {
  Result login = run({"registry", "login", "127.0.0.1:5000", "-u", "ci-bot", "--password-stdin"}, "", "t0ken-S3cret\n");
  ASSERT_EQ(login.code, 0) << login.err;
  EXPECT_EQ(login.out, "stored your login to 127.0.0.1:5000 as ci-bot\n");
  Result list = run({"registry", "list"});
  ASSERT_EQ(list.code, 0) << list.err;
  EXPECT_NE(list.out.find("127.0.0.1:5000"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("ci-bot"), std::string::npos) << list.out;
  EXPECT_EQ(list.out.find("t0ken-S3cret"), std::string::npos) << list.out;
  EXPECT_EQ(run({"-o", "json", "registry", "list"}).out.find("t0ken-S3cret"), std::string::npos);
  EXPECT_EQ(daemon_.dump().find("t0ken-S3cret"), std::string::npos) << "sealed in the store";

  Result no_password = run({"registry", "login", "127.0.0.1:5000", "-u", "ci-bot", "--password-stdin"}, "", "");
  EXPECT_EQ(no_password.code, 2);
  EXPECT_NE(no_password.err.find("no password"), std::string::npos) << no_password.err;
  Result not_a_host = run({"registry", "login", "team", "-u", "u", "--password-stdin"}, "", "p\n");
  EXPECT_EQ(not_a_host.code, 2);
  EXPECT_NE(not_a_host.err.find("HOST"), std::string::npos) << not_a_host.err;

  Result logout = run({"registry", "logout", "127.0.0.1:5000"});
  ASSERT_EQ(logout.code, 0) << logout.err;
  EXPECT_EQ(logout.out, "forgot your login to 127.0.0.1:5000\n");
  EXPECT_NE(run({"registry", "list"}).out.find("no registry logins"), std::string::npos);
  EXPECT_EQ(run({"registry", "logout", "127.0.0.1:5000"}).code, 1) << "none left to forget";
}

TEST(CliUsage, SubmitShowsTheCommandAfterTheDashes) {
  CLI::App app{"jobctl"};
  std::ostringstream out, err;
  CliContext ctx{"http://127.0.0.1:1", "", "table", &out, &err};
  add_job_commands(app, ctx);
  const std::string help = app.get_subcommand("submit")->help();
  EXPECT_NE(help.find("[OPTIONS] [SPEC] [-- COMMAND...]\n"), std::string::npos) << help;
  EXPECT_NE(help.find("--estimate-hours"), std::string::npos) << help;
}

TEST(CliToken, ASavedTokenGoesOnlyToTheServerItWasSavedFor) {
  std::ostringstream out, err;
  CliContext ctx{"http://jobs.example:8080", "", "table", &out, &err};
  ctx.saved_server = "http://Jobs.Example:8080/";
  ctx.saved_token = "jct_saved";
  EXPECT_EQ(bearer_token(ctx), "jct_saved");  // same server: case of the host and a trailing '/' aside
  ctx.server = "http://other.example:8080";
  EXPECT_EQ(bearer_token(ctx), "");
  ctx.server = "https://jobs.example:8080";  // another scheme is another server
  EXPECT_EQ(bearer_token(ctx), "");
  ctx.token = "jct_given";  // --token or $JOBCTL_TOKEN: wherever the command goes
  EXPECT_EQ(bearer_token(ctx), "jct_given");
  EXPECT_FALSE(same_server("", ""));
}

TEST_F(Cli, ConnectionRefusedIsExplained) {
  Result r = run({"ls"}, "http://127.0.0.1:1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("cannot reach jobctld at http://127.0.0.1:1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("JOBCTL_SERVER"), std::string::npos);
}

TEST_F(Cli, WorkersAndPagination) {
  Result none = run({"workers"});
  ASSERT_EQ(none.code, 0);
  EXPECT_NE(none.out.find("no workers"), std::string::npos);
  daemon::jobs::WorkerRegistration reg;
  reg.name = "gpu-box";
  reg.capabilities.gpus.push_back({"Tesla T4", 15360});
  ASSERT_TRUE(daemon_.svc().register_worker(reg));
  daemon::jobs::WorkerRegistration fake;
  fake.name = "fake-box";
  fake.capabilities.gpus.assign(4, {"Tesla V100-SXM2-16GB", 16160});
  fake.capabilities.simulated = true;
  ASSERT_TRUE(daemon_.svc().register_worker(fake));
  Result ws = run({"workers"});
  EXPECT_NE(ws.out.find("1x T4 (Tesla T4, 15 GiB)"), std::string::npos) << ws.out;
  EXPECT_NE(ws.out.find("4x V100-16GB (Tesla V100-SXM2-16GB, 15 GiB) [simulated]"), std::string::npos) << ws.out;
  const json listed = json::parse(run({"workers", "-o", "json"}).out)["workers"];
  EXPECT_EQ(listed[0]["name"], "gpu-box");
  EXPECT_EQ(listed[0]["simulated"], false);
  EXPECT_EQ(listed[0]["gpus"], json::array({"T4"}));
  EXPECT_EQ(listed[1]["simulated"], true);
  EXPECT_EQ(listed[1]["capabilities"]["simulated"], true);

  for (int i = 0; i < 5; ++i) ASSERT_EQ(run({"submit", "--dataset", "synthetic"}).code, 0);
  json page = json::parse(run({"ls", "--limit", "2", "-o", "json"}).out);
  EXPECT_EQ(page["jobs"].size(), 2u);
  EXPECT_EQ(page["next"], "2");
  json all = json::parse(run({"ls", "--limit", "2", "--all", "-o", "json"}).out);
  EXPECT_EQ(all["jobs"].size(), 5u);
  EXPECT_TRUE(all["next"].is_null());
}

}  // namespace
}  // namespace jobctl::cli

namespace jobctl::cli {
namespace {

// GET /v1/workers comes in keyset pages; `jobctl workers` follows them.
TEST_F(Cli, WorkersArePaginatedAndTheCliFollowsThePages) {
  for (int i = 0; i < 130; ++i) {
    daemon::jobs::WorkerRegistration reg;
    reg.name = "w" + std::to_string(i);
    ASSERT_TRUE(daemon_.svc().register_worker(reg));
  }
  client::HttpClient http(daemon_.url(), {});
  auto first = http.request("GET", "/v1/workers");
  ASSERT_TRUE(first && first->status == 200);
  const json page = json::parse(first->body);
  EXPECT_EQ(page["workers"].size(), 100u);  // the default page
  EXPECT_EQ(page["next"], "100");
  auto small = http.request("GET", "/v1/workers?limit=2&after=128");
  ASSERT_TRUE(small && small->status == 200);
  const json last = json::parse(small->body);
  ASSERT_EQ(last["workers"].size(), 2u);
  EXPECT_EQ(last["workers"][0]["name"], "w128");
  EXPECT_TRUE(last["next"].is_null());
  for (const std::string bad : {"limit=0", "limit=x", "after=-1", "page=2"}) {
    auto r = http.request("GET", "/v1/workers?" + bad);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << bad << ": " << r->body;
  }
  const json all = json::parse(run({"workers", "-o", "json"}).out)["workers"];
  ASSERT_EQ(all.size(), 130u);
  EXPECT_EQ(all[129]["name"], "w129");
  EXPECT_NE(run({"workers"}).out.find("w129"), std::string::npos);
}

}  // namespace
}  // namespace jobctl::cli

namespace jobctl::cli {
namespace {

// The tables offer CSV: a header row and one row per job or worker, whole cells.
TEST_F(Cli, ListingsPrintCsv) {
  ASSERT_EQ(run({"submit", "--name", "one,two", "--dataset", "synthetic"}).code, 0);
  ASSERT_EQ(run({"submit", "--name", "three", "--dataset", "synthetic"}).code, 0);
  Result ls = run({"ls", "-o", "csv"});
  ASSERT_EQ(ls.code, 0) << ls.err;
  std::istringstream lines(ls.out);
  std::vector<std::string> rows;
  for (std::string line; std::getline(lines, line);) rows.push_back(line);
  ASSERT_EQ(rows.size(), 3u) << ls.out;
  EXPECT_EQ(rows[0], "ID,NAME,STATE,PRIO,WORKER,AGE,PROGRESS");
  EXPECT_EQ(rows[1].rfind("1,\"one,two\",queued,", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind("2,three,queued,", 0), 0u) << rows[2];
  Result none = run({"workers", "-o", "csv"});
  ASSERT_EQ(none.code, 0) << none.err;
  EXPECT_EQ(none.out, "ID,NAME,STATE,GPUS,CPUS,MEMORY,LAST SEEN,JOBS\n");
  EXPECT_EQ(run({"show", "1", "-o", "csv"}).code, 2);
}

// `show --fields`: the named fields as one line of JSON, for scripts and the README.
TEST_F(Cli, ShowFieldsPrintsCompactJson) {
  ASSERT_EQ(run({"submit", "--name", "compact", "--dataset", "synthetic"}).code, 0);
  Result r = run({"show", "1", "--fields", "state,name"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, R"({"name":"compact","state":"queued"})" "\n");
  Result bad = run({"show", "1", "--fields", "state,nope"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("has no field 'nope'"), std::string::npos) << bad.err;
}

// A token sent to a jobctld with auth off (the in-process one) protects nothing: a warning says so.
TEST_F(Cli, ATokenForAServerWithAuthOffIsWarnedAbout) {
  std::ostringstream out, err;
  CliContext ctx{daemon_.url(), "", "table", &out, &err};
  warn_if_token_unneeded(ctx);
  EXPECT_EQ(err.str(), "") << "no token, nothing to say";
  ctx.token = "jct_given";
  warn_if_token_unneeded(ctx);
  EXPECT_EQ(err.str().rfind("jobctl: warning: jobctld at " + daemon_.url() + " runs with auth off", 0), 0u) << err.str();
  std::ostringstream unreachable_err;
  CliContext unreachable{"http://127.0.0.1:1", "jct_given", "table", &out, &unreachable_err};
  warn_if_token_unneeded(unreachable);
  EXPECT_EQ(unreachable_err.str(), "");
}

// `jobctl logs`: output lines with the times their worker read them, --tail, --since,
// --timestamps, --download, and clear refusals of bad values.
TEST_F(Cli, LogsShowTimedLinesTailSinceAndDownload) {
  Result s = run({"submit", "--dataset", "synthetic", "-o", "json"});
  ASSERT_EQ(s.code, 0) << s.err;
  const int64_t job = json::parse(s.out)["id"];
  const std::string id = std::to_string(job);
  client::ApiClient worker(daemon_.url());
  auto reg = worker.register_worker(json{{"name", "w"}, {"capabilities", {{"cpu_cores", 2}}}});
  ASSERT_TRUE(reg);
  const int64_t w = (*reg)["worker_id"];
  worker.set_worker_secret((*reg)["worker_secret"]);
  auto lease = worker.lease(w, 5);
  ASSERT_TRUE(lease && *lease);
  const int64_t t0 = 1795000000123;  // 2026-11-18T11:06:40.123Z
  ASSERT_TRUE(worker.heartbeat(job, json{{"worker_id", w},
                                         {"epoch", (**lease)["epoch"]},
                                         {"log", {{{"time_ms", t0}, {"text", "loading data"}},
                                                  {{"time_ms", t0 + 60000}, {"text", "epoch 1 done"}},
                                                  {{"time_ms", t0 + 120000}, {"text", "epoch 2 done"}}}}}));

  Result all = run({"logs", id});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("loading data\nepoch 1 done\nepoch 2 done\n"), std::string::npos) << all.out;

  Result stamped = run({"logs", id, "--timestamps"});
  ASSERT_EQ(stamped.code, 0) << stamped.err;
  EXPECT_NE(stamped.out.find("2026-11-18T11:06:40.123Z loading data\n2026-11-18T11:07:40.123Z epoch 1 done\n"),
            std::string::npos)
      << stamped.out;

  Result tail = run({"logs", id, "--tail", "1"});
  ASSERT_EQ(tail.code, 0) << tail.err;
  EXPECT_NE(tail.out.find("epoch 2 done"), std::string::npos) << tail.out;
  EXPECT_EQ(tail.out.find("epoch 1 done"), std::string::npos) << tail.out;

  Result since = run({"logs", id, "--since", "2026-11-18T11:07:00Z"});
  ASSERT_EQ(since.code, 0) << since.err;
  EXPECT_EQ(since.out.find("loading data"), std::string::npos) << since.out;
  EXPECT_NE(since.out.find("epoch 1 done\nepoch 2 done\n"), std::string::npos) << since.out;
  // A duration back from now: the lines are from 2026-11-18, more than a minute ago.
  Result recent = run({"logs", id, "--since", "1m"});
  ASSERT_EQ(recent.code, 0) << recent.err;
  EXPECT_EQ(recent.out.find("done"), std::string::npos) << recent.out;

  Result lines = run({"logs", id, "-o", "json"});
  ASSERT_EQ(lines.code, 0) << lines.err;
  const json first = json::parse(lines.out.substr(0, lines.out.find('\n')));
  EXPECT_EQ(first["log"]["time_ms"], t0);
  EXPECT_EQ(first["log"]["n"], 1);

  const std::string file = dir_.file("job.log");
  Result dl = run({"logs", id, "--download", file});
  ASSERT_EQ(dl.code, 0) << dl.err;
  std::ifstream in(file);
  std::stringstream bytes;
  bytes << in.rdbuf();
  EXPECT_EQ(bytes.str(),
            "1 2026-11-18T11:06:40.123Z loading data\n"
            "2 2026-11-18T11:07:40.123Z epoch 1 done\n"
            "3 2026-11-18T11:08:40.123Z epoch 2 done\n");
  EXPECT_FALSE(std::filesystem::exists(file + ".part"));

  // Bad values: a message naming the flag, exit 2 (bad input), nothing printed or written.
  for (const auto& [args, flag] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"logs", id, "--tail", "0"}, "--tail"},
           {{"logs", id, "--tail", "ten"}, "--tail"},
           {{"logs", id, "--since", "yesterday"}, "--since"},
           {{"logs", id, "--since", "2026-13-01T00:00:00Z"}, "--since"},
           {{"logs", id, "--download", dir_.file("x.log"), "--tail", "5"}, "--download"}}) {
    Result bad = run(args);
    EXPECT_EQ(bad.code, 2) << args[2];
    EXPECT_NE(bad.err.find(flag), std::string::npos) << bad.err;
    EXPECT_TRUE(bad.out.empty()) << bad.out;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.file("x.log")));
  // A job with no output has nothing to download: the server's 404, exit 1.
  Result other = run({"submit", "--dataset", "synthetic", "-o", "json"});
  Result none = run({"logs", std::to_string(json::parse(other.out)["id"].get<int64_t>()), "--download", dir_.file("y.log")});
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("has no log"), std::string::npos) << none.err;
  EXPECT_FALSE(std::filesystem::exists(dir_.file("y.log")));
}

}  // namespace
}  // namespace jobctl::cli
