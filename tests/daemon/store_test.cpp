// The store without the service: migrations, group commit with per-change rollback, commit hooks,
// reads from separate connections, keyset listing.
#include "daemon/store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>
#include <vector>

#include "daemon/store/database_check.h"
#include "daemon/store/deflated_text.h"
#include "daemon/store/migrations.h"
#include "daemon/store/row_codecs.h"
#include "daemon/store/stored_spec_memo.h"
#include "tests/support/temp_dir.h"

namespace jobctl::daemon::store {
namespace {

using jobctl::testing::TempDir;

JobRow make_job(const std::string& name, JobState state = JobState::queued, int priority = 50) {
  JobRow r;
  r.name = name;
  r.spec_json = "{\"name\":\"" + name + "\"}";
  r.state = state;
  r.priority = priority;
  r.created_ms = r.updated_ms = 1000;
  return r;
}

std::unique_ptr<Store> open_store(const TempDir& dir, const Clock& clock, int max_batch = 512) {
  StoreOptions o;
  o.path = dir.file("jobctl.db");
  o.max_batch = max_batch;
  auto s = Store::open(o, clock);
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message);
  return std::move(*s);
}

Status insert_named(WriteTxn& txn, const std::string& name) {
  auto id = txn.insert_job(make_job(name));
  if (!id) return id.error();
  return {};
}

int64_t insert(Store& s, const JobRow& row) {
  auto id = s.write_value<int64_t>([&](WriteTxn& txn) { return txn.insert_job(row); });
  EXPECT_TRUE(id.has_value());
  return id ? *id : 0;
}

TEST(Migrations, NewFileGetsEveryVersionAndReopenIsANoOp) {
  TempDir dir;
  ManualClock clock;
  {
    auto s = open_store(dir, clock);
  }
  auto conn = Connection::open(dir.file("jobctl.db"), false);
  ASSERT_TRUE(conn);
  auto v = schema_version(**conn);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, migrations().back().version);
  auto again = apply_migrations(**conn, clock.now_ms());
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, migrations().back().version);
  auto count = (*conn)->prepare("SELECT COUNT(*) FROM schema_version");
  ASSERT_TRUE(count);
  ASSERT_TRUE(*(*count)->step());
  EXPECT_EQ((*count)->column_int64(0), static_cast<int64_t>(migrations().size()));
}

TEST(Migrations, AFailingMigrationLeavesTheLastWholeVersion) {
  TempDir dir;
  auto conn = Connection::open(dir.file("m.db"), false);
  ASSERT_TRUE(conn);
  const std::vector<Migration> list = {
      {1, "one", "CREATE TABLE a (x INTEGER);"},
      {2, "two (broken)", "CREATE TABLE b (y INTEGER); INSERT INTO nowhere VALUES (1);"},
  };
  auto r = apply_migrations(**conn, 1, list);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("migration 2"), std::string::npos);
  auto v = schema_version(**conn);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, 1);
  // Table b was rolled back with its migration.
  auto q = (*conn)->prepare("SELECT COUNT(*) FROM sqlite_master WHERE name = 'b'");
  ASSERT_TRUE(q);
  ASSERT_TRUE(*(*q)->step());
  EXPECT_EQ((*q)->column_int64(0), 0);
}

TEST(Migrations, ADatabaseNewerThanTheBinaryIsRefused) {
  TempDir dir;
  auto conn = Connection::open(dir.file("m.db"), false);
  ASSERT_TRUE(conn);
  ASSERT_TRUE(apply_migrations(**conn, 1, {{1, "one", "CREATE TABLE a (x INTEGER);"},
                                           {2, "two", "CREATE TABLE b (x INTEGER);"}}));
  auto r = apply_migrations(**conn, 1, {{1, "one", "CREATE TABLE a (x INTEGER);"}});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("newer"), std::string::npos);
}

TEST(Migrations, Version6MovesThePlacementTableOutOfTheJobRow) {
  TempDir dir;
  ManualClock clock;
  {  // A database of version 5 with a placed job, written as that version wrote it.
    auto conn = Connection::open(dir.file("jobctl.db"), false);
    ASSERT_TRUE(conn);
    std::vector<Migration> up_to_5;
    for (const auto& m : migrations())
      if (m.version <= 5) up_to_5.push_back(m);
    ASSERT_TRUE(apply_migrations(**conn, 1, up_to_5));
    ASSERT_TRUE((*conn)->exec(
        "INSERT INTO jobs (name, spec, state, priority, resource_gpu, resource_gpus, created_ms, updated_ms, "
        "placement) VALUES ('a', '{}', 'placed', 50, 'any', 1, 1, 1, "
        "'{\"chosen\":{\"option\":\"spot\",\"instance_type\":\"p3.2xlarge\",\"gpu\":\"V100\"},"
        "\"candidates\":[],\"reason\":\"cheapest\"}'), "
        "('b', '{}', 'queued', 50, 'any', 1, 2, 2, NULL)"));
  }
  auto s = open_store(dir, clock);  // applies version 6
  auto a = s->get_job(1);
  ASSERT_TRUE(a && *a);
  ASSERT_TRUE((*a)->chosen);
  EXPECT_EQ((*a)->chosen->option, OptionKind::spot);
  EXPECT_EQ((*a)->chosen->instance_type, "p3.2xlarge");
  EXPECT_EQ((*a)->chosen->gpu, "V100");
  EXPECT_EQ((*a)->chosen->row.dump(), R"({"gpu":"V100","instance_type":"p3.2xlarge","option":"spot"})");
  ASSERT_TRUE((*a)->placement_json);
  EXPECT_NE((*a)->placement_json->find("cheapest"), std::string::npos);
  auto waiting = s->placed_waiting_jobs();
  ASSERT_TRUE(waiting);
  ASSERT_EQ(waiting->size(), 1u);
  EXPECT_EQ((*waiting)[0].placement_option, OptionKind::spot);
  EXPECT_EQ((*waiting)[0].placement_instance_type, "p3.2xlarge");
  auto b = s->get_job(2);
  ASSERT_TRUE(b && *b);
  EXPECT_FALSE((*b)->chosen);
  EXPECT_FALSE((*b)->placement_json);
  // Listings carry the chosen row but not the placement document.
  auto listed = s->list_jobs(JobQuery{});
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 2u);
  EXPECT_TRUE((*listed)[0].chosen);
  EXPECT_FALSE((*listed)[0].placement_json);
}

