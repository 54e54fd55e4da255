#include "daemon/auth/auth_service.h"

#include "daemon/auth/secret.h"

namespace jobctl::daemon::auth {

namespace {

constexpr std::string_view kTokenPrefix = "jct_";

Error unauthenticated() {
  return make_error(ErrorCode::unauthenticated, "the API token is not valid (unknown or revoked)", "Authorization");
}

}  // namespace

bool TokenService::valid_role(std::string_view role) { return role_from_string(role).has_value(); }

Status TokenService::check_user(std::string_view user, std::string_view field) {
  if (user.empty() || user.size() > 100)
    return make_error(ErrorCode::invalid_argument, std::string(field) + " must be 1 to 100 characters", std::string(field));
  for (char c : user) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '@' || c == '-';
    if (!ok)
      return make_error(ErrorCode::invalid_argument,
                        std::string(field) + " may contain only letters, digits and . _ @ -",
                        std::string(field));
  }
  return {};
}

std::string TokenService::sha256_hex(std::string_view text) { return auth::sha256_hex(text); }

Expected<CreatedToken> TokenService::create(const std::string& user, const std::string& role,
                                            const std::vector<std::string>& permissions) {
  if (auto st = check_user(user, "user"); !st) return st.error();
  std::string granted;
  for (const auto& p : permissions) {
    if (p != kCommandsPermission)
      return make_error(ErrorCode::invalid_argument,
                        "unknown permission '" + p.substr(0, 40) + "' (known: " + kCommandsPermission + ")", "permissions");
    if (granted.empty()) granted = p;
  }
  if (!valid_role(role))
    return make_error(ErrorCode::invalid_argument, "role must be admin, user or worker (got '" + role.substr(0, 40) + "')", "role");
  auto secret = random_secret(kTokenPrefix);
  if (!secret) return secret.error();
  CreatedToken out;
  out.secret = std::move(*secret);
  out.row.user = user;
  out.row.role = *store::parse_token_role(role);
  out.row.permissions = granted;
  out.row.hash_hex = sha256_hex(out.secret);
  out.row.prefix = out.secret.substr(0, kTokenPrefix.size() + 6);
  out.row.created_ms = clock_.now_ms();
  if (out.row.hash_hex.empty()) return make_error(ErrorCode::internal, "SHA-256 failed");
  auto id = store_.insert_token(out.row);
  if (!id) return id.error();
  out.row.id = *id;
  return out;
}

Expected<Principal> TokenService::authenticate(std::string_view secret) {
  if (!looks_like_secret(secret, kTokenPrefix)) return unauthenticated();
  const std::string hash = sha256_hex(secret);
  {
    MutexLock lock(mu_);
    if (auto it = cache_.find(hash); it != cache_.end()) return it->second;
  }
  auto row = store_.token_by_hash(hash);
  if (!row) return row.error();
  if (!*row || (*row)->revoked_ms) return unauthenticated();
  Principal p{(*row)->id, (*row)->user, (*row)->role, (*row)->permissions};
  MutexLock lock(mu_);
  if (cache_.size() > 100000) cache_.clear();  // bounded: tokens are few; this is a safety valve
  cache_[hash] = p;
  return p;
}

Expected<std::vector<store::TokenRow>> TokenService::list() { return store_.list_tokens(); }

Expected<store::TokenRow> TokenService::revoke(int64_t id) {
  auto row = store_.revoke_token(id, clock_.now_ms());
  if (!row) return row.error();
  if (!*row) return make_error(ErrorCode::not_found, "token " + std::to_string(id) + " does not exist", "id");
  MutexLock lock(mu_);
  cache_.erase((*row)->hash_hex);
  return **row;
}

}  // namespace jobctl::daemon::auth
