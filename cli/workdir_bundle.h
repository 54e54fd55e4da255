// A command job's code: a folder packed into a code bundle (bundle/code_bundle.h) and stored by
// POST /v1/bundles; the spec then names it by its SHA-256. `jobctl submit --workdir` and `jobctl
// launch` both send their folder through here.
//
// Thread safety: a function over the given client (not thread-safe, as ApiClient is not).
#pragma once

#include <cstdint>
#include <string>

#include "base/expected.h"
#include "bundle/code_bundle.h"
#include "client/api_client.h"

namespace jobctl::cli {

struct PackedWorkdir {
  std::string bytes;      // the bundle
  bundle::BundleStats stats;
};

// Packs `dir` (without .git), at most `limit_bytes` of files.
Expected<PackedWorkdir> pack_workdir(const std::string& dir, uint64_t limit_bytes);
// Stores a packed bundle; returns its SHA-256, the spec's `bundle`.
Expected<std::string> upload_bundle(client::ApiClient& api, const PackedWorkdir& packed);
// "packed DIR: N files, B bytes, bundle Z bytes": what the user is told.
std::string packed_summary(const std::string& dir, const PackedWorkdir& packed);

}  // namespace jobctl::cli
