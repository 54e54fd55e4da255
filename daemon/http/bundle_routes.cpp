#include "daemon/http/bundle_routes.h"

#include <cstring>
#include <fstream>
#include <sstream>

#include "daemon/auth/secret.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

using nlohmann::json;

namespace {

// Bundles live in their store's one folder (the store's folders are per job; bundles belong to
// no job: folder 0).
constexpr int64_t kBundleFolder = 0;
constexpr char kBundleMagic[8] = {'J', 'C', 'B', 'U', 'N', 'D', 'L', '1'};

bool is_sha256_hex(std::string_view s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

std::string blob_name(std::string_view sha) { return std::string(sha) + ".bundle"; }

void upload(const store::BlobStore& bundles, const net::HttpRequest& req, const net::Responder& respond) {
  auto fail = [&](const Error& e) { respond(net::error_response(e)); };
  if (!req.query.empty())
    return fail(net::unknown_query_parameter(req.query[0].first));
  // Any Content-Type (application/octet-stream is the right one): the body's magic says what it is.
  std::string bytes;
  if (req.body_file) {
    std::ifstream in(req.body_file->path(), std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) return fail(make_error(ErrorCode::io, "cannot read the uploaded bundle"));
    bytes = text.str();
  } else {
    bytes = req.body;
  }
  if (bytes.size() < sizeof kBundleMagic || std::memcmp(bytes.data(), kBundleMagic, sizeof kBundleMagic) != 0)
    return fail(make_error(ErrorCode::invalid_argument, "not a jobctl code bundle (no JCBUNDL1 header)", "body"));
  const std::string sha = auth::sha256_hex(bytes);
  if (sha.empty()) return fail(make_error(ErrorCode::internal, "SHA-256 failed"));
  if (auto st = bundles.write(kBundleFolder, blob_name(sha), bytes); !st) return fail(st.error());
  respond(net::json_response(201, json{{"bundle", sha}, {"bytes", bytes.size()}}));
}

void download(const store::BlobStore& bundles, const net::HttpRequest& req, const net::PathParams& p,
              const net::Responder& respond) {
  const std::string& sha = p.at(0);
  if (!is_sha256_hex(sha))
    return respond(net::error_response(
        make_error(ErrorCode::invalid_argument, "a bundle is named by 64 lowercase hex digits (its SHA-256)", "sha256")));
  (void)req;
  auto got = bundles.read(kBundleFolder, blob_name(sha));
  if (!got) {
    if (got.error().code == ErrorCode::not_found)
      return respond(net::error_response(make_error(ErrorCode::not_found, "no code bundle " + sha, "bundle")));
    return respond(net::error_response(got.error()));
  }
  net::HttpResponse res;
  res.status = 200;
  res.content_type = "application/octet-stream";
  res.body = std::move(*got);
  respond(std::move(res));
}

}  // namespace

bool is_bundle_upload(std::string_view method, std::string_view target) {
  return method == "POST" && target.substr(0, target.find('?')) == "/v1/bundles";
}

void add_bundle_routes(net::Router& r, const store::BlobStore& bundles) {
  r.add("POST", "/v1/bundles",
        [&bundles](const net::HttpRequest& req, const net::PathParams&, net::Responder respond) {
          upload(bundles, req, respond);
        });
  r.add("GET", "/v1/bundles/{sha256}",
        [&bundles](const net::HttpRequest& req, const net::PathParams& p, net::Responder respond) {
          download(bundles, req, p, respond);
        });
}

}  // namespace jobctl::daemon::http