TEST(Store, RelaxedChangesCommitInOrderWithDurableOnes) {
  TempDir dir;
  ManualClock clock;
  {
    auto s = open_store(dir, clock);
    // relaxed, durable, relaxed: each committed in turn, readable at once.
    int64_t ids[3] = {};
    for (int i = 0; i < 3; ++i) {
      std::promise<Status> p;
      auto f = p.get_future();
      const Durability d = i == 1 ? Durability::durable : Durability::relaxed;
      s->write_async([&, i](WriteTxn& txn) -> Status {
        auto id = txn.insert_job(make_job("j" + std::to_string(i)));
        if (!id) return id.error();
        ids[i] = *id;
        return {};
      }, [&p](Status st) { p.set_value(std::move(st)); }, d);
      ASSERT_TRUE(f.get());
      auto read = s->get_job(ids[i]);
      ASSERT_TRUE(read && *read);
      EXPECT_EQ((*read)->name, "j" + std::to_string(i));
    }
    // Whether a commit was fsynced cannot be seen from outside (synchronous is a setting of the
    // writer's own connection); what is checked is that the reopened file below holds all three,
    // in order.
  }
  auto s = open_store(dir, clock);
  auto all = s->list_jobs(JobQuery{});
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ((*all)[i].name, "j" + std::to_string(i));
}

// Deferred changes (placement decisions) give way to the changes queued after them, a few per
// batch: a submit queued behind a backlog of them waits for at most one small batch.
TEST(Store, DeferredChangesGiveWayToTheOthersAFewAtATime) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  // Hold the writer in a change until everything below is queued, so the order is the writer's.
  std::promise<void> release;
  auto released = release.get_future().share();
  std::promise<void> holding;
  s->write_async([&holding, released](WriteTxn&) -> Status {
    holding.set_value();
    released.wait();
    return {};
  }, nullptr);
  holding.get_future().wait();
  std::mutex mu;
  std::vector<std::string> committed;  // in commit order
  std::atomic<int> left{0};
  std::promise<void> all_done;
  auto queue = [&](const std::string& name, Durability d) {
    ++left;
    s->write_async([name](WriteTxn& txn) { return insert_named(txn, name); },
                   [&, name](Status st) {
                     EXPECT_TRUE(st) << name;
                     {
                       std::lock_guard<std::mutex> lock(mu);
                       committed.push_back(name);
                     }
                     if (--left == 0) all_done.set_value();
                   },
                   d);
  };
  const size_t backlog = 3 * 16 + 5;  // three whole deferred batches and a part
  for (size_t i = 0; i < backlog; ++i) queue("placement" + std::to_string(i), Durability::deferred);
  queue("submit", Durability::durable);
  queue("heartbeat", Durability::relaxed);
  release.set_value();
  all_done.get_future().wait();
  ASSERT_EQ(committed.size(), backlog + 2);
  // The submit and the heartbeat, queued after the backlog, waited for one deferred batch at most
  // (one may go after the holding change's batch), and committed together in their own order.
  const size_t submit = static_cast<size_t>(std::find(committed.begin(), committed.end(), "submit") - committed.begin());
  EXPECT_LE(submit, 16u);
  ASSERT_LT(submit + 1, committed.size());
  EXPECT_EQ(committed[submit + 1], "heartbeat");
  // The deferred ones commit in the order they were queued.
  std::vector<std::string> deferred;
  for (const auto& name : committed)
    if (name.rfind("placement", 0) == 0) deferred.push_back(name);
  ASSERT_EQ(deferred.size(), backlog);
  for (size_t i = 0; i < backlog; ++i) EXPECT_EQ(deferred[i], "placement" + std::to_string(i));
  auto all = s->list_jobs(JobQuery{});
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), backlog + 2);
}

// Under a steady stream of other changes, deferred ones still commit: a batch of them after every
// batch of the others.
TEST(Store, DeferredChangesProgressWhileOthersKeepComing) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock, /*max_batch=*/1);
  std::promise<Status> deferred;
  auto deferred_done = deferred.get_future();
  std::atomic<bool> stop{false};
  std::atomic<int> others{0};
  // Keeps the other queue non-empty: each commit queues the next change.
  std::function<void()> next = [&] {
    if (stop) return;
    s->write_async([](WriteTxn& txn) { return insert_named(txn, "other"); },
                   [&](Status) {
                     ++others;
                     next();
                   },
                   Durability::relaxed);
  };
  next();
  next();
  s->write_async([](WriteTxn& txn) { return insert_named(txn, "deferred"); },
                 [&deferred](Status st) { deferred.set_value(std::move(st)); }, Durability::deferred);
  EXPECT_TRUE(deferred_done.get());
  stop = true;
  s->close();
  EXPECT_GT(others.load(), 0);
}

TEST(Store, TheWriterObserverIsToldOfEachCommitAndWalCheckpoint) {
  TempDir dir;
  ManualClock clock;
  StoreOptions o;
  o.path = dir.file("jobctl.db");
  o.wal_checkpoint_frames = 1;  // every commit leaves a frame or more: each is checkpointed
  auto opened = Store::open(o, clock);
  ASSERT_TRUE(opened) << opened.error().message;
  Store& s = **opened;
  std::mutex mu;
  std::condition_variable cv;
  std::vector<CommitTiming> commits;
  std::vector<CheckpointTiming> checkpoints;
  WriterObserver observer;
  observer.committed = [&](const CommitTiming& t) {
    std::lock_guard<std::mutex> lock(mu);
    commits.push_back(t);
  };
  observer.checkpointed = [&](const CheckpointTiming& t) {
    std::lock_guard<std::mutex> lock(mu);
    checkpoints.push_back(t);
    cv.notify_all();
  };
  s.set_writer_observer(std::move(observer));
  insert(s, make_job("durable"));
  std::promise<Status> p;
  s.write_async([](WriteTxn& txn) -> Status {
                  auto id = txn.insert_job(make_job("relaxed"));
                  return id ? Status{} : Status(id.error());
                },
                [&p](Status st) { p.set_value(std::move(st)); }, Durability::relaxed);
  ASSERT_TRUE(p.get_future().get());
  {
    // The writer checkpoints after a commit's callbacks: wait for it rather than assume it ran.
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return checkpoints.size() >= 2; }));
  }
  s.set_writer_observer({});
  insert(s, make_job("unobserved"));
  s.close();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(commits.size(), 2u);
  EXPECT_EQ(commits[0].changes, 1u);
  EXPECT_TRUE(commits[0].durable);
  EXPECT_FALSE(commits[1].durable);
  for (const auto& c : commits) {
    EXPECT_GE(c.commit_s, 0);
    EXPECT_GE(c.queue_wait_s, 0);
  }
  ASSERT_EQ(checkpoints.size(), 2u);  // one after each observed commit
  for (const auto& c : checkpoints) {
    EXPECT_GT(c.wal_frames, 0);
    EXPECT_GT(c.checkpointed_frames, 0);  // no reader held an older snapshot
    EXPECT_LE(c.checkpointed_frames, c.wal_frames);
  }
}

