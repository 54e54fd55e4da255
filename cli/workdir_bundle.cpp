#include "cli/workdir_bundle.h"

#include <nlohmann/json.hpp>

namespace jobctl::cli {

Expected<PackedWorkdir> pack_workdir(const std::string& dir, uint64_t limit_bytes) {
  PackedWorkdir packed;
  auto bytes = bundle::pack_directory(dir, limit_bytes, &packed.stats);
  if (!bytes) return bytes.error();
  packed.bytes = std::move(*bytes);
  return packed;
}

Expected<std::string> upload_bundle(client::ApiClient& api, const PackedWorkdir& packed) {
  auto r = api.http().request("POST", "/v1/bundles", packed.bytes, 0, {"Content-Type: application/octet-stream"});
  if (!r) return r.error();
  auto answer = client::json_from_response(*r);
  if (!answer) return answer.error();
  return answer->value("bundle", "");
}

std::string packed_summary(const std::string& dir, const PackedWorkdir& packed) {
  return "packed " + dir + ": " + std::to_string(packed.stats.files) + " files, " +
         std::to_string(packed.stats.file_bytes) + " bytes, bundle " + std::to_string(packed.stats.bundle_bytes) +
         " bytes";
}

}  // namespace jobctl::cli
