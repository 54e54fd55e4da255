// Dependencies between jobs (daemon/jobs/job_dependencies.h) over a real store: the verdict and
// its words for jobs and arrays in each state, and what a submit may name.
#include "daemon/jobs/job_dependencies.h"

#include <gtest/gtest.h>

#include "base/clock.h"
#include "tests/support/temp_dir.h"

namespace jobctl::daemon::jobs {
namespace {

using store::JobState;
using train::DependencyCondition;
using train::JobDependency;
using Verdict = DependencyCheck::Verdict;

class JobDependencies : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions o;
    o.path = dir_.file("jobctl.db");
    auto s = store::Store::open(o, clock_);
    ASSERT_TRUE(s) << s.error().message;
    store_ = std::move(*s);
  }

  int64_t job(JobState state, std::optional<int64_t> array = std::nullopt, const std::string& owner = "") {
    auto id = store_->write_value<int64_t>([&](store::WriteTxn& txn) -> Expected<int64_t> {
      store::JobRow r;
      r.name = "j";
      r.spec_json = R"({"name":"j","command":["true"]})";
      r.state = state;
      r.created_ms = r.updated_ms = 1000;
      auto id = txn.insert_job(r);
      if (!id) return id.error();
      if (array)
        if (auto st = txn.set_job_array(*id, *array == 0 ? *id : *array); !st) return st.error();
      if (!owner.empty())
        if (auto st = txn.set_job_submitter(*id, owner, ""); !st) return st.error();
      return *id;
    });
    EXPECT_TRUE(id) << id.error().message;
    return *id;
  }

  DependencyCheck check(std::vector<JobDependency> after) {
    auto c = check_dependencies(*store_, after);
    EXPECT_TRUE(c) << c.error().message;
    return c ? *c : DependencyCheck{};
  }

  ManualClock clock_;
  jobctl::testing::TempDir dir_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(JobDependencies, AJobDependencyWaitsIsMetOrFailsByItsCondition) {
  const int64_t running = job(JobState::running), ok = job(JobState::succeeded), failed = job(JobState::failed),
                cancelled = job(JobState::cancelled);
  const auto need = DependencyCondition::succeeded, any = DependencyCondition::ended;
  DependencyCheck c = check({{false, running, need}});
  EXPECT_EQ(c.verdict, Verdict::waiting);
  EXPECT_EQ(c.reason, "waiting for job " + std::to_string(running) + " (running) to have succeeded");
  EXPECT_EQ(check({{false, ok, need}, {false, failed, any}, {false, cancelled, any}}).verdict, Verdict::met);
  c = check({{false, ok, need}, {false, failed, need}});
  EXPECT_EQ(c.verdict, Verdict::failed);
  EXPECT_EQ(c.reason, "job " + std::to_string(failed) + " failed (this job was to run after it succeeded)");
  EXPECT_EQ(check({{false, cancelled, need}}).verdict, Verdict::failed);
  // Waiting on one, failed on another: failed (it can never run).
  EXPECT_EQ(check({{false, running, need}, {false, failed, need}}).verdict, Verdict::failed);
  EXPECT_EQ(check({}).verdict, Verdict::met);
}

TEST_F(JobDependencies, AnArrayIsMetWhenEveryJobOfItIs) {
  const int64_t first = job(JobState::succeeded, 0);
  job(JobState::running, first);
  job(JobState::queued, first);
  DependencyCheck c = check({{true, first, DependencyCondition::succeeded}});
  EXPECT_EQ(c.verdict, Verdict::waiting);
  EXPECT_EQ(c.reason, "waiting for array a" + std::to_string(first) + " (2 of 3 jobs still to end) to have succeeded");

  const int64_t other = job(JobState::succeeded, 0);
  job(JobState::failed, other);
  c = check({{true, other, DependencyCondition::succeeded}});
  EXPECT_EQ(c.verdict, Verdict::failed);
  EXPECT_EQ(c.reason.rfind("array a" + std::to_string(other) + ": job " + std::to_string(other + 1) + " failed", 0), 0u)
      << c.reason;
  EXPECT_EQ(check({{true, other, DependencyCondition::ended}}).verdict, Verdict::met);
}

TEST_F(JobDependencies, ASubmitNamesOnlyJobsAndArraysItMaySee) {
  const int64_t mine = job(JobState::running, std::nullopt, "alice"), theirs = job(JobState::running, std::nullopt, "bob");
  const int64_t array = job(JobState::queued, 0, "alice");
  EXPECT_TRUE(validate_dependencies(*store_, {{false, mine}, {true, array}}, "alice"));
  auto e = validate_dependencies(*store_, {{false, mine}, {false, theirs}}, "alice");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().field, "after[1]");
  EXPECT_EQ(e.error().message, "after[1] names job " + std::to_string(theirs) + ", which does not exist among alice's jobs");
  e = validate_dependencies(*store_, {{false, 999}}, "");
  ASSERT_FALSE(e);
  EXPECT_EQ(e.error().message, "after[0] names job 999, which does not exist");
  // A job is not an array: a12 names the array whose first job is 12.
  EXPECT_FALSE(validate_dependencies(*store_, {{true, mine}}, ""));
  EXPECT_TRUE(validate_dependencies(*store_, {{false, theirs}}, "")) << "with auth off every job may be named";
}

}  // namespace
}  // namespace jobctl::daemon::jobs
