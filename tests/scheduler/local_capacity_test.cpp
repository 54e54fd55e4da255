#include "scheduler/local_capacity.h"

#include <gtest/gtest.h>

namespace jobctl::scheduler {
namespace {

Worker w(std::string id, std::string model, int count, double mem) {
  Worker x;
  x.id = std::move(id);
  x.gpu_model = std::move(model);
  x.gpu_count = count;
  x.gpu_memory_gb = mem;
  return x;
}

TEST(LocalCapacity, GroupsIdenticalMachines) {
  LocalCapacity cap({w("a", "V100", 1, 16), w("b", "V100", 1, 16), w("c", "V100", 4, 16), w("d", "V100", 1, 32),
                     w("e", "cpu", 1, 64)});
  ASSERT_EQ(cap.pools().size(), 4u);
  EXPECT_EQ(cap.pools()[0].workers, 2u);
  EXPECT_EQ(cap.pool_of(0), cap.pool_of(1));
  EXPECT_NE(cap.pool_of(0), cap.pool_of(2));
  EXPECT_NE(cap.pool_of(0), cap.pool_of(3));
}

TEST(LocalCapacity, AcquireReleaseAndExpectedWait) {
  LocalCapacity cap({w("a", "V100", 1, 16), w("b", "V100", 1, 16)});
  const int64_t now = 1'000'000;
  EXPECT_TRUE(cap.has_free(0));
  EXPECT_DOUBLE_EQ(cap.expected_wait_hours(0, now), 0);
  auto first = cap.acquire(0, now + 7'200'000);   // busy 2 h
  auto second = cap.acquire(0, now + 3'600'000);  // busy 1 h
  ASSERT_TRUE(first && second);
  EXPECT_FALSE(cap.acquire(0, now));
  EXPECT_FALSE(cap.has_free(0));
  EXPECT_DOUBLE_EQ(cap.expected_wait_hours(0, now), 1.0);           // the first to finish
  EXPECT_DOUBLE_EQ(cap.expected_wait_hours(0, now + 5'400'000), 0);  // overrunning: no known wait
  cap.update_busy_until(*second, now + 9'000'000);                    // 2.5 h now
  EXPECT_DOUBLE_EQ(cap.expected_wait_hours(0, now), 2.0);
  EXPECT_EQ(cap.earliest_busy()->second, *first);
  cap.release(*first);
  cap.release(*first);  // twice: no-op
  EXPECT_TRUE(cap.has_free(0));
  EXPECT_EQ(cap.pools()[0].free.size(), 1u);
  EXPECT_FALSE(cap.worker(*first).busy);
  EXPECT_TRUE(cap.worker(*second).busy);
}

TEST(LocalCapacity, BusyWorkersCanBeAdded) {
  LocalCapacity cap;
  Worker busy = w("a", "A100", 1, 40);
  busy.busy = true;
  busy.busy_until_ms = 3'600'000;
  const uint32_t i = cap.add_worker(busy);
  EXPECT_FALSE(cap.has_free(cap.pool_of(i)));
  EXPECT_DOUBLE_EQ(cap.expected_wait_hours(cap.pool_of(i), 0), 1.0);
}

// A 4-GPU worker runs up to four 1-GPU jobs: it has a GPU free until all four are taken, and a
// job of several GPUs waits for that many on one worker.
TEST(LocalCapacity, GpusAreTakenOneJobAtATime) {
  LocalCapacity cap({w("box", "V100", 4, 16)});
  const int64_t now = 0;
  ASSERT_TRUE(cap.acquire(0, now + 3'600'000));      // 1 GPU for 1 h
  ASSERT_TRUE(cap.acquire(0, now + 7'200'000, 2));   // 2 GPUs for 2 h
  EXPECT_EQ(cap.free_gpus(0), 1);
  EXPECT_TRUE(cap.has_free(0));
  EXPECT_FALSE(cap.has_free(0, 2));
  EXPECT_DOUBLE_EQ(cap.expected_wait_hours(0, now), 0);
  EXPECT_DOUBLE_EQ(cap.expected_wait_hours(0, now, 2), 1.0);  // one free now, one more in 1 h
  EXPECT_DOUBLE_EQ(cap.expected_wait_hours(0, now, 4), 2.0);
  EXPECT_FALSE(cap.acquire(0, now, 2));
  ASSERT_TRUE(cap.acquire(0, now + 1'800'000));      // the last GPU
  EXPECT_FALSE(cap.has_free(0));
  EXPECT_TRUE(cap.worker(0).busy);
  EXPECT_DOUBLE_EQ(cap.expected_wait_hours(0, now), 0.5);     // the first GPU to free
  cap.release(0);
  EXPECT_EQ(cap.free_gpus(0), 4);
  // A worker added with GPUs already held (the daemon's view of running jobs).
  Worker held = w("held", "V100", 4, 16);
  held.held_until = {3'600'000, 3'600'000, 3'600'000};
  LocalCapacity c2({held});
  EXPECT_TRUE(c2.has_free(0));
  EXPECT_FALSE(c2.has_free(0, 2));
  EXPECT_DOUBLE_EQ(c2.expected_wait_hours(0, 0, 2), 1.0);
}

}  // namespace
}  // namespace jobctl::scheduler
