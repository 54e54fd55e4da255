// Static file serving for the dashboard (daemon/http/static_files.h): content types, ETag and
// 304, Cache-Control, no way out of the web root (.., encoded .., dot-files, symlinks out,
// directories), GET/HEAD only, and the router fallback that keeps the API's JSON 404 for /v1/.
#include "daemon/http/static_files.h"

#include <gtest/gtest.h>

#include <fstream>

#include <nlohmann/json.hpp>

#include "net/router.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace jobctl::daemon::http;
namespace net = jobctl::net;
using nlohmann::json;

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string header(const net::HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers)
    if (k == name) return v;
  return "";
}

class StaticFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root = tmp.path() / "web";
    write(root / "index.html", "<!doctype html><title>jobctl</title>");
    write(root / "js" / "app.js", "export const x = 1;\n");
    write(root / "style.css", "body{}");
    write(root / "vendor" / "chart.umd.min.js", "/* chart */");
    write(root / ".secret", "dot-file");
    write(tmp.path() / "outside.txt", "outside the root");
    fs::create_symlink(tmp.path() / "outside.txt", root / "link-out.txt");
    fs::create_symlink(root / "style.css", root / "link-in.css");
  }

  net::HttpResponse get(const std::string& target, const std::string& method = "GET", const std::string& inm = "") {
    net::HttpRequest req;
    req.method = method;
    req.target = target;
    if (!inm.empty()) req.set_header("If-None-Match", inm);
    EXPECT_TRUE(net::parse_target(target, req)) << target;
    return StaticFiles(root).serve(req);
  }

  jobctl::testing::TempDir tmp;
  fs::path root;
};