TEST(Store, OpensInWalModeWithFullSync) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  auto conn = Connection::open(dir.file("jobctl.db"), false);
  ASSERT_TRUE(conn);
  auto q = (*conn)->prepare("PRAGMA journal_mode");
  ASSERT_TRUE(q);
  ASSERT_TRUE(*(*q)->step());
  EXPECT_EQ((*q)->column_text(0), "wal");
}

// A job's spec is decoded when its row is read whole, once: the next reads share the decoded
// spec; a listing's rows carry none; a stored text that does not decode is the error of
// decoded_spec(), the row's other columns still served.
TEST(Store, AJobsSpecIsDecodedOnceWhenItsRowIsRead) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  JobRow command = make_job("c");
  command.spec_json = R"({"name":"c","command":["python3","train.py"],"priority":70})";
  const int64_t id = insert(*s, command);
  auto first = s->get_job(id);
  ASSERT_TRUE(first && *first);
  auto spec = (*first)->decoded_spec();
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ((*spec)->command, (std::vector<std::string>{"python3", "train.py"}));
  EXPECT_EQ((*spec)->priority, 70);
  auto again = s->get_job(id);
  ASSERT_TRUE(again && *again);
  EXPECT_EQ((*again)->spec.get(), (*first)->spec.get()) << "decoded once, shared by the reads after";
  auto listed = s->list_jobs(JobQuery{});
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_FALSE(listed->front().spec);
  EXPECT_EQ(listed->front().decoded_spec().error().code, ErrorCode::internal);

  JobRow odd = make_job("odd");
  odd.spec_json = R"({"name":"odd","epochs":3})";  // JSON, not a spec
  const int64_t odd_id = insert(*s, odd);
  auto read = s->get_job(odd_id);
  ASSERT_TRUE(read && *read) << "the row is served; only its spec is an error";
  EXPECT_FALSE((*read)->spec);
  auto refused = (*read)->decoded_spec();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, ErrorCode::io);
  EXPECT_NE(refused.error().message.find("job " + std::to_string(odd_id) + ": the stored spec does not decode"),
            std::string::npos)
      << refused.error().message;
}

// The memo answers only for the job and the very text a spec was decoded from.
TEST(StoredSpecMemo, ASlotAnswersOnlyForItsJobAndItsText) {
  StoredSpecMemo memo(4);
  auto spec = std::make_shared<const train::JobSpec>();
  memo.keep(5, "text", spec);
  EXPECT_EQ(memo.find(5, "text"), spec);
  EXPECT_EQ(memo.find(5, "text!"), nullptr);
  EXPECT_EQ(memo.find(9, "text"), nullptr) << "job 9 shares job 5's slot, not its spec";
  memo.keep(9, "other", std::make_shared<const train::JobSpec>());
  EXPECT_EQ(memo.find(5, "text"), nullptr) << "a newer job took the slot";
  EXPECT_NE(memo.find(9, "other"), nullptr);
}

TEST(Store, InsertReadUpdateAndEvents) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  const int64_t id = insert(*s, make_job("a"));
  ASSERT_GT(id, 0);
  ASSERT_TRUE(s->write([&](WriteTxn& txn) -> Status {
    JobEventRow ev;
    ev.job_id = id;
    ev.time_ms = 5;
    ev.type = "submitted";
    ev.to_state = JobState::queued;
    auto seq = txn.append_event(ev);
    if (!seq) return seq.error();
    EXPECT_EQ(*seq, 1);
    ev.type = "leased";
    ev.from_state = JobState::queued;
    ev.to_state = JobState::placed;
    seq = txn.append_event(ev);
    if (!seq) return seq.error();
    EXPECT_EQ(*seq, 2);
    auto job = txn.job(id);
    if (!job) return job.error();
    (*job)->state = JobState::placed;
    (*job)->worker_id = 7;
    (*job)->lease_epoch = 1;
    return txn.update_job(**job);
  }));
  auto got = s->get_job_with_events(id);
  ASSERT_TRUE(got && *got);
  EXPECT_EQ((*got)->first.state, JobState::placed);
  EXPECT_EQ((*got)->first.worker_id, 7);
  EXPECT_EQ((*got)->first.spec_json, "{\"name\":\"a\"}");
  ASSERT_EQ((*got)->second.size(), 2u);
  EXPECT_EQ((*got)->second[1].type, "leased");
  EXPECT_EQ((*got)->second[1].from_state, JobState::queued);
  auto missing = s->get_job(id + 100);
  ASSERT_TRUE(missing);
  EXPECT_FALSE(*missing);
}

TEST(Store, AFailingChangeRollsBackAloneInItsBatch) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  // Queue many changes at once from several threads so they share batches; every third fails
  // after writing, and must leave no trace.
  constexpr int kThreads = 4, kPerThread = 60;
  std::atomic<int> ok{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const bool fail = i % 3 == 0;
        Status st = s->write([&, fail](WriteTxn& txn) -> Status {
          auto id = txn.insert_job(make_job("t" + std::to_string(t) + "-" + std::to_string(i)));
          if (!id) return id.error();
          if (fail) return make_error(ErrorCode::conflict, "refused after writing");
          return {};
        });
        (st ? ok : failed)++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), kThreads * kPerThread / 3);
  auto counts = s->count_jobs_by_state();
  ASSERT_TRUE(counts);
  EXPECT_EQ((*counts)[JobState::queued], ok.load());
  auto all = s->list_jobs(JobQuery{std::nullopt, 0, 100000, std::nullopt});
  ASSERT_TRUE(all);
  for (const auto& j : *all) {
    const int i = std::stoi(j.name.substr(j.name.find('-') + 1));
    EXPECT_NE(i % 3, 0) << j.name << " should have been rolled back";
  }
}

