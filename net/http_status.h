// The HTTP status of each kind of error (base/error_code.h): every error answer of jobctld and
// jobctl-cloudsim (net/json_body.h, error_response). Kept out of base/, which train/ builds with
// and which knows nothing of HTTP. A compiler warning (-Wswitch) names any kind left unmapped.
//
// Thread safety: a pure function.
#pragma once

#include "base/error_code.h"

namespace jobctl::net {

constexpr int http_status_for(ErrorCode code) {
  switch (code) {
    case ErrorCode::invalid_argument:
    case ErrorCode::malformed_json:
    case ErrorCode::malformed_csv:
    case ErrorCode::usage:
    case ErrorCode::data:
    case ErrorCode::corrupt_checkpoint:
    case ErrorCode::checkpoint_mismatch: return 400;
    case ErrorCode::unauthenticated: return 401;
    case ErrorCode::permission_denied: return 403;
    case ErrorCode::not_found: return 404;
    case ErrorCode::method_not_allowed: return 405;
    case ErrorCode::conflict:
    case ErrorCode::stale_epoch: return 409;
    case ErrorCode::payload_too_large: return 413;
    case ErrorCode::unsupported_media_type: return 415;
    case ErrorCode::rate_limited:
    case ErrorCode::limit_exceeded: return 429;
    case ErrorCode::header_too_large: return 431;
    case ErrorCode::unavailable:
    case ErrorCode::storage_unavailable:
    case ErrorCode::device_unavailable: return 503;
    case ErrorCode::timeout: return 504;
    case ErrorCode::cancelled:
    case ErrorCode::io:
    case ErrorCode::internal: return 500;
  }
  return 500;
}

}  // namespace jobctl::net
