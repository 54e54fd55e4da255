// libFuzzer target: the HTTP request path in process — target parsing, the request gate (tokens,
// roles, the worker secret), the route table and every handler, checkpoint uploads and task files
// sent as text (POST /v1/tasks/resolve: YAML, its aliases) included,
// over a real SQLite store, JobService, CheckpointService and blob store in a temporary folder.
//
// Input: "METHOD TARGET\n" then header lines ("Content-Type: ...", "Authorization: ...",
// "Idempotency-Key: ...", "X-Worker-Secret: ...") up to an empty line, then the body. Half the
// inputs (by the input's length) go through a router with auth on, where fuzz/corpus holds
// valid admin, user and worker tokens (fixed secrets, inserted at start-up). Worker 1 is
// registered at start-up with a fixed secret (kWorkerSecret), which the corpus's worker calls
// carry. A checkpoint upload's body reaches the handler as the HTTP server hands it over: a file
// in the blob store's incoming folder (net::BodyFile).
//
// Properties: never crashes or trips a sanitizer; every answer is a known status with a JSON
// error body on 4xx/5xx naming a code; a request answered 4xx leaves the store exactly as it
// was (Store::dump before and after); and no upload file is ever left in the incoming folder.
//
// JOBCTL_FUZZ_TRACE=1 prints each request's answer (to check what a corpus reaches).
// JOBCTL_FUZZ_WRITE_SEED=FILE writes an upload of a valid checkpoint for the corpus's first job
// at step 2 there at start-up (how fuzz/corpus/http_request/upload was made).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include <fstream>

#include "base/clock.h"
#include "base/crc32c.h"
#include "daemon/auth/secret.h"
#include "daemon/http/api_routes.h"
#include "daemon/http/auth_setup.h"
#include "daemon/http/checkpoint_routes.h"
#include "daemon/http/task_routes.h"
#include "daemon/jobs/checkpoint_service.h"
#include "daemon/jobs/job_matcher.h"
#include "daemon/jobs/job_service.h"
#include "daemon/store/blob_store.h"
#include "daemon/store/store.h"
#include "net/json_body.h"
#include "train/checkpoint/checkpoint_format.h"
#include "train/spec/job_spec.h"

