// Serves the web dashboard (web/ in the source tree; docs/dashboard.md) as static files from one
// folder, the "web root": GET and HEAD only, content types from the file extension, a strong
// ETag (CRC32C of the content) with `If-None-Match` -> 304, and `Cache-Control: no-cache` so a
// browser always revalidates (a 304 costs a few bytes) and never runs a stale dashboard after an
// upgrade. No directory listings, no dot-files, and no path ever leaves the root: `..` segments
// are refused and the resolved path (symlinks followed) must lie inside the root.
//
// It is the router's fallback (Router::set_fallback): it only sees paths that no API route
// matched. Paths under /v1/ (and every method but GET/HEAD) keep the API's JSON 404, so an
// unknown API path answers exactly as it did before the dashboard existed.
//
// Ownership: owns its copy of the root path. Thread safety: serve() is const and reads files
// afresh on each request (no cache), so it is safe from any thread and picks up rebuilt files.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "net/message.h"
#include "net/router.h"

namespace jobctl::daemon::http {

// The Content-Type for a file name, from its extension ("application/octet-stream" if unknown).
std::string_view content_type_for(std::string_view filename);

// Where the dashboard's files are, in this order: `configured` (config `web.root` or
// --web-root; used as given, even if absent, so a typo is reported rather than silently
// ignored), then `<exe_dir>/web` (an installed or built tree: the build copies web/ there), then
// `<exe_dir>/../web` and `<exe_dir>/../share/jobctl/web` (an install prefix). nullopt when
// none holds an index.html.
std::optional<std::filesystem::path> find_web_root(const std::string& configured,
                                                   const std::filesystem::path& exe_dir);

class StaticFiles {
 public:
  explicit StaticFiles(std::filesystem::path root);

  // Answers one request: the file, 304, or a JSON error (404 not_found for anything that is
  // not a servable file; 405 for a method other than GET/HEAD on a file).
  net::HttpResponse serve(const net::HttpRequest& request) const;

  // The router fallback that calls serve() for non-API paths and answers the API's 404 for the
  // rest.
  net::Handler as_fallback() const;

  const std::filesystem::path& root() const { return root_; }

 private:
  std::filesystem::path root_;  // canonical
};

// The API's own answer for a path no route matches (docs/api.md): 404 not_found, JSON.
net::HttpResponse api_not_found(const net::HttpRequest& request);

}  // namespace jobctl::daemon::http