TEST(Store, CommitHooksRunOnlyForCommittedChangesInOrder) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  std::vector<int> seen;  // touched only on the writer thread, read after write() returns
  for (int i = 0; i < 5; ++i) {
    Status st = s->write([&, i](WriteTxn& txn) -> Status {
      txn.on_commit([&, i] { seen.push_back(i); });
      if (i == 2) return make_error(ErrorCode::conflict, "no");
      return {};
    });
    EXPECT_EQ(st.has_value(), i != 2);
  }
  EXPECT_EQ(seen, (std::vector<int>{0, 1, 3, 4}));
}

TEST(Store, AsyncWritesCompleteAfterCommitAndCloseDrainsTheQueue) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock, /*max_batch=*/8);
  std::atomic<int> done{0};
  for (int i = 0; i < 100; ++i)
    s->write_async([i](WriteTxn& txn) -> Status {
      auto id = txn.insert_job(make_job("j" + std::to_string(i)));
      return id ? Status{} : Status{id.error()};
    },
                   [&](Status st) { if (st) done++; });
  s->close();
  EXPECT_EQ(done.load(), 100);
  // After close, writes are refused at once.
  Status late = s->write([](WriteTxn&) -> Status { return {}; });
  ASSERT_FALSE(late);
  EXPECT_EQ(late.error().code, ErrorCode::unavailable);
  auto counts = s->count_jobs_by_state();
  ASSERT_TRUE(counts);
  EXPECT_EQ((*counts)[JobState::queued], 100);
}

TEST(Store, ChangesQueuedByHooksStillRunWhileClosing) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  std::atomic<int> follow_ups{0};
  for (int i = 0; i < 20; ++i)
    s->write_async(
        [&](WriteTxn& txn) -> Status {
          txn.on_commit([&] {
            // A commit hook queues a follow-up change, as the service does for leases.
            s->write_async([](WriteTxn& t) -> Status {
              auto id = t.insert_job(make_job("follow-up"));
              return id ? Status{} : Status{id.error()};
            },
                           [&](Status st) { if (st) follow_ups++; });
          });
          return {};
        },
        nullptr);
  s->close();
  EXPECT_EQ(follow_ups.load(), 20);
}

TEST(Store, ABlockingWriteFromTheWriterThreadIsRefusedNotDeadlocked) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  Status inner;
  ASSERT_TRUE(s->write([&](WriteTxn& txn) -> Status {
    txn.on_commit([&] { inner = s->write([](WriteTxn&) -> Status { return {}; }); });
    return {};
  }));
  ASSERT_FALSE(inner);
  EXPECT_EQ(inner.error().code, ErrorCode::internal);
}

TEST(Store, KeysetListingByStateAndAfter) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  for (int i = 1; i <= 10; ++i)
    insert(*s, make_job("j" + std::to_string(i), i % 2 ? JobState::queued : JobState::running));
  auto page1 = s->list_jobs(JobQuery{JobState::queued, 0, 3, std::nullopt});
  ASSERT_TRUE(page1);
  ASSERT_EQ(page1->size(), 3u);
  EXPECT_EQ((*page1)[0].name, "j1");
  EXPECT_EQ((*page1)[2].name, "j5");
  EXPECT_TRUE((*page1)[0].spec_json.empty());  // listings carry no spec
  auto page2 = s->list_jobs(JobQuery{JobState::queued, page1->back().id, 3, std::nullopt});
  ASSERT_TRUE(page2);
  ASSERT_EQ(page2->size(), 2u);
  EXPECT_EQ((*page2)[0].name, "j7");
  EXPECT_EQ((*page2)[1].name, "j9");
  auto all = s->list_jobs(JobQuery{std::nullopt, 4, 100, std::nullopt});
  ASSERT_TRUE(all);
  EXPECT_EQ(all->size(), 6u);
  auto queued = s->queued_jobs();
  ASSERT_TRUE(queued);
  EXPECT_EQ(queued->size(), 5u);
}

TEST(Store, TheStateListingUsesTheStateIndex) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  auto conn = Connection::open(dir.file("jobctl.db"), false);
  ASSERT_TRUE(conn);
  auto q = (*conn)->prepare(
      "EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE state = 'queued' AND id > 5 ORDER BY id LIMIT 10");
  ASSERT_TRUE(q);
  std::string plan;
  while (*(*q)->step()) plan += (*q)->column_text(3) + "\n";
  EXPECT_NE(plan.find("jobs_state_id"), std::string::npos) << plan;
  EXPECT_EQ(plan.find("TEMP B-TREE"), std::string::npos) << plan;  // no sort step
}

// What placement rebuilds its index of unplaceable jobs from at start: every queued job with the
// key its last decision stored, none for a job no longer queued, read through the key's own index.
TEST(Store, QueuedJobsComeWithTheKeyOfTheirLastUnplaceableDecision) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  const int64_t never = insert(*s, make_job("never decided"));
  const int64_t waits = insert(*s, make_job("unplaceable"));
  const int64_t placed = insert(*s, make_job("placed"));
  const int64_t gone = insert(*s, make_job("cancelled while unplaceable"));
  auto put = [&s](int64_t id, std::optional<std::string> key) {
    ASSERT_TRUE(s->write([&](WriteTxn& txn) { return txn.put_placement(id, *deflate_text("{}"), key); }));
  };
  put(waits, "auto|auto|H100|1");
  put(placed, "auto|auto|H100|1");
  put(placed, std::nullopt);  // placed after all: its key is gone with the new document
  put(gone, "auto|auto|A100|1");
  ASSERT_TRUE(s->write([&](WriteTxn& txn) -> Status {
    auto row = txn.job(gone);
    if (!row || !*row) return make_error(ErrorCode::not_found, "job");
    (*row)->state = JobState::cancelled;
    return txn.update_job(**row);
  }));
  auto keys = s->queued_unplaceable_keys();
  ASSERT_TRUE(keys) << keys.error().message;
  using Entry = std::pair<int64_t, std::optional<std::string>>;
  EXPECT_EQ(*keys, (std::vector<Entry>{{never, std::nullopt}, {waits, "auto|auto|H100|1"}, {placed, std::nullopt}}));
  auto conn = Connection::open(dir.file("jobctl.db"), false);
  ASSERT_TRUE(conn);
  auto q = (*conn)->prepare(
      "EXPLAIN QUERY PLAN SELECT job_id, unplaceable_key FROM job_placements INDEXED BY job_placements_unplaceable_key "
      "WHERE unplaceable_key IS NOT NULL");
  ASSERT_TRUE(q);
  std::string plan;
  while (*(*q)->step()) plan += (*q)->column_text(3) + "\n";
  EXPECT_NE(plan.find("COVERING INDEX job_placements_unplaceable_key"), std::string::npos) << plan;
}

