// What a browser can be made to send, refused on its headers (docs/security.md, "Browsers"), over
// raw HTTP against a real jobctld with auth off (the default set-up):
//   - a Host that is not jobctld's address (DNS rebinding: attacker.test resolved to 127.0.0.1),
//     on every route, reads included; no Host at all;
//   - a state-changing request from another Origin, or that the browser marks cross-site;
//   - a "simple" POST (a form's urlencoded or multipart body, text/plain, no type at all), which
//     a page of any site may send without a CORS preflight;
// and the dashboard's answers forbid framing and referrers. Each refused request changes nothing:
// the job stays queued, no bundle is stored. The browser-driven versions of these attacks are
// browser_attack_test.cpp.
#include "tests/security/security_support.h"

namespace jobctl::security {
namespace {

// Sends one request on a new connection; the raw answer.
std::string send_one(int port, const std::string& request) {
  RawConnection c(port);
  EXPECT_TRUE(c.connected());
  c.send(request);
  return c.read_response(10s);
}

std::string header_value(const std::string& answer, const std::string& name) {
  const size_t at = answer.find("\r\n" + name + ": ");
  if (at == std::string::npos) return "";
  const size_t start = at + name.size() + 4;
  return answer.substr(start, answer.find("\r\n", start) - start);
}

// The error field of a raw answer's JSON body.
std::string raw_error_field(const std::string& answer) {
  const size_t body = answer.find("\r\n\r\n");
  if (body == std::string::npos) return "";
  const json j = json::parse(answer.substr(body + 4), nullptr, false);
  if (!j.is_object() || !j.contains("error") || !j["error"]["field"].is_string()) return "";
  return j["error"]["field"];
}

struct Victim {
  Victim(std::vector<std::string> flags = {}) : d(dir.file("data"), flags) {
    EXPECT_TRUE(d.ok());
    job = submit(d.url(), "", small_spec("victim"));
    host = "127.0.0.1:" + std::to_string(d.port());
  }
  std::string state() {
    auto r = http_as(d.url()).request("GET", "/v1/jobs/" + std::to_string(job));
    return r && r->status == 200 ? body_of(*r).value("state", std::string()) : "?";
  }
  std::string cancel_path() const { return "/v1/jobs/" + std::to_string(job) + "/cancel"; }
  TempDir dir;
  Jobctld d;
  int64_t job = 0;
  std::string host;
};

TEST(BrowserOrigin, AHostThatIsNotJobctldsAddressIsRefusedOnEveryRoute) {
  Victim v;
  const int port = v.d.port();
  const std::string p = std::to_string(port);
  for (const std::string& host : std::vector<std::string>{"attacker.test:" + p, "attacker.test", "127.0.0.1:" + std::to_string(port + 1),
                                 "10.1.2.3:" + p, "localhost.attacker.test:" + p}) {
    for (const std::string& path : std::vector<std::string>{"/healthz", "/v1/jobs", "/", "/index.html"}) {
      const std::string a = send_one(port, "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n");
      EXPECT_EQ(status_of(a), 403) << host << " " << path << "\n" << a;
      EXPECT_EQ(raw_error_field(a), "Host") << a;
    }
    const std::string a = send_one(port, "POST " + v.cancel_path() + " HTTP/1.1\r\nHost: " + host +
                                             "\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n");
    EXPECT_EQ(status_of(a), 403) << host << "\n" << a;
  }
  // No Host at all (HTTP/1.0 allows leaving it out; a browser never does).
  EXPECT_EQ(status_of(send_one(port, "GET /healthz HTTP/1.0\r\n\r\n")), 400);
  EXPECT_EQ(v.state(), "queued");
  // The loopback names of a loopback listener are jobctld's own.
  for (const std::string& host : std::vector<std::string>{"127.0.0.1:" + p, "localhost:" + p, "LOCALHOST:" + p, "[::1]:" + p})
    EXPECT_EQ(status_of(send_one(port, "GET /healthz HTTP/1.1\r\nHost: " + host + "\r\n\r\n")), 200) << host;
}

TEST(BrowserOrigin, AConfiguredNameIsAccepted) {
  Victim v({"--allowed-host", "jobctld.example", "--allowed-host", "gpu.example:8443"});
  const int port = v.d.port();
  const std::string p = std::to_string(port);
  EXPECT_EQ(status_of(send_one(port, "GET /healthz HTTP/1.1\r\nHost: jobctld.example:" + p + "\r\n\r\n")), 200);
  EXPECT_EQ(status_of(send_one(port, "GET /healthz HTTP/1.1\r\nHost: jobctld.example\r\n\r\n")), 200);  // a proxy's
  EXPECT_EQ(status_of(send_one(port, "GET /healthz HTTP/1.1\r\nHost: gpu.example:8443\r\n\r\n")), 200);
  EXPECT_EQ(status_of(send_one(port, "GET /healthz HTTP/1.1\r\nHost: gpu.example:" + p + "\r\n\r\n")), 403);
  EXPECT_EQ(status_of(send_one(port, "GET /healthz HTTP/1.1\r\nHost: attacker.test:" + p + "\r\n\r\n")), 403);
}

TEST(BrowserOrigin, AStateChangingRequestFromAnotherOriginIsRefused) {
  Victim v;
  const int port = v.d.port();
  const std::string p = std::to_string(port);
  for (const std::string& origin : std::vector<std::string>{"http://attacker.test", "http://127.0.0.1:" + std::to_string(port + 1),
                                   "https://127.0.0.1:" + p, "null"}) {
    const std::string a = send_one(port, "POST " + v.cancel_path() + " HTTP/1.1\r\nHost: " + v.host +
                                             "\r\nOrigin: " + origin +
                                             "\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    EXPECT_EQ(status_of(a), 403) << origin << "\n" << a;
    EXPECT_EQ(raw_error_field(a), "Origin") << a;
  }
  const std::string cross = send_one(port, "POST " + v.cancel_path() + " HTTP/1.1\r\nHost: " + v.host +
                                               "\r\nSec-Fetch-Site: cross-site\r\nContent-Type: application/json\r\n"
                                               "Content-Length: 0\r\n\r\n");
  EXPECT_EQ(status_of(cross), 403) << cross;
  EXPECT_EQ(raw_error_field(cross), "Sec-Fetch-Site") << cross;
  EXPECT_EQ(v.state(), "queued");
  // The dashboard's own origin may.
  const std::string own = send_one(port, "POST " + v.cancel_path() + " HTTP/1.1\r\nHost: " + v.host +
                                             "\r\nOrigin: http://" + v.host +
                                             "\r\nSec-Fetch-Site: same-origin\r\nContent-Type: application/json\r\n"
                                             "Content-Length: 0\r\n\r\n");
  EXPECT_EQ(status_of(own), 200) << own;
  EXPECT_EQ(v.state(), "cancelled");
}

TEST(BrowserOrigin, SimpleRequestsThatNeedNoPreflightAreRefused) {
  Victim v;
  const int port = v.d.port();
  const std::string bundle = "JCBUNDL1" + std::string(64, 'x');
  struct Case {
    std::string what, request;
  };
  const std::vector<Case> cases = {
      {"form POST, empty body", "POST " + v.cancel_path() + " HTTP/1.1\r\nHost: " + v.host +
                                    "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 0\r\n\r\n"},
      {"multipart form POST", "POST " + v.cancel_path() + " HTTP/1.1\r\nHost: " + v.host +
                                  "\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 6\r\n\r\n--b--\n"},
      {"POST without a type", "POST " + v.cancel_path() + " HTTP/1.1\r\nHost: " + v.host +
                                  "\r\nContent-Length: 0\r\n\r\n"},
      {"text/plain JSON", "POST " + v.cancel_path() + " HTTP/1.1\r\nHost: " + v.host +
                              "\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{}"},
      {"text/plain bundle", "POST /v1/bundles HTTP/1.1\r\nHost: " + v.host +
                                "\r\nContent-Type: text/plain\r\nContent-Length: " + std::to_string(bundle.size()) +
                                "\r\n\r\n" + bundle},
      {"text/plain job", "POST /v1/jobs HTTP/1.1\r\nHost: " + v.host + "\r\nContent-Type: text/plain;charset=UTF-8\r\n"
                             "Content-Length: " + std::to_string(small_spec("x").size()) + "\r\n\r\n" + small_spec("x")},
      {"JSON sent as a bundle", "POST /v1/bundles HTTP/1.1\r\nHost: " + v.host +
                                    "\r\nContent-Type: application/json\r\nContent-Length: " +
                                    std::to_string(bundle.size()) + "\r\n\r\n" + bundle},
  };
  for (const Case& c : cases) {
    const std::string a = send_one(port, c.request);
    EXPECT_EQ(status_of(a), 415) << c.what << "\n" << a;
    EXPECT_EQ(raw_error_field(a), "Content-Type") << c.what << "\n" << a;
  }
  EXPECT_EQ(v.state(), "queued");
  auto jobs = http_as(v.d.url()).request("GET", "/v1/jobs");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(body_of(*jobs)["jobs"].size(), 1u) << jobs->body;
  // Nothing was stored in the bundle folder (uploads land there only once accepted).
  size_t stored = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(v.dir.file("data") + "/bundles", ec))
    stored += e.is_regular_file() ? 1 : 0;
  EXPECT_EQ(stored, 0u);
  // The same bundle sent as the CLI sends it is stored.
  const std::string ok = send_one(port, "POST /v1/bundles HTTP/1.1\r\nHost: " + v.host +
                                            "\r\nContent-Type: application/octet-stream\r\nContent-Length: " +
                                            std::to_string(bundle.size()) + "\r\n\r\n" + bundle);
  EXPECT_EQ(status_of(ok), 201) << ok;
}

TEST(BrowserOrigin, TheDashboardForbidsFramingAndReferrers) {
  Victim v;
  const std::string a = send_one(v.d.port(), "GET / HTTP/1.1\r\nHost: " + v.host + "\r\n\r\n");
  ASSERT_EQ(status_of(a), 200) << a;
  const std::string csp = header_value(a, "Content-Security-Policy");
  EXPECT_NE(csp.find("frame-ancestors 'none'"), std::string::npos) << a.substr(0, 800);
  EXPECT_NE(csp.find("script-src 'self'"), std::string::npos) << csp;
  EXPECT_EQ(header_value(a, "X-Frame-Options"), "DENY");
  EXPECT_EQ(header_value(a, "Referrer-Policy"), "no-referrer");
}

}  // namespace
}  // namespace jobctl::security
