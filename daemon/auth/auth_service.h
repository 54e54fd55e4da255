// API tokens (docs/security.md): creating, checking, listing and revoking them.
//
// A token is "jct_" + 64 hex digits (32 random bytes from OpenSSL's RAND_bytes). Only its SHA-256
// is stored (api_tokens.hash), so a copy of the database does not let anyone in; the secret is
// shown once, when created. Checking a token hashes it and looks the hash up; results are cached
// in memory (a revoke through this service drops the cache entry at once).
//
// Roles: admin (everything), user (the user API; only their own jobs), worker (the worker
// protocol only). daemon/http/auth_gate.h decides which role reaches which route.
//
// Ownership: borrows the Store and the Clock. Thread safety: every method is safe from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/clock.h"
#include "base/expected.h"
#include "base/mutex.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::auth {

// What a token may do: admin (everything), user (the user API; only their own jobs), worker (the
// worker protocol only). The stored token's role (records.h), one enum.
using Role = store::TokenRole;
using store::to_string;
// nullopt for a name that is none of them.
inline std::optional<Role> role_from_string(std::string_view name) { return store::parse_token_role(name); }

// Whom a request acts for.
struct Principal {
  int64_t token_id = 0;
  std::string user;
  Role role = Role::user;
  std::string permissions;  // granted beyond the role (TokenRow::permissions)
};

// The permission that lets a user's token submit command jobs (an admin's may always).
inline constexpr const char* kCommandsPermission = "commands";

struct CreatedToken {
  std::string secret;       // shown once
  store::TokenRow row;
};

class TokenService {
 public:
  TokenService(store::Store& store, const Clock& clock) : store_(store), clock_(clock) {}

  static bool valid_role(std::string_view role);
  // user: 1..100 bytes of [A-Za-z0-9._@-]. Errors name `field`.
  static Status check_user(std::string_view user, std::string_view field);
  // SHA-256 of `text`, lowercase hex.
  static std::string sha256_hex(std::string_view text);

  // `permissions`: granted beyond the role; only "commands" exists (invalid_argument naming
  // permissions otherwise).
  Expected<CreatedToken> create(const std::string& user, const std::string& role,
                                const std::vector<std::string>& permissions = {});
  // The principal of a bearer token; code "unauthenticated" when it is unknown or revoked.
  Expected<Principal> authenticate(std::string_view secret);
  Expected<std::vector<store::TokenRow>> list();
  Expected<store::TokenRow> revoke(int64_t id);

 private:
  store::Store& store_;
  const Clock& clock_;
  Mutex mu_;
  std::unordered_map<std::string, Principal> cache_ JOBCTL_GUARDED_BY(mu_);  // hash -> principal (valid tokens only)
};

}  // namespace jobctl::daemon::auth
