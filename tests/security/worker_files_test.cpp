// A job's program against the files the worker touches for it (docs/security.md, "What a job
// program can reach"), with real jobctld, a real root jobctl-worker --run-as a user the test
// makes, real programs and real races, each repeated enough that the unsafe worker lost every run:
//   W1 a checkpoint on another file system (/dev/shm) was checked with lstat and read by its path
//      as root: swapped for a link meanwhile, the worker uploaded a root-only file as the job's
//      checkpoint;
//   W2 the walk giving a job's folders to its user chowned each path it listed: another job of
//      the same user swapped a subfolder for a link meanwhile, and root's files outside any job
//      folder became the user's;
//   W3 one user's job changed the setup another user's later job reused (the cache was keyed by
//      bundle and commands, and writable);
//   W4 an output hard-linked to someone else's file was uploaded (outputs had no owner check);
//   W5 a chain of bundle links, each lexically inside, ended outside.
// The run-as tests need root (the worker changes the program's user) and are skipped otherwise.
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "base/crc32c.h"
#include "bundle/code_bundle.h"
#include "tests/security/security_support.h"
#include "tests/security/worker_site.h"
#include "tests/support/poll.h"

namespace jobctl::security {
namespace {

namespace fs = std::filesystem;

// A root-only file (0600) holding `text`.
void write_root_only(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  ::chmod(path.c_str(), 0600);
}

// Announces the same checkpoint path again and again while a thread swaps the file there for a
// link to argv[1] and back; then waits for argv[3] to exist (the test has read the uploads).
constexpr const char* kCheckpointSwap = R"(import json, os, sys, threading, time
secret, n, flag = sys.argv[1], int(sys.argv[2]), sys.argv[3]
d = "/dev/shm/jct-ck-%d" % os.getpid()
os.makedirs(d)
ck, real, link = d + "/ck", d + "/real", d + "/link"
with open(ck, "wb") as f: f.write(b"R" * 4096)
stop = False
def flip():
    while not stop:
        with open(real, "wb") as f: f.write(b"R" * 4096)
        os.rename(real, ck)
        os.symlink(secret, link)
        os.rename(link, ck)
t = threading.Thread(target=flip)
t.start()
for step in range(n):
    print(json.dumps({"event": "checkpoint", "path": ck, "step": step}), flush=True)
    time.sleep(0.01)
stop = True
t.join()
time.sleep(1)
print("announced", n, flush=True)
deadline = time.time() + 60
while not os.path.exists(flag) and time.time() < deadline: time.sleep(0.05)
for name in os.listdir(d): os.unlink(os.path.join(d, name))
os.rmdir(d)
)";

TEST(CheckpointSwap, ACheckpointSwappedForALinkAfterItsCheckIsNeverReadThroughTheLink) {
  if (::geteuid() != 0) GTEST_SKIP() << "--run-as needs root (the worker changes the program's user)";
  Site site;
  TestUser user;
  const std::string mallory = site.commands_token("mallory");
  const std::string secret = site.dir.file("root-only");
  write_root_only(secret, "SECRET-" + std::string(4089, 'S'));
  Process worker(site.worker_argv({"--run-as", user.name()}), site.worker_env());
  ASSERT_TRUE(worker.ok());
  const std::string flag = site.dir.file("uploads-read");
  const int64_t id = submit(site.url(), mallory,
                            json{{"name", "ck-swap"},
                                 {"command", {kPython, "-c", kCheckpointSwap, secret, "200", flag}},
                                 {"resources", {{"gpu", "cpu"}}},
                                 {"checkpoint", {{"keep", 100}}}}
                                .dump());
  ASSERT_GT(id, 0);
  ASSERT_TRUE(jobctl::testing::poll_until([&] { return log_of(site, mallory, id).find("announced") != std::string::npos; },
                                          std::chrono::seconds(90)))
      << log_of(site, mallory, id) << "\n--- worker:\n" << worker.output();
  // Every checkpoint the user can download is the program's own file.
  auto http = http_as(site.url(), mallory);
  auto listed = http.request("GET", "/v1/jobs/" + std::to_string(id) + "/checkpoints");
  ASSERT_TRUE(listed && listed->status == 200);
  const json checkpoints = body_of(*listed).value("checkpoints", json::array());
  int leaked = 0;
  for (const auto& c : checkpoints) {
    auto got = http.request("GET", "/v1/jobs/" + std::to_string(id) + "/checkpoints/" +
                                       std::to_string(c.value("step", int64_t{-1})));
    ASSERT_TRUE(got && got->status == 200);
    if (got->body.find("SECRET") != std::string::npos) ++leaked;
    else EXPECT_EQ(got->body, std::string(4096, 'R'));
  }
  std::ofstream(flag) << "done\n";
  const auto [job, log] = site.finished(id, mallory);
  EXPECT_EQ(job.value("state", ""), "succeeded") << job.dump(1);
  EXPECT_GT(checkpoints.size(), 0u) << "no checkpoint was uploaded at all\n--- worker:\n" << worker.output();
  EXPECT_EQ(leaked, 0) << leaked << " of " << checkpoints.size()
                       << " uploaded checkpoints were the root-only file the link pointed at";
}

// Waits for the next job's folder to become this user's (the first exchange that succeeds), then
// swaps its subfolders sub00.. (argv[3] of them) with links to argv[1] and back, for argv[2]
// seconds.
constexpr const char* kSwapFolders = R"(import ctypes, glob, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
target, seconds, folders = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
victim = int(os.environ["JOBCTL_JOB_ID"]) + 1
work_dir = os.path.dirname(os.path.dirname(os.getcwd()))
pattern = os.path.join(work_dir, "job-%d-lease-*" % victim, "work")
# Links to the target in this job's own folder: exchanged with the next job's subfolders (the
# same file system), which succeeds as soon as its folder is this user's.
links = [os.path.abspath(".l%02d" % i).encode() for i in range(folders)]
for l in links: os.symlink(target, l)
print("waiting for", pattern, flush=True)
deadline = time.time() + 60
w = None
while w is None and time.time() < deadline:
    found = glob.glob(pattern)
    w = found[0] if found else None
subs = [os.path.join(w or "", "sub%02d" % i).encode() for i in range(folders)]
swaps = 0
while w is not None and time.time() < deadline and swaps == 0:
    if libc.renameat2(-100, subs[-1], -100, links[-1], 2) == 0: swaps += 1
end = time.time() + seconds
while swaps and time.time() < end:
    for s, l in zip(subs, links):
        if libc.renameat2(-100, s, -100, l, 2) == 0: swaps += 1
print("swaps", swaps, flush=True)
)";

