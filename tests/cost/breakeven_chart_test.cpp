#include <regex>

#include <gtest/gtest.h>

#include "cost/breakeven_chart.h"
#include "cost/cost_json.h"

namespace jobctl::cost {
namespace {

BreakevenReport report(const std::string& offer = "aws:p3.2xlarge") {
  BreakevenInput in;
  in.local.gpu_model = "V100";
  in.local.purchase_usd = 2000;
  in.offer = offer;
  in.cloud_usd_per_hour = 3.06;
  in.cloud_spot_usd_per_hour = 0.52;
  auto r = breakeven_report(in);
  EXPECT_TRUE(r);
  return *r;
}

TEST(BreakevenChart, IsAnSvgWithEverySeries) {
  const std::string svg = breakeven_svg(report());
  EXPECT_EQ(svg.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\"", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '<'), std::count(svg.begin(), svg.end(), '>'));
  // Four series (amortised, marginal, on-demand, spot) and the break-even marker.
  const std::regex polyline("<polyline ");
  EXPECT_EQ(std::distance(std::sregex_iterator(svg.begin(), svg.end(), polyline), std::sregex_iterator()), 4);
  EXPECT_NE(svg.find("break-even 1.9%"), std::string::npos);
  EXPECT_NE(svg.find("break-even after 653.6 h of use"), std::string::npos);
}

TEST(BreakevenChart, EscapesLabels) {
  const std::string svg = breakeven_svg(report("x:<script>&"));
  EXPECT_EQ(svg.find("<script>"), std::string::npos);
  EXPECT_NE(svg.find("x:&lt;script&gt;&amp;"), std::string::npos);
}

TEST(CostJson, BreakevenReportHasTheHeadlineFigures) {
  const nlohmann::json j = report();
  EXPECT_NEAR(j["breakeven_hours"].get<double>(), 653.59, 0.01);
  EXPECT_EQ(j["offer"], "aws:p3.2xlarge");
  EXPECT_EQ(j["curve"].size(), 10u);
  EXPECT_TRUE(j["spot"].is_object());
  EXPECT_TRUE(j["on_demand"]["payback_months"].is_number());
  EXPECT_EQ(j["local"]["gpu_model"], "V100");
}

TEST(CostJson, LocalGpuFromJsonValidates) {
  auto ok = local_gpu_from_json(nlohmann::json::parse(
      R"({"gpu_model":"RTX4090","count":2,"purchase_usd":1599,"power_kw":0.45,"electricity_usd_per_kwh":0.3})"));
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->count, 2);
  EXPECT_DOUBLE_EQ(ok->purchase_usd, 1599);
  EXPECT_DOUBLE_EQ(ok->lifetime_years, 4);  // default
  EXPECT_EQ(local_gpu_from_json(nlohmann::json::parse(R"({"gpu_model":"V100","colour":"red"})")).error().field,
            "colour");
  EXPECT_EQ(local_gpu_from_json(nlohmann::json::parse(R"({"gpu_model":"V100","pue":"high"})")).error().field, "pue");
  EXPECT_EQ(local_gpu_from_json(nlohmann::json::parse(R"({"gpu_model":"V100","utilisation":2})")).error().field,
            "utilisation");
  EXPECT_EQ(local_gpu_from_json(nlohmann::json::parse(R"({"count":1})")).error().field, "gpu_model");
}

}  // namespace
}  // namespace jobctl::cost
