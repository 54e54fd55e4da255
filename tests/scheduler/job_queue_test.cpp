#include "scheduler/job_queue.h"

#include <vector>

#include <gtest/gtest.h>

namespace jobctl::scheduler {
namespace {

std::vector<uint64_t> order(const JobQueue& q) {
  std::vector<uint64_t> out;
  for (const auto& e : q) out.push_back(e.handle);
  return out;
}

TEST(JobQueue, PriorityThenAgeThenInsertion) {
  JobQueue q;
  EXPECT_TRUE(q.push(1, 50, 1000));
  EXPECT_TRUE(q.push(2, 90, 3000));   // higher priority first, though younger
  EXPECT_TRUE(q.push(3, 50, 500));    // same priority, older first
  EXPECT_TRUE(q.push(4, 50, 1000));   // same priority and age: insertion order
  EXPECT_TRUE(q.push(5, 0, 0));
  EXPECT_EQ(order(q), (std::vector<uint64_t>{2, 3, 1, 4, 5}));
  EXPECT_FALSE(q.push(3, 100, 0));    // already queued: no change
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.top()->handle, 2u);
}

TEST(JobQueue, EraseAndPop) {
  JobQueue q;
  for (uint64_t h = 0; h < 10; ++h) ASSERT_TRUE(q.push(h, static_cast<int>(h % 3), static_cast<int64_t>(h)));
  EXPECT_TRUE(q.erase(4));
  EXPECT_FALSE(q.erase(4));
  EXPECT_FALSE(q.contains(4));
  EXPECT_TRUE(q.contains(5));
  EXPECT_EQ(q.find(4), q.end());
  EXPECT_EQ(q.find(5)->handle, 5u);
  std::vector<uint64_t> popped;
  while (auto e = q.pop()) popped.push_back(e->handle);
  EXPECT_EQ(popped, (std::vector<uint64_t>{2, 5, 8, 1, 7, 0, 3, 6, 9}));
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.top());
  EXPECT_TRUE(q.push(4, 1, 0));  // a handle can come back after it left
}

}  // namespace
}  // namespace jobctl::scheduler
