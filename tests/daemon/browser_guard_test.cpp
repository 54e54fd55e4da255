// net::BrowserGuard on its own (no sockets): which Host, Origin, Sec-Fetch-Site and Content-Type
// headers it lets through. The attacks themselves, over HTTP and through Chromium, are in
// tests/security (browser_origin_test.cpp, browser_attack_test.cpp).
#include "net/browser_guard.h"

#include <gtest/gtest.h>

namespace jobctl::net {
namespace {

HttpRequest request(std::string method, std::string host, std::string content_type = "application/json") {
  HttpRequest r;
  r.method = std::move(method);
  r.set_header("Host", std::move(host));
  r.content_type = std::move(content_type);
  return r;
}

std::string refusal(const BrowserGuard& g, const HttpRequest& r, bool has_body = false, bool upload = false) {
  auto e = g.check(r, has_body, upload);
  return e ? e->field : "";
}

TEST(BrowserGuard, HostMustNameTheListener) {
  const BrowserGuard loopback("127.0.0.1", 8080, false, {"jobctld", "proxy.example:443"});
  for (const char* ok : {"127.0.0.1:8080", "localhost:8080", "LocalHost:8080", "[::1]:8080", "127.0.0.2:8080",
                         "jobctld:8080", "jobctld:9999", "jobctld", "proxy.example:443"})
    EXPECT_EQ(refusal(loopback, request("GET", ok)), "") << ok;
  for (const char* bad : {"", "attacker.test:8080", "127.0.0.1:8081", "127.0.0.1", "10.0.0.1:8080",
                          "proxy.example:8080", "jobctld.:8080", "[::1", "::1:8080", "a b:8080", "127.0.0.1:99999"})
    EXPECT_EQ(refusal(loopback, request("GET", bad)), "Host") << bad;

  const BrowserGuard wildcard("0.0.0.0", 80, false, {});
  for (const char* ok : {"192.168.1.5", "192.168.1.5:80", "[fe80::1]", "localhost"})
    EXPECT_EQ(refusal(wildcard, request("GET", ok)), "") << ok;
  EXPECT_EQ(refusal(wildcard, request("GET", "gpu-box")), "Host");

  const BrowserGuard lan("192.168.1.5", 8080, false, {});
  EXPECT_EQ(refusal(lan, request("GET", "192.168.1.5:8080")), "");
  EXPECT_EQ(refusal(lan, request("GET", "localhost:8080")), "Host");
  EXPECT_EQ(refusal(lan, request("GET", "127.0.0.1:8080")), "Host");

  const BrowserGuard tls("::1", 443, true, {});
  EXPECT_EQ(refusal(tls, request("GET", "[::1]")), "");  // the default port of https
  EXPECT_EQ(refusal(tls, request("GET", "[0:0::1]:443")), "");
}

TEST(BrowserGuard, StateChangingRequestsMustComeFromTheSameOrigin) {
  const BrowserGuard g("127.0.0.1", 8080, false, {});
  HttpRequest r = request("POST", "127.0.0.1:8080");
  EXPECT_EQ(refusal(g, r), "");
  r.set_header("Origin", "http://127.0.0.1:8080");
  EXPECT_EQ(refusal(g, r), "");
  for (const char* bad : {"http://attacker.test", "http://127.0.0.1:8081", "https://127.0.0.1:8080", "null",
                          "http://localhost:8080", "127.0.0.1:8080"}) {
    r.set_header("Origin", bad);
    EXPECT_EQ(refusal(g, r), "Origin") << bad;
  }
  r.set_header("Origin", "");
  r.set_header("Sec-Fetch-Site", "cross-site");
  EXPECT_EQ(refusal(g, r), "Sec-Fetch-Site");
  r.set_header("Sec-Fetch-Site", "same-site");
  EXPECT_EQ(refusal(g, r), "Sec-Fetch-Site");
  r.set_header("Sec-Fetch-Site", "same-origin");
  EXPECT_EQ(refusal(g, r), "");
  // Reads are not cross-site writes: a foreign Origin on a GET is left to the browser's
  // same-origin policy (no CORS header is ever sent).
  HttpRequest get = request("GET", "127.0.0.1:8080", "");
  get.set_header("Origin", "http://attacker.test");
  EXPECT_EQ(refusal(g, get), "");
}

TEST(BrowserGuard, PostsAndBodiesNeedANonSimpleContentType) {
  const BrowserGuard g("127.0.0.1", 8080, false, {});
  for (const char* simple : {"", "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded",
                             "multipart/form-data; boundary=x", "application/jsonx"})
    EXPECT_EQ(refusal(g, request("POST", "127.0.0.1:8080", simple)), "Content-Type") << simple;
  EXPECT_EQ(refusal(g, request("POST", "127.0.0.1:8080", "Application/JSON; charset=utf-8")), "");
  // Upload routes take octet-stream, and only that.
  EXPECT_EQ(refusal(g, request("PUT", "127.0.0.1:8080", "application/octet-stream"), true, true), "");
  EXPECT_EQ(refusal(g, request("POST", "127.0.0.1:8080", "application/json"), true, true), "Content-Type");
  EXPECT_EQ(refusal(g, request("PUT", "127.0.0.1:8080", "text/plain"), true, true), "Content-Type");
  // A DELETE or PUT without a body is never a simple request (the method needs a preflight).
  EXPECT_EQ(refusal(g, request("DELETE", "127.0.0.1:8080", "")), "");
  EXPECT_EQ(refusal(g, request("DELETE", "127.0.0.1:8080", "text/plain"), true), "Content-Type");
}

}  // namespace
}  // namespace jobctl::net