TEST(ChownWalk, GivingAJobItsFoldersNeverFollowsAFolderAnotherJobSwapsForALink) {
  if (::geteuid() != 0) GTEST_SKIP() << "--run-as needs root (the worker changes the program's user)";
  Site site;
  TestUser user;
  // Root's files outside any job folder, the attacker's target.
  const fs::path victim = site.dir.path() / "victim";
  fs::create_directories(victim);
  for (int i = 0; i < 500; ++i) write_root_only((victim / ("f" + std::to_string(i))).string(), "root's\n");
  // The next job's code: 60 folders of 150 files each, so that the walk takes a while and the
  // swapping starts before it reaches most of them (each one it enters as a link loses).
  constexpr int kFolders = 60;
  const fs::path code = site.dir.path() / "code";
  for (int s = 0; s < kFolders; ++s) {
    char name[8];
    std::snprintf(name, sizeof name, "sub%02d", s);
    fs::create_directories(code / name);
    for (int f = 0; f < 150; ++f) std::ofstream(code / name / ("f" + std::to_string(f))) << "x\n";
  }
  auto bytes = bundle::pack_directory(code.string());
  ASSERT_TRUE(bytes) << bytes.error().message;
  auto posted = http_as(site.url(), site.admin)
                    .request("POST", "/v1/bundles", *bytes, 120'000, {"Content-Type: application/octet-stream"});
  ASSERT_TRUE(posted && posted->status == 201) << (posted ? posted->body : posted.error().message);
  const std::string sha = body_of(*posted).value("bundle", "");

  Process worker(site.worker_argv({"--run-as", user.name(), "--slots", "2"}), site.worker_env());
  ASSERT_TRUE(worker.ok());
  const int64_t attacker = submit(site.url(), site.admin,
                                  json{{"name", "swapper"},
                                       {"command", {kPython, "-c", kSwapFolders, victim.string(), "3", std::to_string(kFolders)}},
                                       {"resources", {{"gpu", "cpu"}}}}
                                      .dump());
  ASSERT_TRUE(jobctl::testing::poll_until(
      [&] { return log_of(site, site.admin, attacker).find("waiting for") != std::string::npos; },
      std::chrono::seconds(60)))
      << worker.output();
  const int64_t next = submit(site.url(), site.admin,
                              json{{"name", "walked"}, {"command", {"/bin/true"}}, {"bundle", sha},
                                   {"resources", {{"gpu", "cpu"}}}}
                                  .dump());
  ASSERT_EQ(next, attacker + 1);
  const auto [job, log] = site.finished(attacker, site.admin);
  site.finished(next, site.admin);
  EXPECT_NE(log.find("swaps"), std::string::npos) << log;
  int given = 0;
  for (const auto& e : fs::directory_iterator(victim)) {
    struct stat st {};
    if (::lstat(e.path().c_str(), &st) == 0 && st.st_uid == user.credentials().uid) ++given;
  }
  EXPECT_EQ(given, 0) << given << " of root's 500 files outside any job folder were given to the job's user\n"
                      << log << "\n--- worker:\n" << worker.output();
}

TEST(SetupReuse, ASetupIsNeverReusedByAnotherUserNorAfterAJobChangedIt) {
  Site site;
  const std::string alice = site.commands_token("alice");
  const std::string bob = site.commands_token("bob");
  Process worker(site.worker_argv({}), site.worker_env());
  ASSERT_TRUE(worker.ok());
  const json setup = {"mkdir venv && echo clean > venv/site.pth"};
  auto run = [&](const std::string& token, const std::string& script) {
    const int64_t id = submit(site.url(), token,
                              json{{"name", "venv"}, {"command", {"/bin/sh", "-c", script}}, {"setup", setup},
                                   {"resources", {{"gpu", "cpu"}}}}
                                  .dump());
    auto out = site.finished(id, token);
    EXPECT_EQ(out.first.value("state", ""), "succeeded") << out.first.dump(1) << "\n--- worker:\n" << worker.output();
    return out.second;
  };
  // Alice's job plants code in what her setup made (through the link in its folder).
  const std::string planted =
      run(alice, "cat venv/site.pth; chmod -R u+w venv/ 2>/dev/null; echo implant > venv/site.pth; cat venv/site.pth");
  EXPECT_NE(planted.find("implant"), std::string::npos) << planted;
  // Bob's job with the same setup gets one of his own.
  const std::string bobs = run(bob, "echo bob sees $(cat venv/site.pth)");
  EXPECT_NE(bobs.find("bob sees clean"), std::string::npos) << bobs;
  EXPECT_EQ(bobs.find("implant"), std::string::npos) << bobs;
  // Alice's next job does not reuse the setup her last one changed.
  const std::string again = run(alice, "echo alice sees $(cat venv/site.pth)");
  EXPECT_NE(again.find("alice sees clean"), std::string::npos) << again;
  EXPECT_NE(again.find("made again"), std::string::npos) << again;
  // And unchanged, it is reused.
  const std::string reused = run(alice, "echo alice sees $(cat venv/site.pth)");
  EXPECT_NE(reused.find("alice sees clean"), std::string::npos) << reused;
  EXPECT_NE(reused.find("not run again"), std::string::npos) << reused;
}

TEST(OutputOwner, AnOutputThatIsNotAFileOfTheJobsUserIsNotUploaded) {
  if (::geteuid() != 0) GTEST_SKIP() << "--run-as needs root (the worker changes the program's user)";
  Site site;
  TestUser user;
  // Another user's file the job's user may link (the kernel's protected_hardlinks lets anyone
  // link a file they may read and write): the worker, not the kernel, must refuse it.
  const std::string theirs = site.dir.file("theirs");
  std::ofstream(theirs) << "root's, world-writable\n";
  ::chmod(theirs.c_str(), 0666);
  Process worker(site.worker_argv({"--run-as", user.name()}), site.worker_env());
  ASSERT_TRUE(worker.ok());
  const std::string script = "ln " + theirs + " \"$JOBCTL_OUTPUT_DIR/linked\" && echo own > \"$JOBCTL_OUTPUT_DIR/own\"";
  const int64_t id = submit(site.url(), site.admin,
                            json{{"name", "outputs"}, {"command", {"/bin/sh", "-c", script}},
                                 {"resources", {{"gpu", "cpu"}}}}
                                .dump());
  const auto [job, log] = site.finished(id, site.admin);
  EXPECT_EQ(job.value("state", ""), "succeeded") << job.dump(1) << log << "\n--- worker:\n" << worker.output();
  auto listed = http_as(site.url(), site.admin).request("GET", "/v1/jobs/" + std::to_string(id) + "/outputs");
  ASSERT_TRUE(listed && listed->status == 200);
  std::vector<std::string> paths;
  for (const auto& o : body_of(*listed).value("outputs", json::array())) paths.push_back(o.value("path", ""));
  EXPECT_EQ(paths, std::vector<std::string>{"own"}) << listed->body << "\n--- worker:\n" << worker.output();
}

// A proxy in front of jobctld (argv[1]: its port) that passes everything on, but sends the
// request bodies of a connection that carried an output upload at argv[2] bytes a second. It
// prints its own port, and names jobctld's in the requests' Host.
constexpr const char* kSlowUploadProxy = R"(import socket, sys, threading, time
upstream, rate = int(sys.argv[1]), int(sys.argv[2])
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(64)
port = listener.getsockname()[1]
print("port", port, flush=True)
mine, theirs = b"Host: 127.0.0.1:%d" % port, b"Host: 127.0.0.1:%d" % upstream
def pump(src, dst, to_server):
    slow = False
    try:
        while True:
            data = src.recv(4096)
            if not data: break
            if to_server: data = data.replace(mine, theirs)  # jobctld answers only its own name
            if to_server and b"PUT " in data and b"/outputs" in data: slow = True
            if slow and to_server:
                for i in range(0, len(data), 1024):
                    dst.sendall(data[i:i + 1024])
                    time.sleep(1024 / rate)
            else:
                dst.sendall(data)
    except OSError:
        pass
    for s in (src, dst):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
while True:
    client, _ = listener.accept()
    server = socket.create_connection(("127.0.0.1", upstream))
    threading.Thread(target=pump, args=(client, server, True), daemon=True).start()
    threading.Thread(target=pump, args=(server, client, False), daemon=True).start()
)";

