// The data directory (docs/operations.md, "The data directory"):
//   A9  a second jobctld on the same data directory started, and the two diverged: it now exits
//       at once naming the first one's pid;
//   A16 the data directory was 0755 and the database 0644: 0700 and 0600 now, also for a
//       directory an older version left open;
//   A14 a full disk answered 500 naming the request's body, and /healthz still said ok: the
//       error names the store (503, retry later) and /healthz says degraded with 503.
#include <sys/stat.h>

#include <filesystem>

#include "tests/security/security_support.h"

namespace jobctl::security {
namespace {

unsigned mode_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return st.st_mode & 0777;
}

TEST(DataDir, ASecondDaemonOnTheSameDirectoryExitsNamingTheFirst) {
  TempDir dir;
  const std::string data = dir.file("data");
  Jobctld first(data);
  ASSERT_TRUE(first.ok());
  Process second({env_or_fail("JOBCTLD"), "--listen", "127.0.0.1:0", "--data-dir", data});
  EXPECT_TRUE(second.wait_for_output("pid " + std::to_string(first.pid()), 10s)) << second.output();
  EXPECT_EQ(second.output().find("\"listening\""), std::string::npos) << second.output();
  const auto status = second.stop(SIGTERM, 10s);  // already gone, or told to go now
  ASSERT_TRUE(status);
  EXPECT_TRUE(status->exited && status->code == 2) << status->describe() << "\n" << second.output();
  // The first one is unaffected; once it is gone, the directory is free again.
  ASSERT_EQ(http_as(first.url()).request("GET", "/healthz")->status, 200);
  first.process().stop(SIGKILL, 5s);  // even a killed daemon leaves no stale lock
  Jobctld third(data);
  EXPECT_TRUE(third.ok());
}

TEST(DataDir, TheDaemonsFilesAreItsUsersAlone) {
  TempDir dir;
  const std::string data = dir.file("data");
  std::filesystem::create_directories(data);
  ::chmod(data.c_str(), 0755);  // as an older jobctld, or a umask of 022, left it
  Jobctld d(data);
  ASSERT_TRUE(d.ok());
  const int64_t job = submit(d.url(), "", small_spec("files"));
  ASSERT_GT(job, 0);
  EXPECT_EQ(mode_of(data), 0700u);
  for (const char* name : {"jobctl.db", "jobctl.db-wal", "jobctld.lock"})
    EXPECT_EQ(mode_of(data + "/" + name), 0600u) << name;
  EXPECT_EQ(mode_of(data + "/checkpoints"), 0700u);
  EXPECT_EQ(mode_of(data + "/checkpoints/.incoming"), 0700u);
}

TEST(DataDir, AFullDiskIsTheStoresErrorAndHealthzSaysDegraded) {
  TempDir dir;
  // A file size limit stands in for a full disk (the same refusal, for this process only).
  Jobctld d(dir.file("data"), {}, {"prlimit", "--fsize=1500000", "--"});
  ASSERT_TRUE(d.ok());
  auto http = http_as(d.url());
  const std::string spec = small_spec("fills-the-disk");
  std::optional<client::HttpResult> refused;
  for (int i = 0; i < 2000 && !refused; ++i) {
    auto r = http.request("POST", "/v1/jobs", spec);
    ASSERT_TRUE(r) << "jobctld stopped answering: " << r.error().message << "\n" << d.process().output();
    if (r->status != 201) refused = *r;
  }
  ASSERT_TRUE(refused) << "the disk never filled";
  EXPECT_EQ(refused->status, 503) << refused->body;
  const json e = body_of(*refused)["error"];
  EXPECT_EQ(e["code"], "storage_unavailable") << refused->body;
  EXPECT_TRUE(e["field"].is_null()) << "the request is not at fault: " << refused->body;
  // The limit refuses the WAL's growth, not the file system: a WAL checkpoint that resets the log
  // lets writes through again, and the store is healthy again at once. So the refusal and the
  // degraded health are taken together: refused submits until /healthz answers while it lasts.
  auto health = http.request("GET", "/healthz");
  for (int i = 0; i < 2000 && health && health->status == 200; ++i) {
    auto r = http.request("POST", "/v1/jobs", spec);
    ASSERT_TRUE(r) << "jobctld stopped answering: " << r.error().message << "\n" << d.process().output();
    if (r->status != 201) health = http.request("GET", "/healthz");
  }
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503) << health->body;
  EXPECT_EQ(body_of(*health)["status"], "degraded") << health->body;
  EXPECT_TRUE(body_of(*health)["store"].is_string()) << health->body;
}

}  // namespace
}  // namespace jobctl::security
