#include "daemon/auth/secret.h"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>

namespace jobctl::daemon::auth {

namespace {

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

}  // namespace

Expected<std::string> random_secret(std::string_view prefix) {
  std::array<unsigned char, kSecretHexDigits / 2> bytes{};
  if (RAND_bytes(bytes.data(), static_cast<int>(bytes.size())) != 1)
    return make_error(ErrorCode::internal, "the system random generator failed");
  return std::string(prefix) + to_hex(bytes.data(), bytes.size());
}

bool looks_like_secret(std::string_view text, std::string_view prefix) {
  return text.size() == prefix.size() + kSecretHexDigits && text.substr(0, prefix.size()) == prefix;
}

std::string sha256_hex(std::string_view text) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (EVP_Digest(text.data(), text.size(), md.data(), &len, EVP_sha256(), nullptr) != 1) return {};
  return to_hex(md.data(), len);
}

}  // namespace jobctl::daemon::auth
