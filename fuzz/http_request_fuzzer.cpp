// libFuzzer target: the HTTP request path in process — target parsing, the auth gate, the route
// table and every handler, over a real SQLite store and JobService in a temporary folder.
//
// Input: "METHOD TARGET\n" then header lines ("Content-Type: ...", "Authorization: ...",
// "Idempotency-Key: ...") up to an empty line, then the body. Half the inputs (by the first
// byte's low bit... of the method line's length) go through a router with auth on, where
// fuzz/corpus holds valid admin, user and worker tokens (fixed secrets, inserted at start-up).
//
// Properties: never crashes or trips a sanitizer; every answer is a known status with a JSON
// error body on 4xx/5xx naming a code; and a request answered 4xx leaves the store exactly as it
// was (Store::dump before and after).
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "daemon/http/api_routes.h"
#include "daemon/http/auth_setup.h"
#include "net/json_body.h"
#include "daemon/jobs/job_matcher.h"
#include "daemon/jobs/job_service.h"
#include "daemon/store/store.h"

namespace {

using namespace jobctl;
using namespace jobctl::daemon;

// The tokens in the corpus: secret -> (user, role). Their hashes are inserted at start-up.
constexpr const char* kTokens[][3] = {
    {"jct_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "root", "admin"},
    {"jct_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", "alice", "user"},
    {"jct_cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc", "fleet", "worker"},
};

struct World {
  std::string dir;
  ManualClock clock;
  std::unique_ptr<store::Store> db;
  std::unique_ptr<jobs::JobService> svc;
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
    for (const auto& t : kTokens) {
      store::TokenRow row;
      row.user = t[1];
      row.role = t[2];
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
    open_h = http::install_hardening(open_router, *svc, *db, clock, off);
    auth_router = http::make_api_router(*svc);
    auth_h = http::install_hardening(auth_router, *svc, *db, clock, on);
  }
  void close() {
    svc->shutdown();
    db->close();
    svc.reset();
    db.reset();
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
    else if (name == "Authorization") req.authorization = std::string(value);
    else if (name == "Idempotency-Key") req.idempotency_key = std::string(value);
    if (e == std::string_view::npos) break;
  }
  req.body = std::string(in);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  World& w = world();
  w.maybe_reset();
  net::HttpRequest req;
  if (!parse_input(std::string_view(reinterpret_cast<const char*>(data), size), req)) return 0;
  const bool with_auth = !req.authorization.empty() || (size % 2 == 1);
  net::HttpResponse res;
  const std::string before = *w.db->dump();
  if (auto st = net::parse_target(req.target, req); !st) {
    res = net::error_response(st.error());
  } else {
    std::promise<net::HttpResponse> p;
    auto f = p.get_future();
    (with_auth ? w.auth_router : w.open_router).handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    res = f.get();
  }
  w.clock.advance_ms(7);
  if (res.status < 200 || res.status > 599) std::abort();
  if (res.status >= 400) {
    auto j = nlohmann::json::parse(res.body, nullptr, false);
    if (!j.is_object() || !j.contains("error") || !j["error"]["code"].is_string()) std::abort();
    if (res.status < 500 && *w.db->dump() != before) {
      std::fprintf(stderr, "a %d answer changed the store: %s %s\n", res.status, req.method.c_str(), req.target.c_str());
      std::abort();
    }
  }
  return 0;
}
