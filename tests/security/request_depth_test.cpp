// No request body can exhaust jobctld's stack before it is checked (docs/security.md, "Limits"):
// a heartbeat whose `progress` and a completion whose `result` nested 100,000 levels deep (about
// 200 KB, well under the body limit) overflowed the stack in the recursive serialisation of the
// parsed body, before the size check and the lease fence, and killed the daemon. Now the parser
// stops at the depth limit and the request gets a 400 naming the body; the daemon stays up and the
// lease holder's job is untouched. Made by the real lease holder (auth off: anyone can register a
// worker), over real HTTP.
#include "tests/security/security_support.h"

namespace jobctl::security {
namespace {

// `{"a":{"a":...1...}}` (objects) or `[[...1...]]` (arrays), `depth` levels deep.
std::string nested(int depth, bool arrays) {
  const std::string open = arrays ? "[" : "{\"a\":";
  const std::string close = arrays ? "]" : "}";
  std::string out;
  out.reserve(static_cast<size_t>(depth) * (open.size() + close.size()) + 1);
  for (int i = 0; i < depth; ++i) out += open;
  out += "1";
  for (int i = 0; i < depth; ++i) out += close;
  return out;
}

void expect_refused_as_too_deep(const Expected<client::HttpResult>& r, const std::string& what) {
  ASSERT_TRUE(r) << what << ": " << r.error().message << " (jobctld died?)";
  EXPECT_GE(r->status, 400) << what << ": " << r->body;
  EXPECT_LT(r->status, 500) << what << ": " << r->body;
  const json body = body_of(*r);
  ASSERT_TRUE(body.contains("error")) << what << ": " << r->body;
  EXPECT_EQ(body["error"]["field"], "body") << what << ": " << r->body;
  EXPECT_NE(body["error"]["message"].get<std::string>().find("deeper"), std::string::npos) << r->body;
}

TEST(RequestDepth, AHeartbeatOrCompletionNested100000DeepIsRefusedAndJobctldStaysUp) {
  TempDir dir;
  Jobctld d(dir.file("data"));
  ASSERT_TRUE(d.ok());
  const int64_t job = submit(d.url(), "", small_spec("deep"));
  const Worker w = register_worker(d.url(), "", "holder");
  const json l = lease(d.url(), "", w);
  ASSERT_TRUE(l.is_object() && l["job_id"] == job) << l.dump();
  const int64_t epoch = l.value("epoch", int64_t{0});
  auto worker = http_as(d.url(), "", w.secret);
  const std::string ref = "{\"worker_id\":" + std::to_string(w.id) + ",\"epoch\":" + std::to_string(epoch);
  const std::string path = "/v1/jobs/" + std::to_string(job);

  for (bool arrays : {false, true}) {
    const std::string deep = nested(100000, arrays);
    expect_refused_as_too_deep(worker.request("POST", path + "/heartbeat", ref + ",\"progress\":" + deep + "}"),
                               arrays ? "heartbeat (arrays)" : "heartbeat");
    expect_refused_as_too_deep(worker.request("POST", path + "/complete", ref + ",\"result\":" + deep + "}"),
                               arrays ? "completion (arrays)" : "completion");
  }
  // A whole body nested that deep, on another route: refused the same way.
  expect_refused_as_too_deep(http_as(d.url()).request("POST", path + "/cancel", nested(100000, false)), "cancel");

  // Still up, and the job is still the lease holder's, running.
  auto health = http_as(d.url()).request("GET", "/healthz");
  ASSERT_TRUE(health) << "jobctld is gone: " << d.process().output();
  EXPECT_EQ(health->status, 200);
  auto shown = http_as(d.url()).request("GET", path);
  ASSERT_TRUE(shown && shown->status == 200);
  EXPECT_NE(body_of(*shown)["state"], "succeeded") << shown->body;
  EXPECT_NE(body_of(*shown)["state"], "cancelled") << shown->body;
  // A heartbeat of ordinary depth is still taken.
  auto ok = worker.request("POST", path + "/heartbeat", ref + ",\"progress\":" + nested(20, false) + "}");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

}  // namespace
}  // namespace jobctl::security