TEST_F(StaticFilesTest, ServesFilesWithContentTypeEtagAndCacheControl) {
  net::HttpResponse r = get("/");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(r.body, "<!doctype html><title>jobctl</title>");
  EXPECT_EQ(header(r, "Cache-Control"), "no-cache");
  EXPECT_FALSE(header(r, "ETag").empty());
  EXPECT_EQ(get("/index.html").body, r.body);
  EXPECT_EQ(get("/js/app.js").content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(get("/style.css").content_type, "text/css; charset=utf-8");
  EXPECT_EQ(get("/vendor/chart.umd.min.js").body, "/* chart */");
  EXPECT_EQ(get("/link-in.css").status, 200);  // a symlink that stays inside the root
  EXPECT_EQ(get("/index.html?v=2").status, 200);  // a query string is not part of the file name
}

TEST_F(StaticFilesTest, EtagAnswers304AndChangesWithTheContent) {
  const std::string etag = header(get("/js/app.js"), "ETag");
  net::HttpResponse again = get("/js/app.js", "GET", etag);
  EXPECT_EQ(again.status, 304);
  EXPECT_TRUE(again.body.empty());
  EXPECT_EQ(get("/js/app.js", "GET", "\"other\", " + etag).status, 304);
  EXPECT_EQ(get("/js/app.js", "GET", "W/" + etag).status, 304);
  EXPECT_EQ(get("/js/app.js", "GET", "\"other\"").status, 200);
  write(root / "js" / "app.js", "export const x = 2;\n");
  net::HttpResponse changed = get("/js/app.js", "GET", etag);
  EXPECT_EQ(changed.status, 200);
  EXPECT_NE(header(changed, "ETag"), etag);
}

TEST_F(StaticFilesTest, NothingOutsideTheRootNorHiddenNorDirectories) {
  for (const char* target : {"/../outside.txt", "/js/../../outside.txt", "/%2e%2e/outside.txt",
                             "/js/%2E%2E/%2E%2E/outside.txt", "/.secret", "/js/", "/js", "/vendor",
                             "/link-out.txt", "/nope.html", "//etc/passwd", "/js/./app.js",
                             "/js%5capp.js", "/a%00b"}) {
    net::HttpRequest req;
    req.method = "GET";
    req.target = target;
    if (!net::parse_target(target, req)) continue;  // refused even earlier: fine
    net::HttpResponse r = StaticFiles(root).serve(req);
    EXPECT_EQ(r.status, 404) << target;
    EXPECT_EQ(json::parse(r.body)["error"]["code"], "not_found") << target;
    EXPECT_EQ(r.body.find("outside the root"), std::string::npos) << target;
  }
}

TEST_F(StaticFilesTest, OnlyGetAndHead) {
  net::HttpResponse head = get("/style.css", "HEAD");
  EXPECT_EQ(head.status, 200);
  EXPECT_TRUE(head.body.empty());
  EXPECT_EQ(head.content_type, "text/css; charset=utf-8");
  net::HttpResponse post = get("/style.css", "POST");
  EXPECT_EQ(post.status, 405);
  EXPECT_EQ(header(post, "Allow"), "GET, HEAD");
  EXPECT_EQ(get("/nope", "POST").status, 404);
}

TEST_F(StaticFilesTest, RouterFallbackKeepsTheApi404) {
  net::Router router;
  router.add("GET", "/v1/jobs", [](const net::HttpRequest&, const net::PathParams&, net::Responder respond) {
    net::HttpResponse r;
    r.body = "{\"jobs\":[]}";
    respond(r);
  });
  StaticFiles files(root);
  router.set_fallback(files.as_fallback());
  auto call = [&](const std::string& method, const std::string& target) {
    net::HttpRequest req;
    req.method = method;
    req.target = target;
    EXPECT_TRUE(net::parse_target(target, req));
    net::HttpResponse out;
    router.handle(req, [&](net::HttpResponse r) { out = std::move(r); });
    return out;
  };
  EXPECT_EQ(call("GET", "/v1/jobs").body, "{\"jobs\":[]}");
  EXPECT_EQ(call("POST", "/v1/jobs").status, 405);  // the route's 405 is unchanged
  for (const char* api : {"/v1/nope", "/v1", "/v1/index.html"}) {
    net::HttpResponse r = call("GET", api);
    EXPECT_EQ(r.status, 404) << api;
    EXPECT_EQ(r.content_type, "application/json");
    EXPECT_EQ(json::parse(r.body)["error"]["message"], std::string("no such endpoint: ") + api);
  }
  EXPECT_EQ(call("GET", "/").content_type, "text/html; charset=utf-8");
  EXPECT_EQ(call("GET", "/js/app.js").status, 200);
  EXPECT_EQ(call("GET", "/missing.js").status, 404);
}

TEST(StaticFilesRoot, FoundNextToTheBinaryOrConfigured) {
  jobctl::testing::TempDir tmp;
  const fs::path bin = tmp.path() / "build" / "daemon";
  fs::create_directories(bin);
  EXPECT_FALSE(find_web_root("", bin));
  write(bin / "web" / "index.html", "x");
  auto found = find_web_root("", bin);
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, fs::weakly_canonical(bin / "web"));
  EXPECT_EQ(*find_web_root("/somewhere/else", bin), fs::path("/somewhere/else"));
  write(tmp.path() / "prefix" / "share" / "jobctl" / "web" / "index.html", "y");
  fs::create_directories(tmp.path() / "prefix" / "bin");
  auto installed = find_web_root("", tmp.path() / "prefix" / "bin");
  ASSERT_TRUE(installed);
  EXPECT_EQ(*installed, fs::weakly_canonical(tmp.path() / "prefix" / "share" / "jobctl" / "web"));
}

TEST(StaticFilesTypes, ByExtension) {
  EXPECT_EQ(content_type_for("a.html"), "text/html; charset=utf-8");
  EXPECT_EQ(content_type_for("a.mjs"), "text/javascript; charset=utf-8");
  EXPECT_EQ(content_type_for("a.svg"), "image/svg+xml");
  EXPECT_EQ(content_type_for("a.json"), "application/json");
  EXPECT_EQ(content_type_for("a.png"), "image/png");
  EXPECT_EQ(content_type_for("noext"), "application/octet-stream");
}

}  // namespace