// Placement documents are stored deflated and read back whole; a document stored as text before
// that is read as it is; a damaged one is an error naming its job, not a wrong document.
TEST(Store, PlacementDocumentsAreStoredDeflatedAndReadBackWhole) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  const int64_t deflated = insert(*s, make_job("deflated"));
  const int64_t text = insert(*s, make_job("text"));
  const int64_t damaged = insert(*s, make_job("damaged"));
  std::string doc = R"({"candidates":[)";
  for (int i = 0; i < 40; ++i) doc += std::string(i ? "," : "") + R"({"option":"on_demand","usd_per_hour":3.06,"row":)" + std::to_string(i) + "}";
  doc += R"(],"reason":"no option can run this job"})";
  ASSERT_TRUE(s->write([&](WriteTxn& txn) { return txn.put_placement(deflated, *deflate_text(doc)); }));
  auto conn = Connection::open(dir.file("jobctl.db"), false);
  ASSERT_TRUE(conn);
  auto stored = (*conn)->prepare("SELECT typeof(placement), length(placement) FROM job_placements WHERE job_id = ?1");
  ASSERT_TRUE(stored);
  (*stored)->bind(1, deflated);
  ASSERT_TRUE(*(*stored)->step());
  EXPECT_EQ((*stored)->column_text(0), "blob");
  EXPECT_LT((*stored)->column_int64(1), static_cast<int64_t>(doc.size()) / 4) << "deflated to under a quarter";
  (*stored)->reset();
  ASSERT_TRUE((*conn)->exec("INSERT INTO job_placements (job_id, placement, placement_crc) VALUES (" +
                            std::to_string(text) + ", '{\"reason\":\"as text\"}', crc32c('{\"reason\":\"as text\"}'))"));
  auto bytes = deflate_text(doc);
  ASSERT_TRUE(bytes);
  std::string broken = bytes->bytes;
  broken[broken.size() / 2] = static_cast<char>(broken[broken.size() / 2] ^ 0x5a);
  auto put = (*conn)->prepare("INSERT INTO job_placements (job_id, placement, placement_crc) VALUES (?1, ?2, crc32c(?2))");
  ASSERT_TRUE(put);
  (*put)->bind(1, damaged).bind_blob(2, broken);
  ASSERT_TRUE((*put)->run());
  (*put)->reset();
  auto a = s->get_job(deflated);
  ASSERT_TRUE(a && *a);
  EXPECT_EQ((*a)->placement_json, doc);
  auto b = s->get_job(text);
  ASSERT_TRUE(b && *b);
  EXPECT_EQ((*b)->placement_json, R"({"reason":"as text"})");
  auto c = s->get_job(damaged);
  ASSERT_FALSE(c);
  EXPECT_NE(c.error().message.find("job " + std::to_string(damaged)), std::string::npos) << c.error().message;
  EXPECT_FALSE(inflate_text("ab"));
  EXPECT_FALSE(inflate_text(std::string("\x05\0\0\0", 4) + "not zlib"));
}

// Every stored document carries a checksum: a digit changed inside a job's spec or progress, or an
// event's detail (still JSON) is an error naming the table, the row, the document and the file;
// the listing marks that job damaged and lists the others. The migration that added the columns
// computed them for the rows written before.
TEST(Store, AChangedByteInAStoredDocumentIsCaughtByItsChecksum) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  JobRow a = make_job("a");
  a.spec_json = R"({"name":"a","epochs":12})";
  const int64_t first = insert(*s, a);
  const int64_t second = insert(*s, make_job("b"));
  const int64_t third = insert(*s, make_job("c"));
  JobEventRow ev;
  ev.job_id = third;
  ev.type = "note";
  ev.detail_json = R"({"reason":"waits 10 s"})";
  ASSERT_TRUE(s->write_value<int64_t>([&](WriteTxn& txn) { return txn.append_event(ev); }));
  ASSERT_TRUE(s->get_job_with_events(third) && *s->get_job_with_events(third));

  const std::string file = dir.file("jobctl.db");
  auto raw = Connection::open(file, false);
  ASSERT_TRUE(raw);
  ASSERT_TRUE((*raw)->exec("UPDATE jobs SET spec = '{\"name\":\"a\",\"epochs\":19}' WHERE id = " + std::to_string(first)));
  ASSERT_TRUE((*raw)->exec("UPDATE jobs SET progress = '{\"step\":3}' WHERE id = " + std::to_string(second)));
  ASSERT_TRUE((*raw)->exec("UPDATE job_events SET detail = '{\"reason\":\"waits 19 s\"}'"));
  auto spec = s->get_job(first);
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().code, ErrorCode::io);
  EXPECT_NE(spec.error().message.find("table jobs, row " + std::to_string(first) + ": the stored spec is damaged"),
            std::string::npos) << spec.error().message;
  EXPECT_NE(spec.error().message.find(file), std::string::npos) << spec.error().message;
  auto progress = s->get_job(second);
  ASSERT_FALSE(progress);
  EXPECT_NE(progress.error().message.find("row " + std::to_string(second) + ": the stored progress is damaged"),
            std::string::npos) << progress.error().message;
  auto detail = s->get_job_with_events(third);
  ASSERT_FALSE(detail);
  EXPECT_NE(detail.error().message.find("table job_events, row (job " + std::to_string(third) + ", seq 1)"),
            std::string::npos) << detail.error().message;

  auto listed = s->list_jobs(JobQuery{});
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ(listed->size(), 3u);
  ASSERT_TRUE((*listed)[0].damaged);
  EXPECT_NE((*listed)[0].damaged->find("the stored spec is damaged"), std::string::npos) << *(*listed)[0].damaged;
  ASSERT_TRUE((*listed)[1].damaged);
  EXPECT_NE((*listed)[1].damaged->find("progress"), std::string::npos) << *(*listed)[1].damaged;
  EXPECT_EQ((*listed)[1].name, "b");
  EXPECT_FALSE((*listed)[2].damaged);

  // Rows of a version-21 database get their checksums from the migration.
  TempDir old_dir;
  auto old = Connection::open(old_dir.file("old.db"), false);
  ASSERT_TRUE(old);
  std::vector<Migration> to21(migrations().begin(), migrations().begin() + 21);
  ASSERT_TRUE(apply_migrations(**old, 1, to21));
  ASSERT_TRUE((*old)->exec("INSERT INTO jobs (id, name, spec, state, priority, resource_gpu, resource_gpus, created_ms, "
                           "updated_ms, lease_epoch, recoveries, progress) VALUES (5, 'old', '{\"name\":\"old\"}', "
                           "'queued', 50, 'any', 1, 1, 1, 0, 0, '{\"step\":1}')"));
  auto v = apply_migrations(**old, 2);
  ASSERT_TRUE(v);
  EXPECT_EQ(*v, migrations().back().version);
  auto crc = (*old)->prepare("SELECT spec_crc, progress_crc, result_crc FROM jobs WHERE id = 5");
  ASSERT_TRUE(crc);
  ASSERT_TRUE(*(*crc)->step());
  EXPECT_EQ((*crc)->column_opt_int64(0), document_checksum(std::string_view(R"({"name":"old"})")));
  EXPECT_EQ((*crc)->column_opt_int64(1), document_checksum(std::string_view(R"({"step":1})")));
  EXPECT_TRUE((*crc)->is_null(2));
}

