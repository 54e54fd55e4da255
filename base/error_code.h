// The kinds of failure, one enum for the whole project: callers branch on them, the HTTP layer
// maps each to one status (net/http_status.h) and writes its name into error
// bodies ({"error":{"code":"not_found",...}}, docs/api.md "Errors"); clients read the name back.
// A compiler warning (-Wswitch) names any kind a mapping forgets.
//
// Thread safety: constants and pure functions. Header-only, standard library only (train/ builds
// alone and uses it).
#pragma once

#include <array>
#include <optional>
#include <ostream>
#include <string_view>
#include <utility>

namespace jobctl {

enum class ErrorCode {
  invalid_argument,        // bad input; the Error's field names it (HTTP 400)
  malformed_json,          // a body or file that is not JSON (400)
  malformed_csv,           // a catalog that is not CSV (400)
  usage,                   // a command line that cannot be run (CLI exit 2)
  unauthenticated,         // no or an unknown token (401)
  permission_denied,       // the token's role or owner may not (403)
  not_found,               // no such job, worker, file, route (404)
  method_not_allowed,      // the route exists, not with this method (405)
  conflict,                // the state forbids it now: cancel a finished job (409)
  stale_epoch,             // a lease report from a lease that is no longer the job's (409)
  payload_too_large,       // a body or upload over its limit (413)
  unsupported_media_type,  // a body that is not application/json (415)
  rate_limited,            // too many requests for this token (429)
  limit_exceeded,          // a per-user limit (429)
  header_too_large,        // request headers over their limit (431)
  unavailable,             // cannot be reached or cannot take it now: retry later (503)
  storage_unavailable,     // the server's own disk or database refused a write: full, read-only (503)
  timeout,                 // an operation outlived its deadline (504)
  cancelled,               // stopped on request (a stopping worker)
  io,                      // a file or device failed
  data,                    // a data set that cannot be read
  corrupt_checkpoint,      // a checkpoint whose header or checksum is wrong
  checkpoint_mismatch,     // a checkpoint of another model or spec
  device_unavailable,      // no GPU, or the GPU failed
  internal,                // a bug or an unexpected failure (500)
};

inline constexpr std::array<std::pair<ErrorCode, std::string_view>, 25> kErrorCodeNames{{
    {ErrorCode::invalid_argument, "invalid_argument"},
    {ErrorCode::malformed_json, "malformed_json"},
    {ErrorCode::malformed_csv, "malformed_csv"},
    {ErrorCode::usage, "usage"},
    {ErrorCode::unauthenticated, "unauthenticated"},
    {ErrorCode::permission_denied, "permission_denied"},
    {ErrorCode::not_found, "not_found"},
    {ErrorCode::method_not_allowed, "method_not_allowed"},
    {ErrorCode::conflict, "conflict"},
    {ErrorCode::stale_epoch, "stale_epoch"},
    {ErrorCode::payload_too_large, "payload_too_large"},
    {ErrorCode::unsupported_media_type, "unsupported_media_type"},
    {ErrorCode::rate_limited, "rate_limited"},
    {ErrorCode::limit_exceeded, "limit_exceeded"},
    {ErrorCode::header_too_large, "header_too_large"},
    {ErrorCode::unavailable, "unavailable"},
    {ErrorCode::storage_unavailable, "storage_unavailable"},
    {ErrorCode::timeout, "timeout"},
    {ErrorCode::cancelled, "cancelled"},
    {ErrorCode::io, "io"},
    {ErrorCode::data, "data"},
    {ErrorCode::corrupt_checkpoint, "corrupt_checkpoint"},
    {ErrorCode::checkpoint_mismatch, "checkpoint_mismatch"},
    {ErrorCode::device_unavailable, "device_unavailable"},
    {ErrorCode::internal, "internal"},
}};

constexpr std::string_view to_string(ErrorCode code) {
  for (const auto& [c, name] : kErrorCodeNames)
    if (c == code) return name;
  return "internal";
}

// The code an error body names; nullopt for a name this build does not know.
constexpr std::optional<ErrorCode> error_code_from_string(std::string_view name) {
  for (const auto& [c, n] : kErrorCodeNames)
    if (n == name) return c;
  return std::nullopt;
}

inline std::ostream& operator<<(std::ostream& os, ErrorCode code) { return os << to_string(code); }

}  // namespace jobctl
