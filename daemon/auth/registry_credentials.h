// Each user's logins to container registries (docs/security.md, "Registry credentials"), stored
// by jobctld so that a worker can pull a private image of a job: PUT, GET and DELETE
// /v1/registry-credentials (`jobctl registry login|list|logout`). The password is sealed
// (credential_seal.h) under the data directory's key, bound to its user, registry and username;
// it is opened only for the lease of that user's job whose image is on that registry, and sent in
// that lease's offer alone — never in an answer, an event, a log or a job's spec.
//
// Ownership: borrows the store, the clock and the seal (they must outlive it). Thread safety:
// every method is safe from any thread (the store serialises the writes; the seal locks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "daemon/auth/credential_seal.h"
#include "daemon/jobs/lease_credentials.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::auth {

// What a listing shows of a login: never its password.
struct RegistryLogin {
  std::string registry;
  std::string username;
  int64_t updated_ms = 0;
};

class RegistryCredentials : public jobs::LeaseCredentials {
 public:
  static constexpr size_t kMaxUsernameBytes = 256;
  static constexpr size_t kMaxPasswordBytes = 8192;  // registry tokens (JWTs) run to a few kB
  static constexpr int kMaxPerUser = 64;

  RegistryCredentials(store::Store& store, const Clock& clock, CredentialSeal& seal);

  // Stores (or replaces) `user`'s login to `registry`. Errors name the field: "registry" (not a
  // host[:port]: train::parse_registry_host), "username", "password" (empty, too long, or with
  // control characters); limit_exceeded past kMaxPerUser registries; the seal's and the store's.
  Status put(const std::string& user, const std::string& registry, const std::string& username,
             const std::string& password);
  // `user`'s logins in registry order.
  Expected<std::vector<RegistryLogin>> list(const std::string& user);
  // Deletes `user`'s login to `registry`; not_found when there is none.
  Status remove(const std::string& user, const std::string& registry);

  // jobs::LeaseCredentials: the login of the job's owner to its image's registry, opened.
  Expected<std::optional<protocol::RegistryCredential>> registry_credential_in(store::WriteTxn& txn,
                                                                                const store::JobRow& job,
                                                                                const std::string& owner,
                                                                                int64_t now_ms) override;

 private:
  store::Store& store_;
  const Clock& clock_;
  CredentialSeal& seal_;
};

}  // namespace jobctl::daemon::auth