// The blobs' metadata rows (a checkpoint's, an output's, a bundle's) carry a checksum of their
// columns: a changed value is an error naming the table, the row and the file on every read, and
// `jobctld --check` names each; the migration that added it filled the rows stored before, as the
// columns' text joined by the unit separator.
TEST(Store, AChangedValueInABlobsMetadataRowIsCaughtByItsChecksum) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  const int64_t job = insert(*s, make_job("with-blobs"));
  ASSERT_TRUE(s->write([&](WriteTxn& txn) -> Status {
    if (auto st = txn.put_checkpoint(CheckpointRow{job, 40, 1234, 0xdeadbeef, "step-40.ckpt", 7, 2, 1000}); !st) return st;
    if (auto st = txn.put_checkpoint(CheckpointRow{job, 80, 1234, 0xfeedface, "step-80.ckpt", 7, 2, 2000}); !st) return st;
    if (auto st = txn.put_output(OutputRow{job, "model/weights.bin", "ann", 4096, "b1", 3000}); !st) return st;
    auto added = txn.put_bundle(BundleRow{"c0ffee", "ann", 300, 1});
    if (!added) return added.error();
    return {};
  }));
  const auto checkpoints = [&] {
    return s->write_value<std::vector<CheckpointRow>>([&](WriteTxn& txn) { return txn.checkpoints(job); });
  };
  const auto outputs = [&] {
    return s->write_value<std::vector<OutputRow>>([&](WriteTxn& txn) { return txn.outputs(job); });
  };
  const auto bundle_bytes = [&] {
    return s->write_value<int64_t>([&](WriteTxn& txn) { return txn.bundle_bytes_of("ann"); });
  };
  auto sound = checkpoints();
  ASSERT_TRUE(sound) << sound.error().message;
  ASSERT_EQ(sound->size(), 2u);
  EXPECT_EQ((*sound)[0].file, "step-80.ckpt");
  EXPECT_EQ((*sound)[0].crc32c, 0xfeedfaceu);
  ASSERT_TRUE(outputs() && outputs()->size() == 1u);
  ASSERT_TRUE(bundle_bytes());
  EXPECT_EQ(*bundle_bytes(), 300);
  auto size = s->bundle_size("c0ffee");
  ASSERT_TRUE(size && *size && **size == 300);
  const std::string file = dir.file("jobctl.db");
  auto clean = check_database(file);
  ASSERT_TRUE(clean) << clean.error().message;
  EXPECT_TRUE(clean->empty()) << clean->front();

  auto raw = Connection::open(file, false);
  ASSERT_TRUE(raw);
  ASSERT_TRUE((*raw)->exec("UPDATE checkpoints SET file = 'step-41.ckpt' WHERE step = 40"));
  ASSERT_TRUE((*raw)->exec("UPDATE job_outputs SET bytes = 4097"));
  ASSERT_TRUE((*raw)->exec("UPDATE bundles SET bytes = 3"));
  const auto named = [&](const Error& e, const std::string& what) {
    EXPECT_EQ(e.code, ErrorCode::io) << e.message;
    EXPECT_NE(e.message.find(what + ": the stored metadata is damaged"), std::string::npos) << e.message;
    EXPECT_NE(e.message.find(file), std::string::npos) << e.message;
  };
  auto c = checkpoints();
  ASSERT_FALSE(c);
  named(c.error(), "table checkpoints, row (job " + std::to_string(job) + ", step 40)");
  auto o = outputs();
  ASSERT_FALSE(o);
  named(o.error(), "table job_outputs, row (job " + std::to_string(job) + ", path model/weights.bin)");
  auto b = bundle_bytes();
  ASSERT_FALSE(b);
  named(b.error(), "table bundles, a row of user 'ann'");
  auto bs = s->bundle_size("c0ffee");
  ASSERT_FALSE(bs);
  named(bs.error(), "table bundles, a row of bundle c0ffee");
  auto report = check_database(file);
  ASSERT_TRUE(report) << report.error().message;
  std::string all;
  for (const auto& line : *report) all += line + "\n";
  EXPECT_EQ(report->size(), 3u) << all;
  EXPECT_NE(all.find("table checkpoints, row (job " + std::to_string(job) + ", step 40): the stored metadata"),
            std::string::npos) << all;
  EXPECT_EQ(all.find("step 80"), std::string::npos) << all;
  EXPECT_NE(all.find("table job_outputs, row (job " + std::to_string(job) + ", path model/weights.bin)"),
            std::string::npos) << all;
  EXPECT_NE(all.find("table bundles, row (bundle c0ffee, user ann)"), std::string::npos) << all;

  // A version-22 database's rows get theirs from the migration.
  TempDir old_dir;
  auto old = Connection::open(old_dir.file("old.db"), false);
  ASSERT_TRUE(old);
  std::vector<Migration> to22(migrations().begin(), migrations().begin() + 22);
  ASSERT_TRUE(apply_migrations(**old, 1, to22));
  ASSERT_TRUE((*old)->exec("INSERT INTO checkpoints (job_id, step, bytes, crc32c, file, worker_id, epoch, created_ms) "
                           "VALUES (5, 40, 1234, 3735928559, 'step-40.ckpt', 7, 2, 1000)"));
  ASSERT_TRUE(apply_migrations(**old, 2));
  auto crc = (*old)->prepare("SELECT row_crc FROM checkpoints");
  ASSERT_TRUE(crc);
  ASSERT_TRUE(*(*crc)->step());
  EXPECT_EQ((*crc)->column_opt_int64(0),
            document_checksum(std::string_view("5\x1f" "40\x1f" "1234\x1f" "3735928559\x1f" "step-40.ckpt\x1f" "7\x1f" "2\x1f" "1000")));
}

