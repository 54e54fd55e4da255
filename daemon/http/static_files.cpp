#include "daemon/http/static_files.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <system_error>

#include "base/crc32c.h"
#include "net/json_body.h"

namespace jobctl::daemon::http {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxFileBytes = 32u << 20;  // the dashboard's largest file is a few hundred KiB
// Scripts, styles and API calls from the dashboard's own origin only (no inline script or style:
// the dashboard has none), and no framing by any page.
constexpr const char* kContentSecurityPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

bool is_api_path(std::string_view path) {
  return path == "/v1" || path.rfind("/v1/", 0) == 0 || path == "/healthz" || path == "/metrics";
}

net::HttpResponse not_found(const std::string& path) {
  return net::error_response(make_error(ErrorCode::not_found, "no such endpoint: " + path));
}

// The request path as a relative path inside the root, or nullopt when it could leave the root or
// names something never served (dot-files, backslashes, NUL, empty or "." / ".." segments).
std::optional<fs::path> relative_file(std::string_view path) {
  if (path.empty() || path.front() != '/') return std::nullopt;
  if (path == "/") return fs::path("index.html");
  fs::path rel;
  size_t i = 1;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string_view::npos) j = path.size();
    const std::string_view seg = path.substr(i, j - i);
    if (seg.empty()) {
      if (j == path.size()) return std::nullopt;  // a trailing slash: a directory, never listed
      return std::nullopt;                        // "//": refuse rather than normalise
    }
    if (seg.front() == '.') return std::nullopt;  // ".", "..", ".git", ".env"
    for (char c : seg)
      if (c == '\\' || c == '\0' || c == ':') return std::nullopt;
    rel /= std::string(seg);
    i = j + 1;
  }
  return rel;
}

std::string etag_for(const std::string& content) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "\"%08x-%zx\"", crc32c::value(content.data(), content.size()),
                content.size());
  return buf;
}

// True when an If-None-Match header value lists `etag` (or is "*"); weak tags compare equal.
bool etag_matches(std::string_view header, std::string_view etag) {
  if (header.empty()) return false;
  size_t i = 0;
  while (i < header.size()) {
    while (i < header.size() && (header[i] == ' ' || header[i] == ',')) ++i;
    size_t j = header.find(',', i);
    if (j == std::string_view::npos) j = header.size();
    std::string_view tag = header.substr(i, j - i);
    while (!tag.empty() && tag.back() == ' ') tag.remove_suffix(1);
    if (tag.rfind("W/", 0) == 0) tag.remove_prefix(2);
    if (tag == "*" || tag == etag) return true;
    i = j + 1;
  }
  return false;
}

}  // namespace

std::string_view content_type_for(std::string_view filename) {
  const size_t dot = filename.rfind('.');
  const std::string_view ext = dot == std::string_view::npos ? std::string_view() : filename.substr(dot + 1);
  if (ext == "html" || ext == "htm") return "text/html; charset=utf-8";
  if (ext == "js" || ext == "mjs") return "text/javascript; charset=utf-8";
  if (ext == "css") return "text/css; charset=utf-8";
  if (ext == "json" || ext == "map") return "application/json";
  if (ext == "webmanifest") return "application/manifest+json";
  if (ext == "svg") return "image/svg+xml";
  if (ext == "png") return "image/png";
  if (ext == "ico") return "image/x-icon";
  if (ext == "txt" || ext == "md") return "text/plain; charset=utf-8";
  if (ext == "woff2") return "font/woff2";
  return "application/octet-stream";
}

std::optional<fs::path> find_web_root(const std::string& configured, const fs::path& exe_dir) {
  if (!configured.empty()) return fs::path(configured);
  std::error_code ec;
  for (const fs::path& candidate : {exe_dir / "web", exe_dir / ".." / "web",
                                    exe_dir / ".." / "share" / "jobctl" / "web"}) {
    if (fs::is_regular_file(candidate / "index.html", ec)) return fs::weakly_canonical(candidate, ec);
  }
  return std::nullopt;
}

StaticFiles::StaticFiles(fs::path root) {
  std::error_code ec;
  root_ = fs::weakly_canonical(root, ec);
  if (ec) root_ = std::move(root);
}

net::HttpResponse StaticFiles::serve(const net::HttpRequest& request) const {
  const auto rel = relative_file(request.path);
  if (!rel) return not_found(request.path);
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(root_ / *rel, ec);
  if (ec) return not_found(request.path);
  // Symlinks are followed, but the target must still lie inside the root.
  auto [root_end, unused] = std::mismatch(root_.begin(), root_.end(), resolved.begin(), resolved.end());
  (void)unused;
  if (root_end != root_.end() || !fs::is_regular_file(resolved, ec)) return not_found(request.path);

  if (request.method != "GET" && request.method != "HEAD") {
    net::HttpResponse res = net::error_response(make_error(
        ErrorCode::method_not_allowed, request.method + " is not allowed on " + request.path + " (allowed: GET, HEAD)"));
    res.headers.emplace_back("Allow", "GET, HEAD");
    return res;
  }
  const auto size = fs::file_size(resolved, ec);
  if (ec || size > kMaxFileBytes) return not_found(request.path);
  std::ifstream in(resolved, std::ios::binary);
  if (!in) return not_found(request.path);
  std::string content(static_cast<size_t>(size), '\0');
  in.read(content.data(), static_cast<std::streamsize>(content.size()));
  if (in.gcount() != static_cast<std::streamsize>(content.size())) return not_found(request.path);

  net::HttpResponse res;
  const std::string etag = etag_for(content);
  res.headers.emplace_back("ETag", etag);
  res.headers.emplace_back("Cache-Control", "no-cache");
  res.headers.emplace_back("X-Content-Type-Options", "nosniff");
  // The dashboard loads only its own files and talks only to its own origin; no other site may
  // frame it (clickjacking its buttons) or learn its URLs from a Referer.
  res.headers.emplace_back("Content-Security-Policy", kContentSecurityPolicy);
  res.headers.emplace_back("X-Frame-Options", "DENY");
  res.headers.emplace_back("Referrer-Policy", "no-referrer");
  if (etag_matches(request.header_or_empty("If-None-Match"), etag)) {
    res.status = 304;
    res.content_type.clear();
    return res;
  }
  res.status = 200;
  res.content_type = std::string(content_type_for(resolved.filename().string()));
  if (request.method == "GET") res.body = std::move(content);
  return res;
}

net::Handler StaticFiles::as_fallback() const {
  return [this](const net::HttpRequest& request, const net::PathParams&, net::Responder respond) {
    if (is_api_path(request.path)) return respond(api_not_found(request));
    respond(serve(request));
  };
}

net::HttpResponse api_not_found(const net::HttpRequest& request) { return not_found(request.path); }

}  // namespace jobctl::daemon::http