TEST(UploadLease, ALeaseLivesWhileTheWorkerUploadsWhatAFinishedProgramLeft) {
  TempDir conf;
  Site site(config_flag(conf, json{{"workers", {{"lease_timeout_s", 2}, {"heartbeat_interval_s", 1}}}}));
  const std::string port = site.url().substr(site.url().rfind(':') + 1);
  // 288 KiB of output at 48 KiB/s: six seconds of upload, three times the lease.
  Process proxy({kPython, "-c", kSlowUploadProxy, port, std::to_string(48 * 1024)});
  ASSERT_TRUE(proxy.ok());
  ASSERT_TRUE(proxy.wait_for_output("port ", std::chrono::seconds(10))) << proxy.output();
  const std::string out = proxy.output();
  const std::string proxy_port = out.substr(out.find("port ") + 5, out.find('\n', out.find("port ")) - out.find("port ") - 5);
  std::vector<std::string> argv = site.worker_argv({});
  for (size_t i = 0; i + 1 < argv.size(); ++i)
    if (argv[i] == "--server") argv[i + 1] = "http://127.0.0.1:" + proxy_port;
  Process worker(argv, site.worker_env());
  ASSERT_TRUE(worker.ok());
  const std::string runs = site.dir.file("runs");
  const std::string script = "echo run >> " + runs + " && head -c 294912 /dev/zero > \"$JOBCTL_OUTPUT_DIR/model.bin\"";
  const int64_t id = submit(site.url(), site.admin,
                            json{{"name", "slow-upload"}, {"command", {"/bin/sh", "-c", script}},
                                 {"resources", {{"gpu", "cpu"}}}}
                                .dump());
  const auto [job, log] = site.finished(id, site.admin, std::chrono::seconds(60));
  EXPECT_EQ(job.value("state", ""), "succeeded") << job.dump(1) << "\n--- worker:\n" << worker.output();
  std::string text;
  std::getline(std::ifstream(runs), text, '\0');
  EXPECT_EQ(text, "run\n") << "the finished program ran again while its outputs uploaded\n--- worker:\n"
                           << worker.output();
  auto listed = http_as(site.url(), site.admin).request("GET", "/v1/jobs/" + std::to_string(id) + "/outputs");
  ASSERT_TRUE(listed && listed->status == 200);
  EXPECT_NE(listed->body.find("model.bin"), std::string::npos) << listed->body;
}

