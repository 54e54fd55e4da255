// The cost commands (cli/cost_commands.cpp and the files it registers) through CLI11 exactly as
// main.cpp will drive them: build an App, add the cost commands, parse an argv. Trace and catalog
// files are written to a temporary folder; a catalog is fetched from a server of the test's own.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "client/http_client.h"
#include "tests/support/cost_cli.h"
#include "tests/support/recording_server.h"

namespace jobctl::cli {
namespace {

namespace fs = std::filesystem;

using Run = ::jobctl::testing::CostCliRun;

Run jobctl(const std::vector<std::string>& args) { return ::jobctl::testing::run_cost_cli("http://127.0.0.1:8080", args); }

class CostCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("jobctl-cost-cli-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    const auto p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

// 40 ticks of 0.125 h, spot up except ticks 4 and 5.
std::string small_trace() {
  std::string data;
  for (int i = 0; i < 40; ++i) data += (i ? "," : "") + std::string(i == 4 || i == 5 ? "0" : "1");
  return R"({"metadata": {"gap_seconds": 450}, "data": [)" + data + "]}";
}

TEST_F(CostCommands, SimulateJson) {
  const auto trace = write("t.json", small_trace());
  auto r = jobctl({"simulate", "--trace", trace, "--policy", "greedy", "--compute-hours", "1", "--deadline-hours", "3",
                   "--changeover-hours", "0.25", "--spot-price", "1", "--on-demand-price", "4", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(j["cost_usd"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["on_demand_cost_usd"].get<double>(), 5.0);
  EXPECT_DOUBLE_EQ(j["savings"].get<double>(), 0.7);
  EXPECT_EQ(j["deadline_met"], true);
  EXPECT_DOUBLE_EQ(j["spot_hours"].get<double>(), 1.5);
  EXPECT_DOUBLE_EQ(j["on_demand_hours"].get<double>(), 0.0);
  EXPECT_EQ(j["preemptions"], 1);
}

TEST_F(CostCommands, SimulateSeveralPoliciesTableAndCsv) {
  const auto trace = write("t.json", small_trace());
  std::vector<std::string> base{"simulate", "--trace", trace, "--policy", "all", "--compute-hours", "1",
                                "--deadline-hours", "3", "--spot-price", "1", "--on-demand-price", "4"};
  auto table = jobctl(base);
  ASSERT_EQ(table.code, 0) << table.err;
  for (const char* p : {"up", "greedy", "on-demand", "adaptive"}) EXPECT_NE(table.out.find(p), std::string::npos) << p;
  EXPECT_NE(table.out.find("policy"), std::string::npos);
  base.insert(base.end(), {"-o", "csv"});
  auto csv = jobctl(base);
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("policy,cost_usd,on_demand_cost_usd,savings,deadline_met", 0), 0u) << csv.out;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 7);  // header + 5 policies + optimal
}

// Two zones of 0.5 h ticks: zone 0 up for the first 30 h, zone 1 from then on. 100 h of compute by
// 130 h: only a move at 30 h finishes on spot (zone 1 alone would end at 130.5 h). lifetime and the
// optimum move (a 0.5 h changeover plus the 9 GB checkpoint's 72 s at 1 Gbit/s); up stays in zone 0.
// (A job this long: lifetime's cost guard lets it risk a period of spot only within 0.9% of the
// all-on-demand cost.)
TEST_F(CostCommands, SimulateAcrossZonesMoves) {
  std::string first, later;
  for (int i = 0; i < 280; ++i) {
    first += (i ? "," : "") + std::string(i < 60 ? "1" : "0");
    later += (i ? "," : "") + std::string(i < 60 ? "0" : "1");
  }
  const auto a = write("a.json", R"({"metadata": {"gap_seconds": 1800}, "data": [)" + first + "]}");
  const auto b = write("b.json", R"({"metadata": {"gap_seconds": 1800}, "data": [)" + later + "]}");
  auto r = jobctl({"simulate", "--trace", a, "--trace", b, "--policy", "up,lifetime,optimal", "--compute-hours", "100",
                   "--deadline-hours", "130", "--changeover-hours", "0.5", "--spot-price", "1", "--on-demand-price",
                   "4", "--checkpoint-gb", "9", "--transfer-gbps", "1", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 3u);
  EXPECT_EQ(j[0]["moves"], 0);
  EXPECT_EQ(j[1]["policy"], "lifetime");
  EXPECT_EQ(j[1]["moves"], 1);
  EXPECT_EQ(j[1]["deadline_met"], true);
  EXPECT_EQ(j[2]["moves"], 1);
  // All on spot: 30 h in zone 0 (29.5 h of it work), 0.52 h of changeover and 70.5 h in zone 1.
  EXPECT_NEAR(j[2]["cost_usd"].get<double>(), 30 + 0.52 + 70.5, 1e-9);
  EXPECT_NEAR(j[1]["cost_usd"].get<double>(), 30 + 0.52 + 70.5, 1e-9);
  auto bad = jobctl({"simulate", "--trace", a, "--trace", b, "--policy", "lifetime", "--compute-hours", "1",
                     "--deadline-hours", "3", "--spot-price", "1", "--on-demand-price", "4", "--transfer-gbps", "0"});
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("--transfer-gbps"), std::string::npos) << bad.err;
}

TEST_F(CostCommands, SimulateOptimalWaitsOutTheOutage) {
  // Spot is down at ticks 4 and 5 (0.5 h to 0.75 h). Knowing it, the optimum waits and then runs
  // on spot without interruption: 0.25 h changeover + 1 h at $1 = $1.25 (greedy pays $1.50).
  const auto trace = write("t.json", small_trace());
  auto r = jobctl({"simulate", "--trace", trace, "--policy", "optimal", "--compute-hours", "1", "--deadline-hours",
                   "3", "--changeover-hours", "0.25", "--spot-price", "1", "--on-demand-price", "4", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["policy"], "optimal");
  EXPECT_DOUBLE_EQ(j["cost_usd"].get<double>(), 1.25);
  EXPECT_EQ(j["preemptions"], 0);
  EXPECT_EQ(j["deadline_met"], true);
  const auto local = write("local.json", small_trace());
  auto with_local = jobctl({"simulate", "--trace", trace, "--policy", "optimal", "--compute-hours", "1",
                            "--deadline-hours", "3", "--spot-price", "1", "--on-demand-price", "4", "--local-trace",
                            local, "--local-price", "0.5"});
  EXPECT_EQ(with_local.code, 2);
  EXPECT_NE(with_local.err.find("--policy optimal"), std::string::npos) << with_local.err;
}

TEST_F(CostCommands, SimulateBadInput) {
  const auto trace = write("t.json", small_trace());
  auto unknown = jobctl({"simulate", "--trace", trace, "--policy", "psychic", "--compute-hours", "1",
                         "--deadline-hours", "3", "--spot-price", "1", "--on-demand-price", "4"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("--policy: unknown policy 'psychic'"), std::string::npos) << unknown.err;
  auto short_deadline = jobctl({"simulate", "--trace", trace, "--policy", "up", "--compute-hours", "10",
                                "--deadline-hours", "5", "--spot-price", "1", "--on-demand-price", "4"});
  EXPECT_EQ(short_deadline.code, 2);
  EXPECT_NE(short_deadline.err.find("--deadline-hours"), std::string::npos) << short_deadline.err;
  auto missing = jobctl({"simulate", "--trace", (dir_ / "nope.json").string(), "--policy", "up", "--compute-hours",
                         "1", "--deadline-hours", "3", "--spot-price", "1", "--on-demand-price", "4"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("cannot read trace"), std::string::npos) << missing.err;
  const auto bad = write("bad.json", R"({"metadata": {}, "data": [1]})");
  auto malformed = jobctl({"simulate", "--trace", bad, "--policy", "up", "--compute-hours", "1", "--deadline-hours",
                           "3", "--spot-price", "1", "--on-demand-price", "4"});
  EXPECT_EQ(malformed.code, 2);
  EXPECT_NE(malformed.err.find("gap_seconds"), std::string::npos) << malformed.err;
  auto no_spot_price = jobctl({"simulate", "--trace", trace, "--policy", "up", "--compute-hours", "1",
                               "--deadline-hours", "3", "--on-demand-price", "4"});
  EXPECT_EQ(no_spot_price.code, 2);
  auto svg = jobctl({"simulate", "--trace", trace, "--policy", "up", "--compute-hours", "1", "--deadline-hours", "3",
                     "--spot-price", "1", "--on-demand-price", "4", "-o", "svg"});
  EXPECT_EQ(svg.code, 2);
  auto required = jobctl({"simulate", "--trace", trace});
  EXPECT_NE(required.code, 0);  // CLI11: required options missing
}

TEST_F(CostCommands, SimulateThePapersTrace) {
  const char* src = std::getenv("JOBCTL_SOURCE_DIR");
  const fs::path trace = fs::path(src ? src : ".") / ".." / "shared" / "data" / "spot-traces" / "preemption" /
                         "1-node" / "aws-04-22-2023" / "us-west-2b_v100_1.json";
  if (!fs::exists(trace)) GTEST_SKIP() << "spot traces not found at " << trace;
  auto r = jobctl({"simulate", "--trace", trace.string(), "--policy", "up", "--compute-hours", "72",
                   "--deadline-hours", "84", "--changeover-hours", "0.3", "--spot-price", "0.92",
                   "--on-demand-price", "3.06", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["deadline_met"], true);
  EXPECT_GE(j["savings"].get<double>(), 0.40);
}

// The sample trace the project generates (docs/spot-traces.md) runs the README's simulate line in
// a clone alone: it parses, covers the deadline, and spot saves against on-demand.
TEST_F(CostCommands, SimulateTheGeneratedSampleTrace) {
  const char* src = std::getenv("JOBCTL_SOURCE_DIR");
  const std::string script = (fs::path(src ? src : ".") / "examples" / "spot-traces" / "make_sample_trace.py").string();
  std::string text;
  if (FILE* out = ::popen(("python3 '" + script + "'").c_str(), "r")) {
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, out)) > 0;) text.append(buf, n);
    ASSERT_EQ(::pclose(out), 0) << script;
  }
  ASSERT_FALSE(text.empty()) << "python3 " << script << " wrote nothing";
  const fs::path trace = write("sample-trace.json", text);
  auto r = jobctl({"simulate", "--trace", trace.string(), "--policy", "up,optimal", "--compute-hours", "72",
                   "--deadline-hours", "84", "--changeover-hours", "0.3", "--spot-price", "0.92",
                   "--on-demand-price", "3.06", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 2u);
  for (const auto& row : j) {
    EXPECT_EQ(row["trace_covers_deadline"], true) << row.dump();
    EXPECT_EQ(row["deadline_met"], true) << row.dump();
    EXPECT_GT(row["savings"].get<double>(), 0.0) << row.dump();
  }
  auto priced = jobctl({"simulate", "--trace", trace.string(), "--policy", "up", "--compute-hours", "72",
                        "--deadline-hours", "84", "--spot-price-from-trace", "--on-demand-price", "3.06", "-o", "json"});
  ASSERT_EQ(priced.code, 0) << priced.err;
}

TEST_F(CostCommands, BreakevenJsonReproducesTheWorkedExample) {
  auto r = jobctl({"report", "breakeven", "--gpu", "V100", "--purchase-usd", "2000", "--offer", "aws:p3.2xlarge",
                   "--power-kw", "0", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["breakeven_hours"].get<double>(), 653.6, 0.05);
  EXPECT_EQ(j["curve"].size(), 10u);
  EXPECT_EQ(j["offer"], "aws:p3.2xlarge");
  EXPECT_EQ(j["price_date"].get<std::string>().size(), 10u);
  // By default the GPU draws its TDP (300 W) at $0.15/kWh: the power stretches the break-even.
  auto with_power = jobctl({"report", "breakeven", "--gpu", "V100", "--purchase-usd", "2000", "--offer",
                            "aws:p3.2xlarge", "-o", "json"});
  ASSERT_EQ(with_power.code, 0) << with_power.err;
  EXPECT_NEAR(nlohmann::json::parse(with_power.out)["breakeven_hours"].get<double>(), 2000 / (3.06 - 0.045), 1e-6);
}

// An owned GPU against another model's offer is no like-for-like break-even: it is said (stderr,
// and "warnings" in JSON); the same model says nothing.
TEST_F(CostCommands, BreakevenWarnsWhenTheOfferIsAnotherGpu) {
  auto other = jobctl({"report", "breakeven", "--gpu", "A100", "--purchase-usd", "10000", "--offer", "aws:p5.48xlarge"});
  ASSERT_EQ(other.code, 0) << other.err;
  EXPECT_NE(other.err.find("warning: the offer's GPU is H100-SXM, not the A100-40GB-SXM compared"), std::string::npos)
      << other.err;
  auto json_run = jobctl({"report", "breakeven", "--gpu", "A100", "--purchase-usd", "10000", "--offer", "aws:p5.48xlarge",
                          "-o", "json"});
  ASSERT_EQ(json_run.code, 0) << json_run.err;
  const auto j = nlohmann::json::parse(json_run.out);
  ASSERT_EQ(j["warnings"].size(), 1u) << j["warnings"].dump();
  auto same = jobctl({"report", "breakeven", "--gpu", "A100", "--purchase-usd", "10000", "--offer", "aws:p4d.24xlarge",
                      "-o", "json"});
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_TRUE(nlohmann::json::parse(same.out)["warnings"].empty()) << same.out;
  EXPECT_EQ(same.err.find("warning"), std::string::npos) << same.err;
}

TEST_F(CostCommands, BreakevenTableCsvAndSvg) {
  const std::vector<std::string> base{"report", "breakeven", "--gpu", "RTX4090", "--purchase-usd", "1599",
                                      "--offer", "aws:g5.xlarge"};
  auto table = jobctl(base);
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("breakeven_hours"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("utilisation"), std::string::npos);
  auto csv_args = base;
  csv_args.insert(csv_args.end(), {"-o", "csv"});
  auto csv = jobctl(csv_args);
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 11);  // header + 10 utilisations
  EXPECT_NE(csv.out.find("breakeven_hours"), std::string::npos);
  auto svg_args = base;
  svg_args.insert(svg_args.end(), {"-o", "svg"});
  auto svg = jobctl(svg_args);
  ASSERT_EQ(svg.code, 0) << svg.err;
  EXPECT_EQ(svg.out.rfind("<svg", 0), 0u);
  const auto file = (dir_ / "chart.svg").string();
  auto file_args = base;
  file_args.insert(file_args.end(), {"--svg", file});
  ASSERT_EQ(jobctl(file_args).code, 0);
  std::ifstream in(file);
  std::string first;
  std::getline(in, first);
  EXPECT_EQ(first.rfind("<svg", 0), 0u);
}

TEST_F(CostCommands, BreakevenFromASkypilotCatalog) {
  const auto catalog = write("aws.csv",
                             "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region,AvailabilityZone\n"
                             "p3.2xlarge,V100,1.0,3.06,0.918,us-west-2,usw2-az2\n"
                             "p3.8xlarge,V100,4.0,12.24,,us-west-2,usw2-az2\n");
  auto r = jobctl({"report", "breakeven", "--gpu", "V100", "--purchase-usd", "2000", "--offer", "aws:p3.8xlarge",
                   "--catalog", catalog, "--power-kw", "0", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j["breakeven_hours"].get<double>(), 2000 / 3.06, 1e-9);  // per GPU: 12.24 / 4
  EXPECT_TRUE(j["spot"].is_null());
}

TEST_F(CostCommands, BreakevenBadInput) {
  auto gpu = jobctl({"report", "breakeven", "--gpu", "Voodoo2", "--purchase-usd", "2000", "--offer", "aws:p3.2xlarge"});
  EXPECT_EQ(gpu.code, 2);
  EXPECT_NE(gpu.err.find("--gpu: unknown GPU model 'Voodoo2'"), std::string::npos) << gpu.err;
  auto offer = jobctl({"report", "breakeven", "--gpu", "V100", "--purchase-usd", "2000", "--offer", "p3.2xlarge"});
  EXPECT_EQ(offer.code, 2);
  EXPECT_NE(offer.err.find("--offer"), std::string::npos);
  auto missing = jobctl({"report", "breakeven", "--gpu", "V100", "--purchase-usd", "2000", "--offer", "aws:p9.huge"});
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.err.find("no offer aws:p9.huge"), std::string::npos) << missing.err;
  auto util = jobctl({"report", "breakeven", "--gpu", "V100", "--purchase-usd", "2000", "--offer", "aws:p3.2xlarge",
                      "--utilisation", "1.5"});
  EXPECT_EQ(util.code, 2);
  EXPECT_NE(util.err.find("--utilisation"), std::string::npos) << util.err;
  auto negative = jobctl({"report", "breakeven", "--gpu", "V100", "--purchase-usd", "-5", "--offer", "aws:p3.2xlarge"});
  EXPECT_EQ(negative.code, 2);
  auto catalog = jobctl({"report", "breakeven", "--gpu", "V100", "--purchase-usd", "2000", "--offer", "aws:p3.2xlarge",
                         "--catalog", (dir_ / "none.csv").string()});
  EXPECT_EQ(catalog.code, 1);
}

// `report plan` checks its flags before it asks jobctld (the server in these runs is never
// reached: each is refused first); the daemon's refusals are tested with a daemon
// (tests/daemon/fleet_plan_history_test.cpp).
// `estimate --gpu`: the runtime placement starts from on that GPU model, from the spec's own
// precision: 6·P·D FLOPs at the BF16 peak and the family's default utilisation.
TEST_F(CostCommands, EstimateRuntimeOnAGpuModel) {
  const auto spec = write("gpt.json", R"({"command": ["python3", "train.py"], "estimate": {"model": {
    "parameters": 1000000000, "layers": 24, "hidden": 2048, "heads": 16, "vocab": 50304, "seq_len": 1024,
    "tokens": 1000000000, "precision": "bf16"}}})");
  auto r = jobctl({"estimate", spec, "--gpus", "2", "--gpu", "H100", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["runtime"]["gpu"], "H100-SXM");
  EXPECT_EQ(j["runtime"]["precision"], "bf16");
  EXPECT_DOUBLE_EQ(j["runtime"]["peak_tflops"].get<double>(), 989);
  EXPECT_DOUBLE_EQ(j["runtime"]["utilisation"].get<double>(), 0.41);
  EXPECT_NEAR(j["runtime"]["hours"].get<double>(), 6e18 / (2 * 989e12 * 0.41) / 3600, 1e-9);
  EXPECT_DOUBLE_EQ(j["bytes_per_gpu"]["loss_peak"].get<double>(), 8.0 * 1024 * 1 * 50304);  // 8·s·b·v
  auto table = jobctl({"estimate", spec, "--gpu", "H100"});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("runtime on H100-SXM"), std::string::npos) << table.out;
  auto unknown = jobctl({"estimate", spec, "--gpu", "H20"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("--gpu: 'H20' is not a known GPU model (closest: H200"), std::string::npos) << unknown.err;
  auto cpu = jobctl({"estimate", spec, "--gpu", "cpu"});
  EXPECT_EQ(cpu.code, 2) << cpu.out;
}

TEST_F(CostCommands, PlanBadInputNamesTheFlag) {
  auto missing = jobctl({"report", "plan"});
  EXPECT_NE(missing.code, 0);
  EXPECT_NE(missing.err.find("--from"), std::string::npos) << missing.err;
  auto expect_flag = [&](std::vector<std::string> args, const std::string& flag) {
    std::vector<std::string> all{"report", "plan", "--from", "2026-11-01"};
    all.insert(all.end(), args.begin(), args.end());
    auto r = jobctl(all);
    EXPECT_EQ(r.code, 2) << flag << ": " << r.err;
    EXPECT_NE(r.err.find(flag), std::string::npos) << r.err;
  };
  expect_flag({"--purchase-usd", "-1"}, "--purchase-usd");
  expect_flag({"--lifetime-years", "0"}, "--lifetime-years");
  expect_flag({"--utilisation", "1.5"}, "--utilisation");
  expect_flag({"--pue", "0.9"}, "--pue");
  expect_flag({"--max-extra-gpus", "999"}, "--max-extra-gpus");
  expect_flag({"--max-wait-hours", "-2"}, "--max-wait-hours");
  expect_flag({"--to", "yesterday"}, "--to");
  auto date = jobctl({"report", "plan", "--from", "2026-13-01"});
  EXPECT_EQ(date.code, 2);
  EXPECT_NE(date.err.find("--from"), std::string::npos) << date.err;
  auto output = jobctl({"report", "plan", "--from", "2026-11-01", "-o", "xml"});
  EXPECT_EQ(output.code, 2);
  EXPECT_NE(output.err.find("unsupported output"), std::string::npos) << output.err;
}

// The cheapest row of the region asked: zones differ in spot price only, and the region's
// cheapest spot is the one compared (it used to be the spot price of the zone that happened to be
// the cheapest on-demand row).
TEST_F(CostCommands, BreakevenTakesTheCheapestRowOfTheRegion) {
  const auto catalog = write("vms.csv",  // SkyPilot's own name: the cloud is read from the content
                             "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region,AvailabilityZone\n"
                             "p3.2xlarge,V100,1.0,3.06,1.10,us-east-1,use1-az1\n"
                             "p3.2xlarge,V100,1.0,3.06,0.52,us-east-1,use1-az2\n"
                             "p3.2xlarge,V100,1.0,3.06,0.40,us-west-2,usw2-az1\n"
                             "p3.2xlarge,V100,1.0,3.50,0.30,eu-west-1,euw1-az1\n");
  auto r = jobctl({"report", "breakeven", "--gpu", "V100", "--purchase-usd", "2000", "--offer", "aws:p3.2xlarge",
                   "--region", "us-east-1", "--catalog", catalog, "--power-kw", "0", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["offer_region"], "us-east-1");
  EXPECT_EQ(j["spot_zone"], "use1-az2");
  EXPECT_NEAR(j["spot"]["breakeven_hours"].get<double>(), 2000 / 0.52, 1e-6);
  r = jobctl({"report", "breakeven", "--gpu", "V100", "--purchase-usd", "2000", "--offer", "aws:p3.2xlarge",
              "--region", "us-west-2", "--catalog", catalog, "--power-kw", "0", "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["spot_zone"], "usw2-az1");
  EXPECT_NEAR(j["spot"]["breakeven_hours"].get<double>(), 2000 / 0.40, 1e-6);
  auto unknown = jobctl({"report", "breakeven", "--gpu", "RTX4080", "--purchase-usd", "2000", "--offer", "aws:p3.2xlarge"});
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("closest known names: RTX4090"), std::string::npos) << unknown.err;
}

// `catalog ls --dir` reads each file's cloud from its content: a GCP file named vms.csv (as
// SkyPilot names them) lists GPU machines, not "cpu" rows of a cloud called "vms".
TEST_F(CostCommands, CatalogLsReadsTheCloudFromTheContent) {
  fs::create_directories(dir_ / "cat");
  std::ofstream(dir_ / "cat" / "vms.csv")
      << "InstanceType,vCPUs,MemoryGiB,AcceleratorName,AcceleratorCount,GpuInfo,Region,AvailabilityZone,Price,SpotPrice\n"
         "a2-highgpu-1g,12.0,85.0,,,,us-central1,us-central1-a,0.73948,0.29576\n"
         ",,,A100,1,,us-central1,us-central1-a,2.93391,1.1472\n"
         "g2-standard-4,4.0,16.0,,,,us-central1,us-central1-a,0.14679,0.05872\n"
         ",,,L4,1,,us-central1,us-central1-a,0.56004,0.22402\n";
  std::ofstream(dir_ / "cat" / "lambda.csv") << "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"
                                                "gpu_1x_a10,A10,1,0.75,0.0,us-east-1\n"
                                                "gpu_1x_a100,A100,1,0,,us-east-1\n";
  auto r = jobctl({"catalog", "ls", "--dir", (dir_ / "cat").string(), "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  bool saw_a2 = false;
  for (const auto& o : j) {
    EXPECT_NE(o["gpu_model"], "cpu") << o.dump();
    if (o["cloud"] == "gcp" && o["instance_type"] == "a2-highgpu-1g") saw_a2 = true;
    if (o["instance_type"] == "gpu_1x_a10" && o["source"].get<std::string>().find("lambda.csv") != std::string::npos) {
      EXPECT_TRUE(o["spot_usd_per_hour"].is_null()) << o.dump();  // SpotPrice 0.0: no spot market
    }
    EXPECT_GT(o["on_demand_usd_per_hour"].get<double>(), 0) << o.dump();
  }
  EXPECT_TRUE(saw_a2);
  // One warning per file: the zero price row and the zero spot price, counted.
  EXPECT_NE(r.err.find("lambda.csv: skipped 1 of 2 rows"), std::string::npos) << r.err;
  // The table shows no spot market as "-", never "$0.0000"; --gpu takes a request.
  auto table = jobctl({"catalog", "ls", "--dir", (dir_ / "cat").string(), "--gpu", "A100"});
  ASSERT_EQ(table.code, 0) << table.err;
  EXPECT_NE(table.out.find("gcp:a2-highgpu-1g"), std::string::npos) << table.out;
  EXPECT_EQ(table.out.find("L4"), std::string::npos) << table.out;
  auto a10 = jobctl({"catalog", "ls", "--dir", (dir_ / "cat").string(), "--gpu", "A10"});
  EXPECT_NE(a10.out.find("lambda:gpu_1x_a10 "), std::string::npos) << a10.out;
  EXPECT_EQ(a10.out.find("0.0000 "), std::string::npos) << a10.out;
  auto bad = jobctl({"catalog", "ls", "--dir", (dir_ / "cat").string(), "--gpu", "A1000"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("--gpu"), std::string::npos) << bad.err;
}

// `catalog update` fetches through the CLI's HTTP client (client/http_client.h): over HTTP from
// a server of the test's own (following its redirect), or from a file:// URL; it validates before
// storing, and a failed fetch or an error answer stores nothing.
TEST_F(CostCommands, CatalogUpdateFetchesValidatesAndStores) {
  const std::string csv = "InstanceType,AcceleratorName,AcceleratorCount,Price,SpotPrice,Region\n"
                          "gpu_1x_a10,A10,1,0.75,,us-east-1\n";
  jobctl::testing::RecordingServer server([&](const std::string& head) {
    using S = jobctl::testing::RecordingServer;
    if (head.rfind("GET /moved/lambda_vms.csv ", 0) == 0)
      return S::response(302, "text/plain", "", "Location: /catalogs/lambda_vms.csv\r\n");
    if (head.rfind("GET /catalogs/lambda_vms.csv ", 0) == 0) return S::response(200, "text/csv", csv);
    if (head.rfind("GET /catalogs/junk.csv ", 0) == 0) return S::response(200, "text/csv", "not,a\ncatalog\n");
    return S::response(404, "text/plain", "no such file");
  });
  const std::string store = (dir_ / "store").string();
  auto r = jobctl({"catalog", "update", "--from", server.url() + "/moved/lambda_vms.csv", "--dir", store});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("stored 1 offers for lambda in " + store + "/lambda.csv"), std::string::npos) << r.out;
  std::stringstream stored;
  stored << std::ifstream(store + "/lambda.csv").rdbuf();
  EXPECT_EQ(stored.str(), csv);
  EXPECT_NE(server.seen().find("GET /catalogs/lambda_vms.csv "), std::string::npos) << "the redirect was not followed";
  EXPECT_EQ(server.seen().find("Accept: application/json"), std::string::npos) << server.seen();

  auto listed = jobctl({"catalog", "ls", "--dir", store, "--gpu", "A10", "-o", "json"});
  ASSERT_EQ(listed.code, 0) << listed.err;
  EXPECT_NE(listed.out.find("lambda.csv"), std::string::npos) << listed.out;

  const std::string file = write("gcp_vms.csv", csv);
  auto from_file = jobctl({"catalog", "update", "--from", "file://" + file, "--dir", store});
  ASSERT_EQ(from_file.code, 0) << from_file.err;
  EXPECT_TRUE(fs::exists(store + "/gcp.csv"));

  auto missing = jobctl({"catalog", "update", "--from", server.url() + "/catalogs/none_vms.csv", "--dir", store});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("answered HTTP 404"), std::string::npos) << missing.err;
  auto junk = jobctl({"catalog", "update", "--from", server.url() + "/catalogs/junk.csv", "--cloud", "aws", "--dir", store});
  EXPECT_EQ(junk.code, 2);
  EXPECT_NE(junk.err.find("--from: " + server.url() + "/catalogs/junk.csv"), std::string::npos) << junk.err;
  auto unreachable = jobctl({"catalog", "update", "--from", "http://127.0.0.1:1/aws_vms.csv", "--dir", store});
  EXPECT_EQ(unreachable.code, 1);
  EXPECT_NE(unreachable.err.find("cannot fetch"), std::string::npos) << unreachable.err;
  EXPECT_FALSE(fs::exists(store + "/aws.csv")) << "a failed update stored a file";
}

// The download's bound: an answer over it is refused whether its size is announced up front or
// only known once it has come (no Content-Length: read until the server closes).
TEST(FetchUrl, RefusesABodyOverItsLimit) {
  using jobctl::testing::RecordingServer;
  RecordingServer server([](const std::string& head) {
    if (head.rfind("GET /announced ", 0) == 0) return RecordingServer::response(200, "text/csv", std::string(5000, 'x'));
    return "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + std::string(5000, 'y');
  });
  for (const char* path : {"/announced", "/streamed"}) {
    auto over = client::fetch_url(server.url() + path, 30'000, 4096);
    ASSERT_FALSE(over) << path;
    EXPECT_EQ(over.error().code, ErrorCode::payload_too_large) << path << ": " << over.error().message;
    auto fits = client::fetch_url(server.url() + path, 30'000, 5000);
    ASSERT_TRUE(fits) << path << ": " << fits.error().message;
    EXPECT_EQ(fits->status, 200);
    EXPECT_EQ(fits->body.size(), 5000u) << path;
  }
}

TEST_F(CostCommands, GpusListsTheTable) {
  auto r = jobctl({"gpus"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name : {"H100-PCIe", "H100-NVL", "A100-80GB-PCIe", "V100-32GB", "A10G", "L40S", "RTX4090"})
    EXPECT_NE(r.out.find(name), std::string::npos) << name;
  auto j = nlohmann::json::parse(jobctl({"gpus", "-o", "json"}).out);
  EXPECT_GE(j.size(), 20u);
}

// Quote and show tables: the chosen option and the cheapest fitting ones, the rejected ones
// counted by reason (a quote used to print every one of 1,771 rows); readable figures.
TEST(PrintPlacement, CheapestFittingOptionsAndRejectionCounts) {
  nlohmann::json p = {{"reason", "cheapest option (no deadline)"}, {"candidates", nlohmann::json::array()}};
  for (int i = 0; i < 30; ++i) {
    nlohmann::json c = {{"label", "on-demand aws:x" + std::to_string(i)}, {"gpu", "T4"}, {"gpus", 1},
                        {"usd_per_hour", 0.5 + i}, {"estimated_hours", 0.0025}, {"estimated_cost_usd", 0.001 * (30 - i)},
                        {"meets_deadline", true}, {"chosen", i == 29}};
    if (i == 29) c["queue_wait_hours"] = 0.25;  // a busy pool or a Slurm queue: the "wait" column
    if (i < 12) {
      c["rejection"] = i < 8 ? "gpu_constraint" : "memory";
      c["rejected"] = "no";
    }
    p["candidates"].push_back(c);
  }
  std::ostringstream out;
  print_placement(out, p);
  const std::string text = out.str();
  EXPECT_NE(text.find("aws:x29"), std::string::npos) << text;       // the chosen one
  EXPECT_EQ(text.find("aws:x12 "), std::string::npos) << text;      // the dearest fitting one is not listed
  EXPECT_NE(text.find("10 of 18 fitting options"), std::string::npos) << text;
  // The order as printed: the chosen row leads even though it is not the cheapest.
  EXPECT_NE(text.find("the chosen option first, then the other fitting options by estimated cost, cheapest first"),
            std::string::npos) << text;
  EXPECT_LT(text.find("aws:x29"), text.find("aws:x28")) << text;
  EXPECT_LT(text.find("aws:x28"), text.find("aws:x27")) << text;
  EXPECT_NE(text.find("rejected: 12 (8 gpu_constraint, 4 memory)"), std::string::npos) << text;
  EXPECT_NE(text.find("9 s"), std::string::npos) << text;           // 0.0025 h, not "0.00 h"
  EXPECT_NE(text.find("$0.0010"), std::string::npos) << text;      // not "$0.00"
  EXPECT_NE(text.find("wait"), std::string::npos) << text;
  EXPECT_NE(text.find("15 min"), std::string::npos) << text;       // the chosen one's queue wait
  std::ostringstream all;
  print_placement(all, p, true);
  EXPECT_NE(all.str().find("aws:x0 "), std::string::npos) << all.str();
  EXPECT_EQ(all.str().find("fitting options"), std::string::npos);
  EXPECT_NE(all.str().find("every option, in the order placement weighed them"), std::string::npos) << all.str();
}

// Each option shows the GPUs the job takes there and its memory on each (resources.gpus "auto"
// picks the count per option).
TEST(PrintPlacement, GpusUsedAndMemoryPerGpu) {
  nlohmann::json p = {{"reason", "cheapest option (no deadline)"}, {"candidates", nlohmann::json::array()}};
  p["candidates"].push_back({{"label", "on-demand aws:p5.48xlarge"}, {"gpu", "H100-SXM"}, {"gpus", 8}, {"job_gpus", 2},
                             {"memory_gib_per_gpu", 65.19}, {"usd_per_hour", 98.32}, {"estimated_hours", 13.8},
                             {"estimated_cost_usd", 1361.69}, {"chosen", true}});
  std::ostringstream out;
  print_placement(out, p);
  const std::string text = out.str();
  EXPECT_NE(text.find("uses"), std::string::npos) << text;
  EXPECT_NE(text.find("GiB/GPU"), std::string::npos) << text;
  EXPECT_NE(text.find("H100-SXM x8"), std::string::npos) << text;
  EXPECT_NE(text.find(" 2 "), std::string::npos) << text;
  EXPECT_NE(text.find("65.2"), std::string::npos) << text;
}

// A spot row of an offer with no spot market has no price: "-", and no wait, time or cost.
TEST(PrintPlacement, NoSpotMarketIsADashNotZero) {
  nlohmann::json p = {{"reason", "r"}, {"candidates", nlohmann::json::array()}};
  p["candidates"].push_back({{"label", "spot lambda:gpu_1x_a10 us-east-1"}, {"gpu", "A10"}, {"gpus", 1},
                             {"usd_per_hour", nullptr}, {"queue_wait_hours", 0.0}, {"estimated_hours", 0.0},
                             {"estimated_cost_usd", 0.0}, {"rejection", "no_provider"}, {"rejected", "no provider"}});
  std::ostringstream out;
  print_placement(out, p, true);
  const std::string text = out.str();
  EXPECT_EQ(text.find("$0.000/h"), std::string::npos) << text;
  EXPECT_EQ(text.find("0.00 s"), std::string::npos) << text;
  const std::string row = text.substr(text.find("spot lambda"));
  size_t dashes = 0;
  for (size_t at = row.find(" - "); at != std::string::npos; at = row.find(" - ", at + 1)) ++dashes;
  EXPECT_GE(dashes, 4u) << "$/h, wait, est. time, est. cost: " << text;
}

// The document's workload, a built-in model's as a described transformer's: one line.
TEST(PrintPlacement, TheWorkloadLine) {
  nlohmann::json p = {{"reason", "cheapest option (no deadline)"}, {"candidates", nlohmann::json::array()}};
  p["workload"] = {{"model_kind", "mlp"}, {"parameters", 235146}, {"training_flops", 8.47e12}, {"gpus", 1},
                   {"gpus_auto", false}, {"memory_gib_per_gpu", 0.7123}};
  std::ostringstream out;
  print_placement(out, p);
  EXPECT_NE(out.str().find("workload: mlp, 235.1K parameters, 8.47T FLOPs, 0.71 GiB per GPU on 1 GPU\n"),
            std::string::npos)
      << out.str();
  p["workload"] = {{"model_kind", "transformer"}, {"parameters", 6.738e9}, {"training_flops", 4.04e19}, {"gpus", 1},
                   {"gpus_auto", true}, {"memory_gib_per_gpu", 120.89}};
  std::ostringstream auto_out;
  print_placement(auto_out, p);
  EXPECT_NE(auto_out.str().find("workload: transformer, 6.74B parameters, 4.04e+19 FLOPs, 120.89 GiB per GPU on 1 GPU "
                                "(gpus auto: each option at the smallest count that fits)"),
            std::string::npos)
      << auto_out.str();
}

}  // namespace
}  // namespace jobctl::cli
