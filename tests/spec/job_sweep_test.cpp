// Sweeps: a spec's `sweep` expanded into one spec per case, each with its `array` case, and the
// errors naming the field.
#include "train/spec/job_sweep.h"

#include <gtest/gtest.h>

#include "train/spec/job_spec.h"

namespace jobctl::train {
namespace {

constexpr const char* kCommand = R"("command": ["python3", "train.py"], "name": "sweep")";

std::string spec_with(const std::string& sweep) { return std::string("{") + kCommand + ", \"sweep\": " + sweep + "}"; }

TEST(JobSweep, GridIsTheProductWithTheLastParameterFastest) {
  auto specs = expand_sweep(spec_with(R"({"grid": {"lr": [0.1, 0.001], "batch": [32, 64, 128]}})"));
  ASSERT_TRUE(specs) << specs.error().message;
  ASSERT_EQ(specs->size(), 6u);
  auto third = parse_job_spec((*specs)[2]);
  ASSERT_TRUE(third) << third.error().message;
  ASSERT_TRUE(third->array);
  EXPECT_EQ(third->array->index, 2);
  EXPECT_EQ(third->array->parameters,
            (std::vector<std::pair<std::string, std::string>>{{"lr", "0.1"}, {"batch", "128"}}));
  auto last = parse_job_spec(specs->back());
  ASSERT_TRUE(last);
  EXPECT_EQ(last->array->index, 5);
  EXPECT_EQ(last->array->parameters,
            (std::vector<std::pair<std::string, std::string>>{{"lr", "0.001"}, {"batch", "128"}}));
  EXPECT_EQ(last->command, (std::vector<std::string>{"python3", "train.py"}));
}

TEST(JobSweep, CasesAreTakenAsListedAndValuesBecomeText) {
  auto specs = expand_sweep(spec_with(R"({"cases": [{"opt": "sgd", "warm": true}, {"opt": "adamw", "lr": 3e-4}]})"));
  ASSERT_TRUE(specs) << specs.error().message;
  ASSERT_EQ(specs->size(), 2u);
  auto first = parse_job_spec((*specs)[0]);
  auto second = parse_job_spec((*specs)[1]);
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->array->parameters, (std::vector<std::pair<std::string, std::string>>{{"opt", "sgd"}, {"warm", "true"}}));
  EXPECT_EQ(second->array->parameters,
            (std::vector<std::pair<std::string, std::string>>{{"opt", "adamw"}, {"lr", "3e-04"}}));
}

TEST(JobSweep, TheCanonicalSpecKeepsTheCase) {
  auto specs = expand_sweep(spec_with(R"({"cases": [{"lr": 1}]})"));
  ASSERT_TRUE(specs);
  auto spec = parse_job_spec((*specs)[0]);
  ASSERT_TRUE(spec);
  auto again = parse_job_spec(to_json(*spec));
  ASSERT_TRUE(again) << again.error().message;
  EXPECT_EQ(*again, *spec);
}

struct BadSweep {
  const char* sweep;
  const char* field;
};

class JobSweepErrors : public ::testing::TestWithParam<BadSweep> {};

TEST_P(JobSweepErrors, NameTheField) {
  auto specs = expand_sweep(spec_with(GetParam().sweep));
  ASSERT_FALSE(specs) << GetParam().sweep;
  EXPECT_EQ(specs.error().field, GetParam().field) << specs.error().message;
  EXPECT_EQ(specs.error().code, ErrorCode::invalid_argument);
}

INSTANTIATE_TEST_SUITE_P(
    All, JobSweepErrors,
    ::testing::Values(BadSweep{R"("lr")", "sweep"}, BadSweep{R"({})", "sweep"},
                      BadSweep{R"({"grid": {"lr": [1]}, "cases": [{"lr": 1}]})", "sweep"},
                      BadSweep{R"({"grid": {"lr": []}})", "sweep.grid.lr"},
                      BadSweep{R"({"grid": {"lr": [1, [2]]}})", "sweep.grid.lr[1]"},
                      BadSweep{R"({"grid": {"1lr": [1]}})", "sweep.grid.1lr"},
                      BadSweep{R"({"grid": {"lr": [1], "LR": [2]}})", "sweep.grid.LR"},
                      BadSweep{R"({"cases": [{"lr": 1}, 3]})", "sweep.cases[1]"},
                      BadSweep{R"({"cases": [{"lr": null}]})", "sweep.cases[0].lr"},
                      BadSweep{R"({"grid": {"lr": [1]}, "extra": 1})", "sweep.extra"}));

TEST(JobSweep, TooManyCasesAreRefused) {
  std::string values;
  for (int i = 0; i < 40; ++i) values += (values.empty() ? "" : ",") + std::to_string(i);
  auto specs = expand_sweep(spec_with(R"({"grid": {"a": [)" + values + R"(], "b": [)" + values + "]}}"));
  ASSERT_FALSE(specs);
  EXPECT_EQ(specs.error().field, "sweep.grid");
}

// Each case repeats the whole spec: 1000 cases of a 10 KB spec are 10 MB of specs.
TEST(JobSweep, CasesPastTheirBytesAreRefusedNamingSweep) {
  std::string values;
  for (int i = 0; i < 1000; ++i) values += (values.empty() ? "" : ",") + std::to_string(i);
  const std::string pad = R"(, "env": {"PAD": ")" + std::string(8000, 'p') + R"(", "PAD2": ")" + std::string(2000, 'q') + "\"}";
  auto specs = expand_sweep(std::string("{") + kCommand + pad + R"(, "sweep": {"grid": {"i": [)" + values + "]}}}");
  ASSERT_FALSE(specs);
  EXPECT_EQ(specs.error().code, ErrorCode::payload_too_large);
  EXPECT_EQ(specs.error().field, "sweep");
  EXPECT_NE(specs.error().message.find(std::to_string(kMaxSweepBytes)), std::string::npos) << specs.error().message;
  // The same spec over 100 cases (1 MB) is fine.
  std::string fewer;
  for (int i = 0; i < 100; ++i) fewer += (fewer.empty() ? "" : ",") + std::to_string(i);
  auto ok = expand_sweep(std::string("{") + kCommand + pad + R"(, "sweep": {"grid": {"i": [)" + fewer + "]}}}");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->size(), 100u);
}

TEST(JobSweep, ArrayIsACommandJobsAndRefusedOnABuiltInModel) {
  auto spec = parse_job_spec(R"({"model": {"kind": "mlp"}, "data": {"dataset": "synthetic"},
                                 "array": {"index": 0, "parameters": {}}})");
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().field, "array");
  auto bad_name = parse_job_spec(std::string("{") + kCommand + R"(, "array": {"index": 0, "parameters": {"a-b": "1"}}})");
  ASSERT_FALSE(bad_name);
  EXPECT_EQ(bad_name.error().field, "array.parameters.a-b");
}

}  // namespace
}  // namespace jobctl::train
