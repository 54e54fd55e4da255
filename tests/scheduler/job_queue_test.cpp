#include "scheduler/job_queue.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace jobctl::scheduler {
namespace {

struct Item {
  int64_t id = 0;
  int priority = 0;
  int64_t submitted_ms = 0;
  std::string payload;  // carried along, not part of the order
};
struct ItemKey {
  QueueKey operator()(const Item& i) const { return {i.id, i.priority, i.submitted_ms}; }
};
using Queue = JobQueue<Item, ItemKey>;

std::vector<int64_t> order(const Queue& q) {
  std::vector<int64_t> out;
  for (const auto& e : q) out.push_back(e.id);
  return out;
}

TEST(JobQueue, PriorityThenAgeThenId) {
  Queue q;
  EXPECT_TRUE(q.insert({4, 50, 1000, "d"}));
  EXPECT_TRUE(q.insert({2, 90, 3000, "b"}));   // higher priority first, though younger
  EXPECT_TRUE(q.insert({3, 50, 500, "c"}));    // same priority, older first
  EXPECT_TRUE(q.insert({1, 50, 1000, "a"}));   // same priority and age: lower id first
  EXPECT_TRUE(q.insert({5, 0, 0, "e"}));
  EXPECT_EQ(order(q), (std::vector<int64_t>{2, 3, 1, 4, 5}));
  EXPECT_EQ(q.size(), 5u);
  EXPECT_EQ(q.begin()->payload, "b");
}

TEST(JobQueue, InsertReplacesTheItemWithTheSameId) {
  Queue q;
  ASSERT_TRUE(q.insert({1, 50, 1000, "old"}));
  ASSERT_TRUE(q.insert({2, 50, 2000, ""}));
  EXPECT_FALSE(q.insert({1, 50, 3000, "new"}));  // requeued later: now behind job 2
  EXPECT_EQ(q.size(), 2u);
  EXPECT_EQ(order(q), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(q.find(1)->payload, "new");
}

TEST(JobQueue, EraseFindAndPop) {
  Queue q;
  for (int64_t h = 0; h < 10; ++h) ASSERT_TRUE(q.insert({h, static_cast<int>(h % 3), h, ""}));
  EXPECT_TRUE(q.erase(4));
  EXPECT_FALSE(q.erase(4));
  EXPECT_FALSE(q.contains(4));
  EXPECT_TRUE(q.contains(5));
  EXPECT_EQ(q.find(4), q.end());
  EXPECT_EQ(q.find(5)->id, 5);
  std::vector<int64_t> popped;
  while (auto e = q.pop()) popped.push_back(e->id);
  EXPECT_EQ(popped, (std::vector<int64_t>{2, 5, 8, 1, 7, 0, 3, 6, 9}));
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.contains(2));
  EXPECT_TRUE(q.insert({4, 1, 0, ""}));  // an id can come back after it left
}

}  // namespace
}  // namespace jobctl::scheduler
