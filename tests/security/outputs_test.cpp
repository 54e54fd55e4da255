// A job's outputs (docs/job-protocol.md, "Outputs") against a real jobctld with auth on: only the
// lease holder stores them, a path that would leave JOBCTL_OUTPUT_DIR is refused on the server
// and on the CLI side, another user's job answers 404, and the per-job and per-user limits answer
// 413 and 429 with the configuration key that holds them.
#include <fcntl.h>
#include <unistd.h>

#include "bundle/folder_files.h"
#include "client/api_client.h"
#include "tests/security/security_support.h"

namespace jobctl::security {
namespace {

// Writes `bytes` to a file and uploads it as the job's output `path` under the worker's lease.
Status upload(const std::string& url, const std::string& token, const Worker& w, int64_t job, int64_t epoch,
              const std::string& path, const std::string& bytes, const TempDir& dir) {
  const std::string file = dir.file("upload-src");
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  client::ApiClient api(url, client::HttpClientOptions{.bearer_token = token, .worker_secret = w.secret});
  Status st = api.upload_output(job, path, w.id, epoch, fd, bytes.size());
  ::close(fd);
  return st;
}

struct OutputsWorld {
  OutputsWorld(const json& outputs_config = json::object())
      : data(dir.file("data")),
        ann(create_token(data, "ann", "user")),
        bob(create_token(data, "bob", "user")),
        fleet(create_token(data, "fleet", "worker")),
        d(data, with_auth(config_flag(dir, json{{"outputs", outputs_config}}))) {}
  static std::vector<std::string> with_auth(std::vector<std::string> flags) {
    flags.push_back("--auth");
    return flags;
  }
  // A job of ann's, leased to a new worker: (job, worker, epoch).
  std::tuple<int64_t, Worker, int64_t> leased_job(const std::string& name) {
    const int64_t job = submit(d.url(), ann, small_spec(name));
    const Worker w = register_worker(d.url(), fleet, name + "-worker");
    const json l = lease(d.url(), fleet, w);
    EXPECT_TRUE(l.is_object()) << l.dump();
    return {job, w, l.is_object() ? l.value("epoch", int64_t{0}) : 0};
  }
  TempDir dir;
  std::string data, ann, bob, fleet;
  Jobctld d;
};

TEST(OutputsAccess, TheOwnerReadsTheLeaseHolderWritesAnotherUserSeesNothing) {
  OutputsWorld world;
  ASSERT_TRUE(world.d.ok());
  auto [job, w, epoch] = world.leased_job("outputs-access");
  std::string model(300000, '\0');
  for (size_t i = 0; i < model.size(); ++i) model[i] = static_cast<char>((i * 131) & 0xff);
  ASSERT_TRUE(upload(world.d.url(), world.fleet, w, job, epoch, "model/weights.bin", model, world.dir));

  // A user's token cannot store one (only a worker's, with its secret).
  {
    client::ApiClient as_ann(world.d.url(), client::HttpClientOptions{.bearer_token = world.ann});
    const std::string file = world.dir.file("x");
    std::ofstream(file) << "x";
    const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
    Status st = as_ann.upload_output(job, "x", w.id, epoch, fd, 1);
    ::close(fd);
    ASSERT_FALSE(st);
    EXPECT_TRUE(st.error().code == ErrorCode::permission_denied || st.error().code == ErrorCode::unauthenticated)
        << st.error().message;
  }

  client::ApiClient as_ann(world.d.url(), client::HttpClientOptions{.bearer_token = world.ann});
  auto listed = as_ann.list_outputs(job);
  ASSERT_TRUE(listed) << listed.error().message;
  ASSERT_EQ((*listed)["outputs"].size(), 1u) << listed->dump();
  EXPECT_EQ((*listed)["outputs"][0]["path"], "model/weights.bin");
  EXPECT_EQ((*listed)["outputs"][0]["bytes"], static_cast<int64_t>(model.size()));

  // Downloaded byte for byte, through the CLI.
  const std::string to = world.dir.file("got");
  auto r = run_command({env_or_fail("JOBCTL_CLI"), "--server", world.d.url(), "outputs", std::to_string(job), "--to", to},
                       {"JOBCTL_TOKEN=" + world.ann});
  ASSERT_TRUE(r.status.success()) << r.out << r.err;
  std::ifstream in(to + "/model/weights.bin", std::ios::binary);
  const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(got == model) << "the downloaded output differs (" << got.size() << " bytes)";

  // Bob sees no such job.
  auto bob_http = http_as(world.d.url(), world.bob);
  for (const std::string& target : {"/v1/jobs/" + std::to_string(job) + "/outputs",
                                    "/v1/jobs/" + std::to_string(job) + "/outputs/file?path=model%2Fweights.bin"}) {
    auto a = bob_http.request("GET", target);
    ASSERT_TRUE(a);
    EXPECT_EQ(a->status, 404) << target << ": " << a->body;
    EXPECT_EQ(a->body.find(std::string(16, static_cast<char>(0))), std::string::npos);
  }
  auto cli_bob = run_command({env_or_fail("JOBCTL_CLI"), "--server", world.d.url(), "outputs", std::to_string(job)},
                             {"JOBCTL_TOKEN=" + world.bob});
  EXPECT_FALSE(cli_bob.status.success()) << cli_bob.out;
}

TEST(OutputsAccess, APathLeavingTheOutputFolderIsRefusedByTheServerAndTheCli) {
  OutputsWorld world;
  ASSERT_TRUE(world.d.ok());
  auto [job, w, epoch] = world.leased_job("outputs-paths");
  for (const char* bad : {"../escape", "/etc/passwd", "a/../../b", "a//b", "./a", ""}) {
    Status st = upload(world.d.url(), world.fleet, w, job, epoch, bad, "evil", world.dir);
    ASSERT_FALSE(st) << "'" << bad << "' was stored";
    EXPECT_EQ(st.error().code, ErrorCode::invalid_argument) << bad << ": " << st.error().message;
    EXPECT_EQ(st.error().field, "path") << bad;
  }
  auto listed = http_as(world.d.url(), world.ann).request("GET", "/v1/jobs/" + std::to_string(job) + "/outputs");
  ASSERT_TRUE(listed);
  EXPECT_TRUE(body_of(*listed)["outputs"].empty()) << listed->body;

  // The CLI's side: the same rule, and no writing through a link planted in the target folder.
  TempDir target;
  const std::string outside = target.file("outside");
  std::filesystem::create_directories(outside);
  std::filesystem::create_directories(target.file("to"));
  std::filesystem::create_directory_symlink(outside, target.file("to") + "/link");
  for (const char* bad : {"../x", "/tmp/x", "link/x"}) {
    auto f = bundle::FileInside::create(target.file("to"), bad);
    EXPECT_FALSE(f) << bad << " was written";
  }
  EXPECT_TRUE(std::filesystem::is_empty(outside));
}

TEST(OutputsLimits, PerJobAndPerUserLimitsAnswer413And429NamingTheirKey) {
  OutputsWorld world(json{{"max_bytes_per_job", 1000}, {"quota_bytes_per_user", 1500}});
  ASSERT_TRUE(world.d.ok());
  auto [job, w, epoch] = world.leased_job("outputs-limits");
  Status big = upload(world.d.url(), world.fleet, w, job, epoch, "big.bin", std::string(1200, 'b'), world.dir);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.error().code, ErrorCode::payload_too_large);
  EXPECT_EQ(big.error().field, "outputs.max_bytes_per_job");
  ASSERT_TRUE(upload(world.d.url(), world.fleet, w, job, epoch, "a.bin", std::string(600, 'a'), world.dir));
  Status over_job = upload(world.d.url(), world.fleet, w, job, epoch, "b.bin", std::string(600, 'b'), world.dir);
  ASSERT_FALSE(over_job);
  EXPECT_EQ(over_job.error().field, "outputs.max_bytes_per_job");
  // Replacing a file counts its new size, not both.
  ASSERT_TRUE(upload(world.d.url(), world.fleet, w, job, epoch, "a.bin", std::string(900, 'a'), world.dir));

  // Ann's second job takes her past her quota (900 + 700 > 1500).
  auto [job2, w2, epoch2] = world.leased_job("outputs-limits-2");
  Status over_user = upload(world.d.url(), world.fleet, w2, job2, epoch2, "c.bin", std::string(700, 'c'), world.dir);
  ASSERT_FALSE(over_user);
  EXPECT_EQ(over_user.error().code, ErrorCode::limit_exceeded);
  EXPECT_EQ(over_user.error().field, "outputs.quota_bytes_per_user");
  // A worker that no longer holds the lease stores nothing.
  Status stale = upload(world.d.url(), world.fleet, w2, job2, epoch2 + 1, "d.bin", "d", world.dir);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, ErrorCode::stale_epoch);
}

}  // namespace
}  // namespace jobctl::security
