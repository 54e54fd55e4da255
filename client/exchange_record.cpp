#include "client/exchange_record.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

namespace jobctl::client {

namespace {

nlohmann::json parsed_or_null(std::string_view text) {
  if (text.empty()) return nullptr;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json(nullptr) : j;
}

// The secrets a body may carry (a registration's worker_secret, a created token, a registry
// login's password, sent or in a lease's registry_credential), kept out of the record: a string
// stays a string, so the record still validates against the schemas.
nlohmann::json without_secrets(nlohmann::json body) {
  if (!body.is_object()) return body;
  for (const char* key : {"worker_secret", "token", "password"})
    if (auto it = body.find(key); it != body.end() && it->is_string()) *it = "(redacted)";
  if (auto it = body.find("registry_credential"); it != body.end()) *it = without_secrets(std::move(*it));
  return body;
}

}  // namespace

void record_exchange(std::string_view method, std::string_view path, std::string_view request_json, long status,
                     std::string_view response_content_type, std::string_view response_body) {
  static const char* const file = std::getenv("JOBCTL_API_RECORD");
  if (file == nullptr || *file == '\0') return;
  const bool json_answer = response_content_type.substr(0, 16) == "application/json";
  const std::string line = nlohmann::json{{"method", method},
                                          {"path", path},
                                          {"status", status},
                                          {"request", without_secrets(parsed_or_null(request_json))},
                                          {"response", json_answer ? without_secrets(parsed_or_null(response_body)) : nullptr}}
                               .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                           "\n";
  const int fd = ::open(file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  [[maybe_unused]] const ssize_t written = ::write(fd, line.data(), line.size());
  ::close(fd);
}

}  // namespace jobctl::client