// Migration 24: a job's image digest, written on its own (update_job leaves it alone), read by a
// single read and a listing; and the users' registry logins, each row under its checksum. A job
// of a version-23 database reads with none.
TEST(Store, AnImageDigestAndRegistryLoginsAreStoredAndAChangedLoginIsCaught) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  const int64_t job = insert(*s, make_job("in-an-image"));
  auto fresh = s->get_job(job);
  ASSERT_TRUE(fresh && *fresh);
  EXPECT_FALSE((*fresh)->image_digest);
  const std::string digest = "sha256:" + std::string(64, 'e');
  ASSERT_TRUE(s->write([&](WriteTxn& txn) -> Status {
    if (auto st = txn.set_job_image_digest(job, digest); !st) return st;
    auto row = txn.job(job);
    if (!row) return row.error();
    (**row).priority = 60;
    return txn.update_job(**row);  // a later update keeps the digest
  }));
  auto read = s->get_job(job);
  ASSERT_TRUE(read && *read);
  EXPECT_EQ((*read)->image_digest, digest);
  auto listed = s->list_jobs(JobQuery{});
  ASSERT_TRUE(listed && listed->size() == 1u);
  EXPECT_EQ((*listed)[0].image_digest, digest);
  EXPECT_FALSE(s->write([&](WriteTxn& txn) { return txn.set_job_image_digest(job + 100, digest); }));

  ASSERT_TRUE(s->write([&](WriteTxn& txn) -> Status {
    if (auto st = txn.put_registry_credential({"ann", "r.example.com", "ann-ci", std::string("\x00\x01sealed", 8), 5}); !st)
      return st;
    return txn.put_registry_credential({"ann", "127.0.0.1:5000", "ann", "sealed-2", 6});
  }));
  auto logins = s->registry_credentials("ann");
  ASSERT_TRUE(logins) << logins.error().message;
  ASSERT_EQ(logins->size(), 2u);
  EXPECT_EQ((*logins)[0].registry, "127.0.0.1:5000");
  EXPECT_EQ((*logins)[1].sealed, std::string("\x00\x01sealed", 8)) << "the sealed bytes as written";
  EXPECT_TRUE(s->registry_credentials("bob")->empty());
  auto deleted = s->write_value<bool>([](WriteTxn& txn) { return txn.delete_registry_credential("ann", "127.0.0.1:5000"); });
  ASSERT_TRUE(deleted && *deleted);
  // A username changed behind jobctld's back is caught by the row's checksum.
  auto raw = Connection::open(dir.file("jobctl.db"), false);
  ASSERT_TRUE(raw);
  ASSERT_TRUE((*raw)->exec("UPDATE registry_credentials SET username = 'mallory' WHERE owner = 'ann'"));
  auto changed = s->registry_credentials("ann");
  ASSERT_FALSE(changed);
  EXPECT_NE(changed.error().message.find("table registry_credentials"), std::string::npos) << changed.error().message;

  TempDir old_dir;
  auto old = Connection::open(old_dir.file("old.db"), false);
  ASSERT_TRUE(old);
  std::vector<Migration> to23(migrations().begin(), migrations().begin() + 23);
  ASSERT_TRUE(apply_migrations(**old, 1, to23));
  ASSERT_TRUE((*old)->exec("INSERT INTO jobs (id, name, spec, state, priority, resource_gpu, resource_gpus, created_ms, "
                           "updated_ms, lease_epoch, recoveries) VALUES (5, 'old', '{}', 'queued', 50, 'any', 1, 1, 1, 0, 0)"));
  ASSERT_TRUE(apply_migrations(**old, 2));
  auto column = (*old)->prepare("SELECT image_digest FROM jobs WHERE id = 5");
  ASSERT_TRUE(column);
  ASSERT_TRUE(*(*column)->step());
  EXPECT_TRUE((*column)->is_null(0));
}

TEST(Store, DataSurvivesReopening) {
  TempDir dir;
  ManualClock clock;
  int64_t id = 0;
  {
    auto s = open_store(dir, clock);
    id = insert(*s, make_job("durable"));
  }
  auto s = open_store(dir, clock);
  auto j = s->get_job(id);
  ASSERT_TRUE(j && *j);
  EXPECT_EQ((*j)->name, "durable");
}