// A bundle of `entries` (type, path, data) in the format of bundle/code_bundle.h, made by hand:
// the packer refuses what these tests send.
struct RawEntry {
  char type;
  std::string path, data;
};
void le(std::string& s, uint64_t v, int n) {
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
std::string craft_bundle(const std::vector<RawEntry>& entries) {
  std::string raw;
  for (const auto& e : entries) {
    raw.push_back(e.type);
    raw.push_back(0);
    le(raw, e.path.size(), 2);
    le(raw, 0, 4);
    le(raw, e.data.size(), 8);
    raw += e.path + e.data;
  }
  uLongf n = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(n, '\0');
  compress2(reinterpret_cast<Bytef*>(packed.data()), &n, reinterpret_cast<const Bytef*>(raw.data()),
            static_cast<uLong>(raw.size()), 9);
  packed.resize(n);
  std::string out = "JCBUNDL1";
  le(out, packed.size(), 8);
  le(out, raw.size(), 8);
  le(out, entries.size(), 4);
  le(out, crc32c::value(packed.data(), packed.size()), 4);
  le(out, 0, 8);
  return out + packed;
}

TEST(BundleLinkChain, AChainOfBundleLinksEachInsideButEndingOutsideIsRefused) {
  Site site;
  // d/up -> .. is the bundle's top; out -> d/up/.. reads as d, but resolves above the top.
  const fs::path code = site.dir.path() / "chain";
  fs::create_directories(code / "d");
  fs::create_directory_symlink("..", code / "d" / "up");
  fs::create_directory_symlink("d/up/..", code / "out");
  CommandResult packed = run_command({env_or_fail("JOBCTL_CLI"), "--server", site.url(), "submit", "--workdir",
                                      code.string(), "--", "/bin/true"},
                                     {"JOBCTL_TOKEN=" + site.admin});
  EXPECT_FALSE(packed.status.success()) << packed.out << packed.err;
  EXPECT_NE(packed.err.find("link out of"), std::string::npos) << packed.out << packed.err;

  // The same chain sent by hand: the worker refuses to unpack it, and the job fails saying so.
  const std::string bytes = craft_bundle({{'d', "d", ""}, {'l', "d/up", ".."}, {'l', "out", "d/up/.."}});
  auto posted = http_as(site.url(), site.admin)
                    .request("POST", "/v1/bundles", bytes, 120'000, {"Content-Type: application/octet-stream"});
  ASSERT_TRUE(posted && posted->status == 201) << (posted ? posted->body : posted.error().message);
  Process worker(site.worker_argv({}), site.worker_env());
  ASSERT_TRUE(worker.ok());
  const int64_t id = submit(site.url(), site.admin,
                            json{{"name", "chain"}, {"command", {"/bin/sh", "-c", "ls out/"}},
                                 {"bundle", body_of(*posted).value("bundle", "")}, {"resources", {{"gpu", "cpu"}}}}
                                .dump());
  const auto [job, log] = site.finished(id, site.admin);
  EXPECT_EQ(job.value("state", ""), "failed") << job.dump(1) << log;
  EXPECT_NE(job.dump().find("link out of the bundle"), std::string::npos) << job.dump(1);
}

}  // namespace
}  // namespace jobctl::security
