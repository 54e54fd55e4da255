// A record of the JSON a client exchanges, for checking an end-to-end run's bodies against the
// API's schemas (tests/api checks them against docs/openapi.json). Off unless the environment
// names a file: JOBCTL_API_RECORD=FILE appends one JSON line per answered request,
//   {"method", "path" (query included), "status", "request" (JSON or null), "response" (JSON or null)}
// from every process that inherits it (the CLI, the worker, the tests' own clients). The secrets
// a body carries (a registration's worker_secret, a created token, a registry password sent or
// leased) are recorded as "(redacted)"; still, the bodies are the users' jobs: a test aid, not a log.
//
// Thread safety: any thread; each line is one write(2) to a file opened O_APPEND, so the lines of
// concurrent processes never interleave.
#pragma once

#include <string_view>

namespace jobctl::client {

// Appends the exchange when JOBCTL_API_RECORD is set. `request_json`: the JSON body sent ("" for
// none); `response_body` is recorded when `response_content_type` is JSON. Failures are ignored:
// the record never changes what the request did.
void record_exchange(std::string_view method, std::string_view path, std::string_view request_json, long status,
                     std::string_view response_content_type, std::string_view response_body);

}  // namespace jobctl::client
