#include "daemon/auth/auth_service.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>

namespace jobctl::daemon::auth {

namespace {

constexpr std::string_view kPrefix = "jct_";
constexpr size_t kSecretBytes = 32;

std::string to_hex(const unsigned char* p, size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[p[i] >> 4]);
    out.push_back(kDigits[p[i] & 15]);
  }
  return out;
}

Error unauthenticated() {
  return make_error(ErrorCode::unauthenticated, "the API token is not valid (unknown or revoked)", "Authorization");
}

}  // namespace

bool TokenService::valid_role(std::string_view role) {
  return role == "admin" || role == "user" || role == "worker";
}

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

std::string TokenService::sha256_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), md.data(), &len, EVP_sha256(), nullptr) != 1) return {};
  return to_hex(md.data(), len);
}

Expected<CreatedToken> TokenService::create(const std::string& user, const std::string& role) {
  if (auto st = check_user(user, "user"); !st) return st.error();
  if (!valid_role(role))
    return make_error(ErrorCode::invalid_argument, "role must be admin, user or worker (got '" + role.substr(0, 40) + "')", "role");
  std::array<unsigned char, kSecretBytes> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    return make_error(ErrorCode::internal, "the system random generator failed");
  CreatedToken out;
  out.secret = std::string(kPrefix) + to_hex(bytes.data(), bytes.size());
  out.row.user = user;
  out.row.role = role;
  out.row.hash_hex = sha256_hex(out.secret);
  out.row.prefix = out.secret.substr(0, kPrefix.size() + 6);
  out.row.created_ms = clock_.now_ms();
  if (out.row.hash_hex.empty()) return make_error(ErrorCode::internal, "SHA-256 failed");
  auto id = store_.insert_token(out.row);
  if (!id) return id.error();
  out.row.id = *id;
  return out;
}

Expected<Principal> TokenService::authenticate(std::string_view secret) {
  if (secret.size() != kPrefix.size() + 2 * kSecretBytes || secret.substr(0, kPrefix.size()) != kPrefix)
    return unauthenticated();
  const std::string hash = sha256_hex(secret);
  {
    MutexLock lock(mu_);
    if (auto it = cache_.find(hash); it != cache_.end()) return it->second;
  }
  auto row = store_.token_by_hash(hash);
  if (!row) return row.error();
  if (!*row || (*row)->revoked_ms) return unauthenticated();
  Principal p{(*row)->id, (*row)->user, (*row)->role};
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
