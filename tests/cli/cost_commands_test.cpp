// cli/cost_commands.cpp through CLI11 exactly as main.cpp will drive it: build an App, add the
// cost commands, parse an argv. Trace and catalog files are written to a temporary folder.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"

namespace jobctl::cli {
namespace {

namespace fs = std::filesystem;

struct Run {
  int code = 0;
  std::string out;
  std::string err;
};

Run jobctl(std::vector<std::string> args) {
  std::ostringstream out, err;
  CliContext ctx{"http://127.0.0.1:8080", "", "table", &out, &err};
  CLI::App app{"jobctl"};
  app.require_subcommand(1);
  add_cost_commands(app, ctx);
  std::vector<const char*> argv{"jobctl"};
  for (const auto& a : args) argv.push_back(a.c_str());
  Run r;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    r.code = e.get_exit_code();
    if (e.get_name() != "RuntimeError") err << e.what();
  }
  r.out = out.str();
  r.err = err.str();
  return r;
}

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
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 6);  // header + 4 policies + optimal
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

}  // namespace
}  // namespace jobctl::cli
