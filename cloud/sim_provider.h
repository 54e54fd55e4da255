// The `sim` driver: the provider interface over jobctl-cloudsim's HTTP API (docs/clouds.md,
// "jobctl-cloudsim API"), through the shared libcurl client (client/http_client.h).
//
// Errors: cloudsim's JSON errors come back as the same Error (code, message, field); a cloudsim
// that cannot be reached is "unavailable".
//
// Thread safety: see provider.h (one thread at a time; owns one HttpClient).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "client/http_client.h"
#include "cloud/provider.h"

namespace jobctl::cloud {

struct SimProviderOptions {
  std::string url = "http://127.0.0.1:8090";  // jobctl-cloudsim's base URL
  long timeout_ms = 10000;
};

class SimProvider final : public Provider {
 public:
  explicit SimProvider(SimProviderOptions options);

  std::string_view kind() const override { return "sim"; }
  Expected<std::vector<cost::Offer>> list_offers() override;
  Expected<Instance> launch(const LaunchRequest& request) override;
  Status terminate(const std::string& instance_id) override;
  Expected<std::vector<Instance>> describe(const std::string& tag) override;
  Expected<std::vector<InterruptionNotice>> interruptions(const std::string& tag,
                                                          int64_t since_ms) override;

  // cloudsim's billing document (GET /billing), for tests and reports.
  Expected<nlohmann::json> billing();

 private:
  Expected<nlohmann::json> call(std::string_view method, const std::string& path,
                                const std::string& body = {});
  SimProviderOptions options_;
  client::HttpClient http_;
};

}  // namespace jobctl::cloud
