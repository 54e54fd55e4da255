// The route table jobctld serves, each route with who may call it (daemon/http/route_access.h),
// where its handler runs and where its body goes: listed here in full, so that any change to a
// route's access shows in review. And deny by default: a route that declares no access stops
// the start, and the gate refuses it should one slip through.
#include <gtest/gtest.h>

#include <cctype>
#include <future>
#include <set>
#include <string>

#include "daemon/http/auth_setup.h"
#include "daemon/http/daemon_router.h"
#include "daemon/http/openapi_route.h"
#include "daemon/http/route_access.h"
#include "daemon/placement/placement_matcher.h"
#include "net/json_body.h"
#include "tests/daemon/service_support.h"

namespace jobctl::daemon::http {
namespace {

using jobctl::daemon::testing::ServiceFixture;

// Every service jobctld's routes call, over the fixture's store.
struct AllServices : ServiceFixture {
  AllServices()
      : progress(*store::ProgressHistory::open(dir.path() / "progress", clock)),
        logs(*store::JobLogStore::open(dir.path() / "logs")),
        checkpoint_blobs(dir.file("checkpoints")),
        checkpoints(*db, checkpoint_blobs, clock),
        bundle_blobs(dir.file("bundles")),
        bundles(*db, bundle_blobs, clock, jobs::BundleOptions{}),
        output_blobs(dir.file("outputs")),
        outputs(*db, output_blobs, clock, jobs::OutputOptions{}),
        downloads(2),
        placement(*db, clock, *svc, placement::PlacementSettings{}),
        ledger(*db),
        webhooks(*db, clock, notify::WebhookOptions{}) {}
  net::Router router() {
    return make_daemon_router(RouteServices{*svc, *progress, *logs, checkpoints, bundles, downloads, placement, ledger,
                                            nullptr, &outputs, &webhooks, registry_credentials.get()},
                              ApiInfo{});
  }

