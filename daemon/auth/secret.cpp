#include "daemon/auth/secret.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

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

std::string hmac_sha256_hex(std::string_view key, std::string_view data) {
  std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
  unsigned int len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
           data.size(), mac.data(), &len) == nullptr)
    return {};
  return to_hex(mac.data(), len);
}

Expected<std::string> sha256_file_hex(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::io, "cannot open " + path + ": " + std::strerror(errno));
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  bool ok = ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) == 1;
  std::vector<char> buf(1 << 16);
  int read_error = 0;
  while (ok) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      read_error = errno;
      break;
    }
    if (n == 0) break;
    ok = EVP_DigestUpdate(ctx.get(), buf.data(), static_cast<size_t>(n)) == 1;
  }
  ::close(fd);
  if (read_error != 0) return make_error(ErrorCode::io, "cannot read " + path + ": " + std::strerror(read_error));
  std::array<unsigned char, EVP_MAX_MD_SIZE> md{};
  unsigned int len = 0;
  if (!ok || EVP_DigestFinal_ex(ctx.get(), md.data(), &len) != 1) return make_error(ErrorCode::internal, "SHA-256 failed");
  return to_hex(md.data(), len);
}

}  // namespace jobctl::daemon::auth