namespace {

using namespace jobctl;
using namespace jobctl::daemon;

// The tokens in the corpus: secret -> (user, role). Their hashes are inserted at start-up.
constexpr const char* kTokens[][3] = {
    {"jct_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "root", "admin"},
    {"jct_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "alice", "user"},
    {"jct_cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "fleet", "worker"},
};
// Worker 1's secret (its hash is stored at start-up).
constexpr const char* kWorkerSecret = "jcw_dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd";
// The spec of the corpus's `submit_user` (job 1 when it runs first): 2 steps.
constexpr const char* kCorpusSpec =
    R"({"name":"a","model":{"kind":"cnn","channels":[8],"hidden":[16]},"data":{"dataset":"synthetic","samples":64,"features":16,"classes":3},"train":{"epochs":2,"lr":0.01},"priority":7})";

struct World {
  std::string dir;
  ManualClock clock;
  std::unique_ptr<store::Store> db;
  std::unique_ptr<jobs::JobService> svc;
  std::unique_ptr<store::BlobStore> blobs;
  std::unique_ptr<jobs::CheckpointService> checkpoints;
  http::DownloadSlots downloads{4};
  net::Router open_router, auth_router;
  std::unique_ptr<http::Hardening> open_h, auth_h;
  int requests = 0;

  World() {
    char tmpl[] = "/tmp/jobctl-fuzz-http-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) std::abort();
    dir = tmpl;
    open();
  }
  ~World() { close(); std::filesystem::remove_all(dir); }

  void open() {
    store::StoreOptions o;
    o.path = dir + "/jobctl.db";
    o.synchronous = "NORMAL";  // the fuzzer is not testing durability; keep it fast
    auto s = store::Store::open(o, clock);
    if (!s) std::abort();
    db = std::move(*s);
    jobs::ServiceOptions so;
    so.max_lease_wait_s = 0;  // no long-polls: every request is answered at once
    svc = std::make_unique<jobs::JobService>(*db, clock, std::make_unique<jobs::FifoMatcher>(), so);
    if (!svc->start()) std::abort();
    blobs = std::make_unique<store::BlobStore>(dir + "/checkpoints");
    checkpoints = std::make_unique<jobs::CheckpointService>(*db, *blobs, clock);
    if (!checkpoints->reconcile()) std::abort();
    store::WorkerRow worker;
    worker.name = "fuzz-worker";
    worker.secret_hash = auth::sha256_hex(kWorkerSecret);
    if (!db->write([&worker](store::WriteTxn& txn) -> Status {
          auto id = txn.insert_worker(worker);
          if (!id) return id.error();
          return *id == 1 ? Status{} : Status{make_error(ErrorCode::internal, "worker 1 expected")};
        }))
      std::abort();
    for (const auto& t : kTokens) {
      store::TokenRow row;
      row.user = t[1];
      row.role = *store::parse_token_role(t[2]);
      row.hash_hex = auth::TokenService::sha256_hex(t[0]);
      row.prefix = std::string(t[0]).substr(0, 10);
      row.created_ms = clock.now_ms();
      if (!db->insert_token(row)) std::abort();
    }
    auth::SecurityOptions off;
    auth::SecurityOptions on;
    on.auth.enabled = true;
    on.limits.requests_per_s = 0;
    on.limits.max_waiting_jobs_per_user = 50;
    open_router = http::make_api_router(*svc);
    http::add_checkpoint_routes(open_router, *checkpoints, downloads);
    http::add_task_routes(open_router);  // task files sent as text: YAML and its aliases
    auto open_installed = http::install_hardening(open_router, *svc, *db, clock, off);
    if (!open_installed) std::abort();
    open_h = std::move(*open_installed);
    auth_router = http::make_api_router(*svc);
    http::add_checkpoint_routes(auth_router, *checkpoints, downloads);
    http::add_task_routes(auth_router);
    auto auth_installed = http::install_hardening(auth_router, *svc, *db, clock, on);
    if (!auth_installed) std::abort();
    auth_h = std::move(*auth_installed);
  }
  void close() {
    svc->shutdown();
    // The hardening observes the job service (the queue-wait metric): it goes first.
    open_h.reset();
    auth_h.reset();
    db->close();
    checkpoints.reset();
    blobs.reset();
    svc.reset();
    db.reset();
  }
  // Files in the blob store's incoming folder (an upload must never be left there).
  size_t incoming_files() const {
    size_t n = 0;
    std::error_code ec;
    for (std::filesystem::directory_iterator it(blobs->incoming_dir(), ec), end; !ec && it != end; it.increment(ec)) ++n;
    return n;
  }
  // Starts over now and then so that the store (and the dump compared per request) stays small.
  void maybe_reset() {
    if (++requests % 2000 != 0) return;
    close();
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    open();
  }
};

World& world() {
  static World* w = new World();  // lives for the process; libFuzzer exits without destructors
  return *w;
}

bool parse_input(std::string_view in, net::HttpRequest& req) {
  const size_t eol = in.find('\n');
  if (eol == std::string_view::npos) return false;
  std::string_view first = in.substr(0, eol);
  in.remove_prefix(eol + 1);
  const size_t sp = first.find(' ');
  if (sp == std::string_view::npos) return false;
  req.method = std::string(first.substr(0, sp));
  req.target = std::string(first.substr(sp + 1));
  for (;;) {
    const size_t e = in.find('\n');
    std::string_view line = in.substr(0, e);
    in.remove_prefix(e == std::string_view::npos ? in.size() : e + 1);
    if (line.empty()) break;
    const size_t colon = line.find(": ");
    if (colon == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, colon), value = line.substr(colon + 2);
    if (name == "Content-Type") req.content_type = std::string(value);
    else req.headers.emplace_back(std::string(name), std::string(value));
    if (e == std::string_view::npos) break;
  }
  req.body = std::string(in);
  return true;
}

// What the server does with an upload's body: streams it to a new file in the incoming folder.
void stream_to_file(World& w, net::HttpRequest& req) {
  static uint64_t n = 0;
  const std::string path = w.blobs->incoming_dir() + "/upload-fuzz-" + std::to_string(n++) + ".part";
  std::ofstream(path, std::ios::binary) << req.body;
  req.body_file = std::make_shared<net::BodyFile>(path);
  req.body_file->set_size(req.body.size());
  req.body.clear();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* path = std::getenv("JOBCTL_FUZZ_WRITE_SEED")) {
    auto spec = train::parse_job_spec(kCorpusSpec);
    if (!spec) std::abort();
    train::TrainingState s;
    s.fingerprint = train::training_fingerprint(*spec);
    s.global_step = 2;
    s.steps_per_epoch = 1;
    s.batch_size = spec->train.batch_size;
    s.train_samples = 64;
    s.epoch = 2;
    s.optimizer = train::OptimizerKind::sgd;
    s.params = {0.5f, -0.25f, 1.0f};
    s.moment1 = {0.01f, 0.02f, 0.03f};
    const auto bytes = train::encode_checkpoint(s);
    char crc[9];
    std::snprintf(crc, sizeof crc, "%08x", crc32c::value(bytes.data(), bytes.size()));
    std::ofstream out(path, std::ios::binary);
    out << "PUT /v1/jobs/1/checkpoints/2?worker_id=1&epoch=1&crc32c=" << crc
        << "\nAuthorization: Bearer " << kTokens[2][0]
        << "\nContent-Type: application/octet-stream\nX-Worker-Secret: " << kWorkerSecret << "\n\n";
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = world();
  w.maybe_reset();
  net::HttpRequest req;
  if (!parse_input(std::string_view(reinterpret_cast<const char*>(data), size), req)) return 0;
  const bool with_auth = req.header("Authorization").has_value() || (size % 2 == 1);
  net::HttpResponse res;
  // Changes an earlier request queued without waiting (a lease's touch of its worker's
  // last_seen_ms) land first: a no-op change waits for every change queued before it.
  (void)w.db->write([](store::WriteTxn&) { return Status{}; });
  const std::string before = *w.db->dump();
  if (auto st = net::parse_target(req.target, req); !st) {
    res = net::error_response(st.error());
  } else {
    const net::Router& router = with_auth ? w.auth_router : w.open_router;
    if (router.match(req.method, req.path).body().kind == net::RequestBody::Kind::file) stream_to_file(w, req);
    std::promise<net::HttpResponse> p;
    auto f = p.get_future();
    router.handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    res = f.get();
  }
  w.clock.advance_ms(7);
  static const bool trace = std::getenv("JOBCTL_FUZZ_TRACE") != nullptr;
  if (trace) std::fprintf(stderr, "%s %s -> %d %s\n", req.method.c_str(), req.target.c_str(), res.status, res.body.substr(0, 160).c_str());
  if (res.status < 200 || res.status > 599) std::abort();
  if (res.status >= 400) {
    auto j = nlohmann::json::parse(res.body, nullptr, false);
    if (!j.is_object() || !j.contains("error") || !j["error"]["code"].is_string()) std::abort();
    if (res.status < 500 && *w.db->dump() != before) {
      std::fprintf(stderr, "a %d answer changed the store: %s %s\n", res.status, req.method.c_str(), req.target.c_str());
      std::abort();
    }
  }
  req.body_file.reset();  // the request is over, as the server's would be
  if (w.incoming_files() != 0) {
    std::fprintf(stderr, "an upload file was left behind: %s %s -> %d\n", req.method.c_str(), req.target.c_str(),
                 res.status);
    std::abort();
  }
  return 0;
}