  std::unique_ptr<store::ProgressHistory> progress;
  std::unique_ptr<store::JobLogStore> logs;
  store::BlobStore checkpoint_blobs;
  jobs::CheckpointService checkpoints;
  store::BlobStore bundle_blobs;
  jobs::BundleService bundles;
  store::BlobStore output_blobs;
  jobs::OutputService outputs;
  DownloadSlots downloads;
  placement::PlacementService placement;
  ledger::Ledger ledger;
  notify::WebhookService webhooks;
};

TEST(RouteTable, EveryRouteDeclaresWhoMayCallIt) {
  AllServices s;
  net::Router router = s.router();
  auth::SecurityOptions options;
  options.auth.enabled = true;
  auto installed = install_hardening(router, *s.svc, *s.db, s.clock, options);  // the operator routes
  ASSERT_TRUE(installed) << installed.error().message;
  // METHOD PATTERN ACCESS [job={the job a user token must own}] [worker={the worker acted for}]
  // DISPATCH BODY
  EXPECT_EQ(route_listing(router),
            "GET /healthz anyone pool memory\n"
            "POST /v1/jobs user io memory\n"
            "GET /v1/jobs user pool memory\n"
            "POST /v1/arrays user io memory\n"
            "POST /v1/arrays/{id}/cancel user pool memory\n"
            "GET /v1/jobs/{id} user job={id} pool memory\n"
            "POST /v1/jobs/{id}/cancel user job={id} pool memory\n"
            "POST /v1/jobs/{id}/move user job={id} pool memory\n"
            "POST /v1/workers/register new_worker pool memory\n"
            "GET /v1/workers user pool memory\n"
            "POST /v1/workers/{id}/lease worker worker={id} pool memory\n"
            "POST /v1/jobs/{id}/heartbeat worker io memory\n"
            "POST /v1/jobs/{id}/complete worker pool memory\n"
            "POST /v1/jobs/{id}/fail worker pool memory\n"
            "POST /v1/jobs/{id}/preempt worker pool memory\n"
            "POST /v1/jobs/{id}/image worker pool memory\n"
            "GET /v1/jobs/{id}/progress user job={id} pool memory\n"
            "GET /v1/jobs/{id}/log user job={id} pool memory\n"
            "GET /v1/jobs/{id}/log/download user job={id} pool memory\n"
            "PUT /v1/jobs/{id}/checkpoints/{step} worker pool file\n"
            "GET /v1/jobs/{id}/checkpoints checkpoint_reader job={id} pool memory\n"
            "GET /v1/jobs/{id}/checkpoints/{step} checkpoint_reader job={id} pool memory\n"
            "POST /v1/jobs/{id}/checkpoints/{step}/reject worker pool memory\n"
            "POST /v1/bundles user pool file<=4294967296\n"
            "GET /v1/bundles/{sha256} any_token pool memory\n"
            "PUT /v1/jobs/{id}/outputs worker pool file<=1073741824\n"
            "GET /v1/jobs/{id}/outputs checkpoint_reader job={id} pool memory\n"
            "GET /v1/jobs/{id}/outputs/file checkpoint_reader job={id} pool memory\n"
            "POST /v1/quote user pool memory\n"
            "GET /v1/reports/spend user pool memory\n"
            "GET /v1/reports/breakeven user pool memory\n"
            "GET /v1/reports/plan admin pool memory\n"
            "GET /v1/catalog user pool memory\n"
            "GET /v1/fair-share user pool memory\n"
            "POST /v1/tasks/resolve user pool memory\n"
            "GET /v1/instances user pool memory\n"
            "POST /v1/webhooks user pool memory\n"
            "GET /v1/webhooks user pool memory\n"
            "POST /v1/webhooks/{id}/delete user pool memory\n"
            "GET /v1/webhooks/{id}/deliveries user pool memory\n"
            "PUT /v1/registry-credentials/{registry} user pool memory<=32768\n"
            "GET /v1/registry-credentials user pool memory\n"
            "DELETE /v1/registry-credentials/{registry} user pool memory\n"
            "GET /v1/openapi.json anyone pool memory\n"
            "POST /v1/tokens admin pool memory\n"
            "GET /v1/tokens admin pool memory\n"
            "POST /v1/tokens/{id}/revoke admin pool memory\n"
            "GET /v1/auth/whoami any_token pool memory\n"
            "GET /metrics metrics pool memory\n");
}

// docs/openapi.json describes the route table jobctld serves, route for route: the set of
// (method, path template) read from the router itself equals the document's paths and methods.
TEST(RouteTable, TheOpenApiDocumentDescribesEveryRouteAndNoOther) {
  AllServices s;
  net::Router router = s.router();
  auth::SecurityOptions options;
  options.auth.enabled = true;
  auto installed = install_hardening(router, *s.svc, *s.db, s.clock, options);
  ASSERT_TRUE(installed) << installed.error().message;
  std::set<std::string> served;
  for (const net::RouteSpec* r : router.routes()) served.insert(r->method + " " + r->pattern);

  const nlohmann::json doc = nlohmann::json::parse(openapi_document(), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << "the embedded docs/openapi.json is not JSON";
  EXPECT_EQ(doc.value("openapi", ""), "3.1.0");
  const std::set<std::string> methods = {"get", "put", "post", "delete", "patch", "head", "options", "trace"};
  std::set<std::string> described;
  for (const auto& [path, item] : doc.at("paths").items())
    for (const auto& [key, operation] : item.items())
      if (methods.count(key) != 0) {
        std::string method = key;
        for (char& c : method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        described.insert(method + " " + path);
      }
  for (const std::string& r : served) EXPECT_EQ(described.count(r), 1u) << r << " is served but docs/openapi.json lacks it";
  for (const std::string& d : described)
    EXPECT_EQ(served.count(d), 1u) << d << " is in docs/openapi.json but jobctld serves no such route";
}

TEST(RouteTable, TheOpenApiDocumentIsServedAsBuilt) {
  AllServices s;
  net::Router router = s.router();
  net::HttpRequest req;
  req.method = "GET";
  req.target = req.path = "/v1/openapi.json";
  std::promise<net::HttpResponse> answered;
  router.handle(req, [&answered](net::HttpResponse r) { answered.set_value(std::move(r)); });
  const net::HttpResponse answer = answered.get_future().get();
  EXPECT_EQ(answer.status, 200);
  EXPECT_EQ(answer.content_type, "application/json");
  EXPECT_EQ(answer.body, openapi_document());
}

net::Handler answers_ok() {
  return [](const net::HttpRequest&, const net::PathParams&, net::Responder respond) {
    respond(net::json_response(200, nlohmann::json::object()));
  };
}

TEST(RouteTable, ARouteWithoutDeclaredAccessStopsTheStart) {
  ServiceFixture f;
  net::Router router = make_api_router(*f.svc);
  router.add("POST", "/v1/workers/{id}/drain", answers_ok());  // no access declared
  auto installed = install_hardening(router, *f.svc, *f.db, f.clock, auth::SecurityOptions{});
  ASSERT_FALSE(installed) << "a route without declared access must stop the start";
  EXPECT_EQ(installed.error().code, ErrorCode::internal);
  EXPECT_EQ(installed.error().field, "POST /v1/workers/{id}/drain");
  EXPECT_NE(installed.error().message.find("declares no access"), std::string::npos) << installed.error().message;

  // Should one be served anyway, the gate refuses it: nobody may call an undeclared route.
  net::HttpRequest req;
  req.method = "POST";
  req.target = req.path = "/v1/workers/1/drain";
  std::promise<net::HttpResponse> answered;
  router.handle(req, [&answered](net::HttpResponse r) { answered.set_value(std::move(r)); });
  EXPECT_EQ(answered.get_future().get().status, 403);
}

TEST(RouteTable, ADeclaredPlaceholderMustBeThePatterns) {
  ServiceFixture f;
  net::Router router = make_api_router(*f.svc);
  router.add(route("GET", "/v1/jobs/{job}/notes", {Access::user, "id"}, answers_ok()));
  auto installed = install_hardening(router, *f.svc, *f.db, f.clock, auth::SecurityOptions{});
  ASSERT_FALSE(installed);
  EXPECT_EQ(installed.error().field, "GET /v1/jobs/{job}/notes");
}

TEST(RouteTable, PlaceholdersAreFoundByName) {
  EXPECT_EQ(placeholder_index("/v1/jobs/{id}/checkpoints/{step}", "id"), 0u);
  EXPECT_EQ(placeholder_index("/v1/jobs/{id}/checkpoints/{step}", "step"), 1u);
  EXPECT_EQ(placeholder_index("/v1/jobs/{id}", "step"), std::nullopt);
  EXPECT_EQ(placeholder_index("/healthz", "id"), std::nullopt);
}

}  // namespace
}  // namespace jobctl::daemon::http
