#include "daemon/auth/registry_credentials.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "daemon/jobs/job_transition.h"
#include "train/spec/image_reference.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::auth {

namespace {

// What a sealed password is bound to: a copy of it in another user's row, or under another
// registry or username, does not open.
std::string seal_context(const std::string& owner, const std::string& registry, const std::string& username) {
  return "jobctl registry credential\x1f" + owner + "\x1f" + registry + "\x1f" + username;
}

Status check_login_text(const std::string& value, const char* field, size_t max_bytes) {
  if (value.empty()) return make_error(ErrorCode::invalid_argument, std::string(field) + " is required", field);
  if (value.size() > max_bytes)
    return make_error(ErrorCode::invalid_argument,
                      std::string(field) + " must be at most " + std::to_string(max_bytes) + " bytes", field);
  if (std::any_of(value.begin(), value.end(), [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; }))
    return make_error(ErrorCode::invalid_argument, std::string(field) + " must not contain control characters", field);
  return {};
}

// The registry of the job's image; none for a job without one.
std::optional<std::string> image_registry(const train::JobSpec& spec) {
  if (spec.image.empty()) return std::nullopt;
  auto ref = train::parse_image_reference(spec.image);
  if (!ref) return std::nullopt;
  return ref->registry;
}

}  // namespace

RegistryCredentials::RegistryCredentials(store::Store& store, const Clock& clock, CredentialSeal& seal)
    : store_(store), clock_(clock), seal_(seal) {}

Status RegistryCredentials::put(const std::string& user, const std::string& registry, const std::string& username,
                                const std::string& password) {
  auto host = train::parse_registry_host(registry);
  if (!host) return host.error();
  if (auto st = check_login_text(username, "username", kMaxUsernameBytes); !st) return st;
  if (auto st = check_login_text(password, "password", kMaxPasswordBytes); !st) return st;
  auto sealed = seal_.seal(password, seal_context(user, registry, username));
  if (!sealed) return sealed.error();
  store::RegistryCredentialRow row{user, registry, username, std::move(*sealed), clock_.now_ms()};
  return store_.write([&row](store::WriteTxn& txn) -> Status {
    auto existing = txn.registry_credential(row.owner, row.registry);
    if (!existing) return existing.error();
    if (!*existing) {
      auto all = txn.registry_credentials_count(row.owner);
      if (!all) return all.error();
      if (*all >= kMaxPerUser)
        return make_error(ErrorCode::limit_exceeded,
                          "a user may store logins to at most " + std::to_string(kMaxPerUser) + " registries",
                          "registry");
    }
    return txn.put_registry_credential(row);
  });
}

Expected<std::vector<RegistryLogin>> RegistryCredentials::list(const std::string& user) {
  auto rows = store_.registry_credentials(user);
  if (!rows) return rows.error();
  std::vector<RegistryLogin> out;
  for (const auto& r : *rows) out.push_back({r.registry, r.username, r.updated_ms});
  return out;
}

Status RegistryCredentials::remove(const std::string& user, const std::string& registry) {
  auto host = train::parse_registry_host(registry);
  if (!host) return host.error();
  auto deleted = store_.write_value<bool>([&](store::WriteTxn& txn) { return txn.delete_registry_credential(user, registry); });
  if (!deleted) return deleted.error();
  if (!*deleted)
    return make_error(ErrorCode::not_found, "no login to " + registry + " is stored for you", "registry");
  return {};
}

Expected<std::optional<protocol::RegistryCredential>> RegistryCredentials::registry_credential_in(
    store::WriteTxn& txn, const store::JobRow& job, const std::string& owner, int64_t now_ms) {
  const std::optional<std::string> registry = job.spec ? image_registry(*job.spec) : std::nullopt;
  if (!registry) return std::optional<protocol::RegistryCredential>{};
  auto row = txn.registry_credential(owner, *registry);
  if (!row) return row.error();
  if (!*row) return std::optional<protocol::RegistryCredential>{};
  auto password = seal_.unseal((*row)->sealed, seal_context(owner, *registry, (*row)->username));
  if (!password) {
    // The job is leased without it (its pull then fails as for anyone without a login, and says
    // so); the event names what went wrong, never the secret.
    if (auto st = jobs::note_job_event(txn, job.id, "registry_credential_unavailable",
                                       {{"registry", *registry}, {"error", password.error().message}}, now_ms);
        !st)
      return st.error();
    return std::optional<protocol::RegistryCredential>{};
  }
  return std::optional<protocol::RegistryCredential>(
      protocol::RegistryCredential{*registry, (*row)->username, std::move(*password)});
}

}  // namespace jobctl::daemon::auth
