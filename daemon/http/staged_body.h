// An upload's bytes as a file in a blob store's incoming folder, for the service that checks and
// adopts it (checkpoints, code bundles, job outputs): the file the HTTP server streamed the body
// to, taken from the request, or, for a request that came through no server (tests, tools), the
// body in memory written there by `stage`.
//
// Thread safety: a function; the request's body file is taken at most once (net::BodyFile::take).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "net/message.h"

namespace jobctl::daemon::http {

struct StagedBody {
  std::string path;    // the caller owns the file from now on (adopts or removes it)
  uint64_t bytes = 0;
};

Expected<StagedBody> staged_body(const net::HttpRequest& req,
                                 const std::function<Expected<std::string>(std::string_view)>& stage);

}  // namespace jobctl::daemon::http
