// A job's outputs (docs/job-protocol.md, "Outputs") against a real jobctld with auth on: only the
// lease holder stores them, a path that would leave JOBCTL_OUTPUT_DIR is refused on the server
// and on the CLI side, another user's job answers 404, and the per-job and per-user limits answer
// 413 and 429 with the configuration key that holds them — before the body is staged, on its
// Content-Length or as a chunked body streams past the limit.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <iostream>

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

// Sends an output upload of `total` bytes over a raw connection, a piece at a time, looking for
// the answer between pieces (and, with Content-Length, for a second before the first): the
// answer, and how many body bytes the client had sent when it came.
struct RawUpload {
  std::string answer;
  size_t sent_before_answer = 0;
};
RawUpload raw_upload(const Jobctld& d, const std::string& fleet, const Worker& w, int64_t job, int64_t epoch,
                     size_t total, bool chunked) {
  RawConnection c(d.port());
  RawUpload out;
  EXPECT_TRUE(c.connected());
  std::string head = "PUT /v1/jobs/" + std::to_string(job) + "/outputs?path=big.bin&worker_id=" + std::to_string(w.id) +
                     "&epoch=" + std::to_string(epoch) + " HTTP/1.1\r\nHost: " + c.host() +
                     "\r\nAuthorization: Bearer " + fleet + "\r\nX-Worker-Secret: " + w.secret +
                     "\r\nContent-Type: application/octet-stream\r\n";
  head += chunked ? "Transfer-Encoding: chunked\r\n\r\n" : "Content-Length: " + std::to_string(total) + "\r\n\r\n";
  if (!c.send(head)) return out;
  if (!chunked) {
    out.answer = c.read_response(std::chrono::seconds(1));
    if (!out.answer.empty()) return out;
  }
  const std::string piece(256 * 1024, 'o');
  char size_line[32];
  std::snprintf(size_line, sizeof size_line, "%zx\r\n", piece.size());
  while (out.sent_before_answer < total) {
    const bool sent = chunked ? c.send(size_line) && c.send(piece) && c.send("\r\n") : c.send(piece);
    if (!sent) break;  // the server closed after its answer
    out.sent_before_answer += piece.size();
    out.answer = c.read_response(std::chrono::milliseconds(5));
    if (!out.answer.empty()) return out;
  }
  if (chunked && out.sent_before_answer >= total) c.send("0\r\n\r\n");
  out.answer = c.read_response(std::chrono::seconds(60));
  return out;
}

TEST(OutputsStreaming, AnOutputOverTheJobsLimitIsRefusedBeforeItIsStaged) {
  OutputsWorld world(json{{"max_bytes_per_job", 1 << 20}});
  ASSERT_TRUE(world.d.ok());
  auto [job, w, epoch] = world.leased_job("outputs-streaming");
  const size_t total = size_t{128} << 20;
  for (const bool chunked : {false, true}) {
    const RawUpload up = raw_upload(world.d, world.fleet, w, job, epoch, total, chunked);
    std::cerr << (chunked ? "chunked" : "Content-Length") << ": " << (up.sent_before_answer >> 20)
              << " MiB of a " << (total >> 20) << " MiB output were sent before the answer: "
              << up.answer.substr(0, up.answer.find("\r\n")) << "\n";
    if (!chunked) {
      EXPECT_EQ(status_of(up.answer), 413) << up.answer;
      EXPECT_NE(up.answer.find("outputs.max_bytes_per_job"), std::string::npos) << up.answer;
      EXPECT_EQ(up.sent_before_answer, 0u) << "the Content-Length was not checked before the body";
    } else {
      // The 413 goes out and the connection closes with the client's bytes unread: the reset
      // may overtake the answer.
      if (!up.answer.empty()) {
        EXPECT_EQ(status_of(up.answer), 413) << up.answer;
        EXPECT_NE(up.answer.find("outputs.max_bytes_per_job"), std::string::npos) << up.answer;
      }
      // The limit, and what the sockets' buffers held when the server stopped reading.
      EXPECT_LT(up.sent_before_answer, size_t{16} << 20) << "the chunked body was read past the limit";
    }
  }
  // Nothing of it was kept, and an output under the limit is stored.
  EXPECT_TRUE(upload(world.d.url(), world.fleet, w, job, epoch, "small.bin", std::string(1000, 's'), world.dir));
}

}  // namespace
}  // namespace jobctl::security
