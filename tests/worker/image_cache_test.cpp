// The bounded image cache's decision (least recently used first among images pulled for jobs,
// until under the bound; never one in use or the machine's own), its use log (kept across a
// restart, rewritten whole), and the cache itself over real podman: a storage of the test's own
// (podman --root), holding small images it imports, so that other images of the machine do not
// count against its bounds.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <sstream>

#include "base/clock.h"
#include "process/run.h"
#include "tests/support/ci.h"
#include "worker/image_cache.h"
#include "worker/image_eviction.h"
#include "worker/image_use_log.h"
#include "worker/podman_runtime.h"

namespace jobctl::worker {
namespace {

CachedImage pulled(std::string id, int64_t bytes, int64_t last_used_ms, bool in_use = false) {
  return {.id = std::move(id), .bytes = bytes, .used_for_jobs = true, .last_used_ms = last_used_ms, .in_use = in_use};
}

TEST(ImageEviction, NothingWhileUnderTheBound) {
  EXPECT_TRUE(images_to_evict({pulled("a", 400, 1), pulled("b", 600, 2)}, 1000).empty());
}

TEST(ImageEviction, LeastRecentlyUsedFirstUntilUnderTheBound) {
  const std::vector<CachedImage> images = {pulled("new", 500, 300), pulled("old", 500, 100), pulled("mid", 500, 200)};
  EXPECT_EQ(images_to_evict(images, 1000), (std::vector<std::string>{"old"}));
  EXPECT_EQ(images_to_evict(images, 999), (std::vector<std::string>{"old", "mid"}));
  EXPECT_EQ(images_to_evict(images, 0), (std::vector<std::string>{"old", "mid", "new"}));
}

TEST(ImageEviction, NeverAnImageInUseNorTheMachinesOwn) {
  CachedImage own{.id = "own", .bytes = 700};  // never used for a job
  const std::vector<CachedImage> images = {own, pulled("running", 500, 1, /*in_use=*/true), pulled("idle", 300, 5)};
  // 1500 bytes against 600: only "idle" may go, and the cache stays over its bound.
  EXPECT_EQ(images_to_evict(images, 600), (std::vector<std::string>{"idle"}));
}

TEST(ImageEviction, EqualLastUsesGoInIdOrder) {
  EXPECT_EQ(images_to_evict({pulled("b", 10, 7), pulled("a", 10, 7)}, 10), (std::vector<std::string>{"a"}));
}

class ImageUseLogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("jobctl-image-use-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(ImageUseLogTest, ARestartedWorkerKeepsTheOrder) {
  const auto file = dir_ / "image-uses.json";
  {
    ImageUseLog log(file);
    ASSERT_TRUE(log.load());  // no file yet: empty
    EXPECT_TRUE(log.last_used().empty());
    log.used("sha256:aa", 100);
    log.used("sha256:bb", 200);
    log.used("sha256:aa", 300);
    log.forget("sha256:bb");
    log.used("sha256:cc", 250);
    ASSERT_TRUE(log.save());
  }
  EXPECT_FALSE(std::filesystem::exists(file.string() + ".tmp"));
  ImageUseLog again(file);
  ASSERT_TRUE(again.load());
  EXPECT_EQ(again.last_used(), (std::map<std::string, int64_t>{{"sha256:aa", 300}, {"sha256:cc", 250}}));
}

TEST_F(ImageUseLogTest, AMalformedFileIsAnErrorAndAnEmptyLog) {
  const auto file = dir_ / "image-uses.json";
  std::ofstream(file) << "[not an object";
  ImageUseLog log(file);
  log.used("x", 1);
  EXPECT_FALSE(log.load());
  EXPECT_TRUE(log.last_used().empty());
}

class ImageCacheOverPodman : public ImageUseLogTest {
 protected:
  void SetUp() override {
    ImageUseLogTest::SetUp();
    if (::geteuid() != 0) JOBCTL_SKIP_UNLESS_CI("the worker's podman is rootful: run as root");
    if (auto v = process::run({"podman", "version"}, {.timeout = std::chrono::seconds(60)}); !v || !v->success())
      JOBCTL_SKIP_UNLESS_CI("no podman here (scripts/setup.sh installs it)");
    // podman refuses a runroot longer than 50 characters.
    char storage[] = "/tmp/jobctl-img-XXXXXX";
    ASSERT_NE(::mkdtemp(storage), nullptr);
    storage_ = storage;
    podman_ = (dir_ / "podman").string();
    std::ofstream(podman_) << "#!/bin/sh\nexec podman --root " << storage_ << "/root --runroot " << storage_
                           << "/run --storage-driver vfs \"$@\"\n";
    std::filesystem::permissions(podman_, std::filesystem::perms::owner_all);
    auto runtime = make_podman_runtime({.program = podman_, .private_dir = dir_ / "auth"});
    ASSERT_TRUE(runtime) << runtime.error().message;
    runtime_ = std::move(*runtime);
  }
  void TearDown() override {
    if (runtime_) (void)process::run({podman_, "rm", "--all", "--force"}, {.timeout = std::chrono::seconds(60)});
    if (!storage_.empty()) std::filesystem::remove_all(storage_);
    ImageUseLogTest::TearDown();
  }
  // Imports an image of one file of `bytes` random bytes as localhost/jobctl-cache-test:<tag>;
  // returns its id.
  std::string import(const std::string& tag, size_t bytes) {
    const std::string tar = (dir_ / (tag + ".tar")).string();
    auto made = process::run({"sh", "-c", "cd " + dir_.string() + " && head -c " + std::to_string(bytes) +
                                              " /dev/urandom > " + tag + " && tar cf " + tar + " " + tag});
    EXPECT_TRUE(made && made->success());
    auto r = process::run({podman_, "import", "-q", tar, "localhost/jobctl-cache-test:" + tag},
                          {.timeout = std::chrono::seconds(120)});
    EXPECT_TRUE(r && r->success()) << (r ? r->describe() + r->err : r.error().message);
    std::string id = r ? r->out : "";
    while (!id.empty() && (id.back() == '\n')) id.pop_back();
    return id.rfind("sha256:", 0) == 0 ? id.substr(7) : id;
  }
  std::map<std::string, int64_t> held() {
    std::map<std::string, int64_t> out;
    auto images = runtime_->images();
    EXPECT_TRUE(images) << images.error().message;
    if (images)
      for (const auto& i : *images) out[i.id] = i.bytes;
    return out;
  }
  std::string storage_, podman_;
  std::shared_ptr<ContainerRuntime> runtime_;
};

TEST_F(ImageCacheOverPodman, EvictsTheLeastRecentlyUsedKeepsTheOrderAcrossARestartAndNeverAnImageInUse) {
  const std::string own = import("own", 200000), a = import("a", 300000), b = import("b", 300000), c = import("c", 300000);
  auto sizes = held();
  ASSERT_EQ(sizes.size(), 4u);
  const auto file = dir_ / "image-uses.json";
  ManualClock clock;
  std::ostringstream log;
  {
    // Room for three of the four: once b is taken, a (used before it, and no lease holds it) goes.
    ImageCache cache(runtime_, sizes[own] + sizes[b] + sizes[c], file, clock, log);
    cache.start();
    { auto pin = cache.use(a, /*pulled=*/true); }
    clock.advance_ms(1000);
    { auto pin = cache.use(b, true); }
    clock.advance_ms(1000);
    auto pin_c = cache.use(c, true);
    EXPECT_EQ(held(), (std::map<std::string, int64_t>{{own, sizes[own]}, {b, sizes[b]}, {c, sizes[c]}})) << log.str();
    // The machine's own image taken by a lease is not the cache's to remove.
    { auto pin = cache.use(own, /*pulled=*/false); }
  }
  EXPECT_NE(log.str().find("removed localhost/jobctl-cache-test:a"), std::string::npos) << log.str();
  {
    // A restarted worker with room for own and one more keeps c (used last) and removes b.
    ImageCache cache(runtime_, sizes[own] + sizes[c], file, clock, log);
    cache.start();
    EXPECT_EQ(held(), (std::map<std::string, int64_t>{{own, sizes[own]}, {c, sizes[c]}})) << log.str();
  }
  {
    // An image a container uses stays, however small the bound; the machine's own too.
    auto created = process::run({podman_, "create", "--name", "jobctl-cache-test", "localhost/jobctl-cache-test:c", "/f"},
                                {.timeout = std::chrono::seconds(60)});
    ASSERT_TRUE(created && created->success()) << (created ? created->err : created.error().message);
    ImageCache cache(runtime_, 0, file, clock, log);
    cache.start();
    EXPECT_EQ(held(), (std::map<std::string, int64_t>{{own, sizes[own]}, {c, sizes[c]}})) << log.str();
  }
}

}  // namespace
}  // namespace jobctl::worker