// A stored value that does not decode is an error naming its row, never a default: the chosen
// candidate, a worker's capabilities and state, a token's role.
TEST(Store, ACorruptStoredValueIsAnErrorNamingItsRow) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  JobRow placed = make_job("placed", JobState::placed);
  placed.worker_id = 7;
  const int64_t id = insert(*s, placed);
  WorkerRow w;
  w.name = "box";
  w.capabilities.cpu_cores = 4;
  auto wid = s->write_value<int64_t>([&](WriteTxn& txn) { return txn.insert_worker(w); });
  ASSERT_TRUE(wid);
  ASSERT_TRUE(s->get_worker(*wid) && *s->get_worker(*wid));
  EXPECT_EQ((*s->get_worker(*wid))->capabilities.cpu_cores, 4);

  auto raw = Connection::open(dir.file("jobctl.db"), false);
  ASSERT_TRUE(raw);
  auto expect_io = [](const Error& e, const std::string& names) {
    EXPECT_EQ(e.code, ErrorCode::io) << e.message;
    EXPECT_NE(e.message.find(names), std::string::npos) << e.message;
  };
  const std::string job = "job " + std::to_string(id);
  for (const char* chosen : {"'{not json'", "'[1]'", "'{\"option\":\"boat\"}'", "'{\"option\":\"local\",\"estimated_hours\":\"x\"}'"}) {
    ASSERT_TRUE((*raw)->exec(std::string("UPDATE jobs SET chosen = ") + chosen + ", chosen_crc = crc32c(" + chosen + ")"));
    auto read = s->get_job(id);
    ASSERT_FALSE(read) << chosen;
    expect_io(read.error(), job);
    auto leases = s->lease_summaries();
    ASSERT_FALSE(leases) << chosen;
    expect_io(leases.error(), job);
  }
  const std::string slurm = "'{\"option\":\"slurm\",\"partition\":\"gpu\",\"estimated_hours\":2}'";
  ASSERT_TRUE((*raw)->exec("UPDATE jobs SET chosen = " + slurm + ", chosen_crc = crc32c(" + slurm + ")"));
  auto read = s->get_job(id);
  ASSERT_TRUE(read && *read);
  ASSERT_TRUE((*read)->chosen);
  EXPECT_EQ((*read)->chosen->option, OptionKind::slurm);
  EXPECT_EQ((*read)->chosen->partition, "gpu");
  EXPECT_EQ((*read)->chosen->estimated_hours, 2);
  ASSERT_TRUE((*raw)->exec("UPDATE jobs SET worker_id = NULL, chosen = '{\"option\":\"ferry\"}'"));
  auto waiting = s->placed_waiting_jobs();
  ASSERT_FALSE(waiting);
  expect_io(waiting.error(), job);

  const std::string worker = "worker " + std::to_string(*wid);
  ASSERT_TRUE((*raw)->exec("UPDATE workers SET capabilities = '{\"gpus\": 3}'"));
  auto caps = s->get_worker(*wid);
  ASSERT_FALSE(caps);
  expect_io(caps.error(), worker);
  auto listed = s->list_workers();
  ASSERT_FALSE(listed);
  expect_io(listed.error(), worker);
  ASSERT_TRUE((*raw)->exec("UPDATE workers SET capabilities = '{}', state = 'sleeping'"));
  auto state = s->get_worker(*wid);
  ASSERT_FALSE(state);
  expect_io(state.error(), worker);

  TokenRow t;
  t.user = "ann";
  t.role = TokenRole::worker;
  t.hash_hex = "ab";
  auto tid = s->insert_token(t);
  ASSERT_TRUE(tid);
  auto tokens = s->list_tokens();
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->size(), 1u);
  EXPECT_EQ((*tokens)[0].role, TokenRole::worker);
  ASSERT_TRUE((*raw)->exec("UPDATE api_tokens SET role = 'root'"));
  tokens = s->list_tokens();
  ASSERT_FALSE(tokens);
  expect_io(tokens.error(), "token " + std::to_string(*tid));
}

// Every table is in the dump (the refused-request tests compare dumps), each with its rows.
TEST(Store, TheDumpHoldsEveryTable) {
  TempDir dir;
  ManualClock clock;
  auto s = open_store(dir, clock);
  insert(*s, make_job("dumped"));
  ASSERT_TRUE(s->write([](WriteTxn& txn) -> Status {
    auto added = txn.put_bundle(BundleRow{"c0ffee", "ann", 3, 1});
    if (!added) return added.error();
    return {};
  }));
  auto dump = s->dump();
  ASSERT_TRUE(dump) << dump.error().message;
  for (const char* table : {"jobs", "job_events", "workers", "schema_version", "checkpoints", "api_tokens",
                            "job_placements", "ledger", "calibration", "instances", "slurm_jobs", "bundles"})
    EXPECT_NE(dump->find(std::string("FROM ") + table + " "), std::string::npos) << table;
  EXPECT_NE(dump->find("dumped"), std::string::npos);
  EXPECT_NE(dump->find("c0ffee|ann|3|1|"), std::string::npos);
}

// A job's progress and result figures: a report that leaves a figure out reads it as 0; text that is not a
// JSON object, or a figure that is not a number, is an error naming the job, never 0% done.
TEST(Records, ProgressAndResultDecodeOrAreAnErrorNamingTheJob) {
  auto p = decode_progress(R"({"step": 30, "total_steps": 120, "loss": 0.5})", "job 3");
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_DOUBLE_EQ(p->done_fraction(), 0.25);
  auto early = decode_progress(R"({"epoch": 0})", "job 3");
  ASSERT_TRUE(early);
  EXPECT_EQ(early->done_fraction(), 0);
  auto over = decode_progress(R"({"step": 200, "total_steps": 120})", "job 3");
  ASSERT_TRUE(over);
  EXPECT_EQ(over->done_fraction(), 1);
  auto result = decode_result(R"({"elapsed_s": 90.5, "steps": 120, "final_loss": 0.1})", "job 3");
  ASSERT_TRUE(result) << result.error().message;
  EXPECT_EQ(result->elapsed_s, 90.5);
  EXPECT_EQ(result->steps, 120);
  auto bad_result = decode_result(R"({"elapsed_s": "long"})", "job 3");
  ASSERT_FALSE(bad_result);
  EXPECT_EQ(bad_result.error().field, "result.elapsed_s");
  for (const char* bad : {"{torn", "[]", R"({"step": "30", "total_steps": 120})", R"({"step": 1, "total_steps": null})"}) {
    auto e = decode_progress(bad, "job 3");
    ASSERT_FALSE(e) << bad;
    EXPECT_EQ(e.error().code, ErrorCode::io);
    EXPECT_NE(e.error().message.find("job 3"), std::string::npos) << e.error().message;
  }
}

}  // namespace
}  // namespace jobctl::daemon::store
