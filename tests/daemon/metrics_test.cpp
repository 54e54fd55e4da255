// /metrics: the Prometheus text format, with the figures the daemon observed, checked
// by promtool (Debian's `prometheus` package) when it is installed.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <future>
#include <string>

#include "base/text_file.h"
#include "daemon/http/api_routes.h"
#include "daemon/http/auth_setup.h"
#include "daemon/metrics/metrics.h"
#include "tests/daemon/service_support.h"

namespace jobctl::daemon::http {
namespace {

using jobctl::daemon::testing::mlp_spec;
using jobctl::daemon::testing::ServiceFixture;

class MetricsRoute : public ::testing::Test {
 protected:
  MetricsRoute() : router_(make_api_router(*f_.svc)) {
    auto installed = install_hardening(router_, *f_.svc, *f_.db, f_.clock, options_);
    EXPECT_TRUE(installed) << (installed ? "" : installed.error().message);
    if (installed) hardening_ = std::move(*installed);
  }
  net::HttpResponse call(const std::string& method, const std::string& target, const std::string& body = "") {
    net::HttpRequest req;
    req.method = method;
    req.target = target;
    req.body = body;
    req.content_type = body.empty() ? "" : "application/json";
    EXPECT_TRUE(net::parse_target(target, req));
    std::promise<net::HttpResponse> p;
    auto fut = p.get_future();
    router_.handle(req, [&p](net::HttpResponse r) { p.set_value(std::move(r)); });
    return fut.get();
  }
  ServiceFixture f_;
  auth::SecurityOptions options_;
  net::Router router_;
  std::unique_ptr<Hardening> hardening_;
};

TEST_F(MetricsRoute, ExposesJobsHttpLatencyAndQueueWait) {
  call("POST", "/v1/jobs", mlp_spec());
  call("POST", "/v1/jobs", mlp_spec());
  call("POST", "/v1/jobs", "{bad");
  call("GET", "/v1/jobs/12345");
  call("GET", "/nope");
  const int64_t w = f_.register_worker();
  f_.clock.advance_ms(1500);
  ASSERT_TRUE(f_.lease_now(w));
  net::HttpResponse r = call("GET", "/metrics");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/plain; version=0.0.4; charset=utf-8");
  const std::string& m = r.body;
  EXPECT_NE(m.find("jobctl_jobs{state=\"queued\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("jobctl_jobs{state=\"placed\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("jobctl_http_requests_total{method=\"POST\",route=\"/v1/jobs\",code=\"201\"} 2\n"), std::string::npos) << m;
  EXPECT_NE(m.find("jobctl_http_requests_total{method=\"POST\",route=\"/v1/jobs\",code=\"400\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("jobctl_http_requests_total{method=\"GET\",route=\"/v1/jobs/{id}\",code=\"404\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("route=\"unmatched\",code=\"404\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("jobctl_http_request_duration_seconds_count{method=\"POST\",route=\"/v1/jobs\"} 3\n"), std::string::npos) << m;
  // One job waited 1.5 s between submit and lease.
  EXPECT_NE(m.find("jobctl_queue_wait_seconds_bucket{le=\"1\"} 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("jobctl_queue_wait_seconds_bucket{le=\"2.5\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("jobctl_queue_wait_seconds_sum 1.5\n"), std::string::npos) << m;
  EXPECT_NE(m.find("# TYPE jobctl_placement_latency_seconds histogram\n"), std::string::npos);
  EXPECT_NE(m.find("process_resident_memory_bytes "), std::string::npos);

  // promtool, when installed, is the judge of the format.
  const char* promtool = std::getenv("PROMTOOL");
  std::string tool = promtool ? promtool : "promtool";
  if (std::system(("command -v " + tool + " >/dev/null 2>&1").c_str()) != 0)
    GTEST_SKIP() << "promtool not installed (Debian package `prometheus`; scripts/setup.sh installs it): "
                    "the format was checked only by the assertions above";
  const std::string path = f_.dir.file("metrics.txt");
  std::ofstream(path) << m;
  const int rc = std::system((tool + " check metrics < " + path + " > " + path + ".out 2>&1").c_str());
  auto report = read_text_file(path + ".out", "promtool output");
  EXPECT_EQ(rc, 0) << "promtool check metrics failed:\n" << (report ? *report : report.error().message) << "\n" << m;
}

TEST(MetricsText, LabelValuesAreEscaped) {
  EXPECT_EQ(metrics::escape_label("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  metrics::Histogram h;
  h.observe(0.003);
  h.observe(100);
  std::string out;
  h.render(out, "x", "");
  EXPECT_NE(out.find("x_bucket{le=\"0.0025\"} 0\nx_bucket{le=\"0.005\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_bucket{le=\"60\"} 1\nx_bucket{le=\"+Inf\"} 2\n"), std::string::npos) << out;
  EXPECT_NE(out.find("x_count 2\n"), std::string::npos) << out;
}

TEST(MetricsText, StoreWriterCommitsAndCheckpoints) {
  metrics::Metrics m;
  m.observe_store_commit(true, 3, 0.002, 0.004);
  m.observe_store_commit(false, 600, 0, 0.0001);
  m.observe_wal_checkpoint(0.02, 1000);
  const std::string out = m.render();
  EXPECT_NE(out.find("jobctl_store_commit_seconds_bucket{durable=\"true\",le=\"0.0025\"} 0\n"
                     "jobctl_store_commit_seconds_bucket{durable=\"true\",le=\"0.005\"} 1\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("jobctl_store_commit_seconds_count{durable=\"false\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("jobctl_store_commit_queue_wait_seconds_bucket{le=\"0.0025\"} 2\n"), std::string::npos) << out;
  // Changes per commit: count buckets, 600 only under +Inf.
  EXPECT_NE(out.find("jobctl_store_commit_changes_bucket{le=\"2\"} 0\njobctl_store_commit_changes_bucket{le=\"4\"} 1\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("jobctl_store_commit_changes_bucket{le=\"512\"} 1\njobctl_store_commit_changes_bucket{le=\"+Inf\"} 2\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find("jobctl_store_wal_checkpoint_seconds_bucket{le=\"0.025\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("jobctl_store_wal_checkpoint_frames_total 1000\n"), std::string::npos) << out;
}

}  // namespace
}  // namespace jobctl::daemon::http
