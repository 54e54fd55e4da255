#include "daemon/auth/credential_seal.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>

namespace jobctl::daemon::auth {

namespace {

constexpr size_t kKeyBytes = 32;
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;

Error io_error(const std::string& what, int err) {
  return make_error(ErrorCode::io, what + ": " + std::strerror(err), "data_dir");
}

using CipherCtx = std::unique_ptr<EVP_CIPHER_CTX, decltype(&EVP_CIPHER_CTX_free)>;

const unsigned char* bytes_of(std::string_view s) { return reinterpret_cast<const unsigned char*>(s.data()); }

// The whole file, which must be the 32 bytes of a key.
Expected<std::optional<std::string>> read_key(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::optional<std::string>{};
    return io_error("cannot read the registry credentials' key " + path, errno);
  }
  std::string key(kKeyBytes + 1, '\0');
  size_t got = 0;
  while (got < key.size()) {
    const ssize_t n = ::read(fd, key.data() + got, key.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return io_error("cannot read the registry credentials' key " + path, err);
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  if (got != kKeyBytes)
    return make_error(ErrorCode::io, "the registry credentials' key " + path + " is not " + std::to_string(kKeyBytes) +
                                         " bytes (damaged?); restore it from the backup taken with the database",
                      "data_dir");
  key.resize(kKeyBytes);
  return std::optional<std::string>(std::move(key));
}

// A new key written to `path`: to a temporary file first (0600, fsynced), then linked to its
// name, which fails if a key is already there (then that one is read).
Expected<std::string> create_key(const std::string& path) {
  std::string key(kKeyBytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(key.data()), static_cast<int>(key.size())) != 1)
    return make_error(ErrorCode::internal, "the system's random generator failed");
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("cannot create " + tmp, errno);
  const bool written = ::write(fd, key.data(), key.size()) == static_cast<ssize_t>(key.size()) && ::fsync(fd) == 0;
  const int write_err = errno;
  ::close(fd);
  if (!written) {
    ::unlink(tmp.c_str());
    return io_error("cannot write " + tmp, write_err);
  }
  const bool linked = ::link(tmp.c_str(), path.c_str()) == 0;
  const int link_err = errno;
  ::unlink(tmp.c_str());
  if (!linked) {
    if (link_err != EEXIST) return io_error("cannot create the registry credentials' key " + path, link_err);
    auto existing = read_key(path);
    if (!existing) return existing.error();
    if (!*existing) return io_error("cannot read the registry credentials' key " + path, ENOENT);
    return std::move(**existing);
  }
  // The new name durable too: the folder's entry.
  const std::string dir = path.substr(0, path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/'));
  if (const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return key;
}

}  // namespace

Expected<std::string> CredentialSeal::key(bool create) {
  MutexLock lock(mu_);
  if (key_) return *key_;
  auto read = read_key(key_path_);
  if (!read) return read.error();
  if (*read) {
    key_ = std::move(**read);
    return *key_;
  }
  if (!create)
    return make_error(ErrorCode::io,
                      "the registry credentials' key " + key_path_ +
                          " is missing: the stored credentials cannot be opened (restore the key with the database, "
                          "or log in to the registries again)",
                      "data_dir");
  auto made = create_key(key_path_);
  if (!made) return made.error();
  key_ = std::move(*made);
  return *key_;
}

Expected<std::string> CredentialSeal::seal(std::string_view plaintext, std::string_view context) {
  auto k = key(/*create=*/true);
  if (!k) return k.error();
  std::string out(kNonceBytes + plaintext.size() + kTagBytes, '\0');
  auto* nonce = reinterpret_cast<unsigned char*>(out.data());
  if (RAND_bytes(nonce, static_cast<int>(kNonceBytes)) != 1)
    return make_error(ErrorCode::internal, "the system's random generator failed");
  CipherCtx ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  int n = 0;
  bool ok = ctx && EVP_EncryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, bytes_of(*k), nonce) == 1 &&
            EVP_EncryptUpdate(ctx.get(), nullptr, &n, bytes_of(context), static_cast<int>(context.size())) == 1;
  auto* cipher = nonce + kNonceBytes;
  ok = ok && EVP_EncryptUpdate(ctx.get(), cipher, &n, bytes_of(plaintext), static_cast<int>(plaintext.size())) == 1;
  int tail = 0;
  ok = ok && EVP_EncryptFinal_ex(ctx.get(), cipher + n, &tail) == 1 &&
       EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_GET_TAG, static_cast<int>(kTagBytes), cipher + plaintext.size()) == 1;
  if (!ok) return make_error(ErrorCode::internal, "AES-256-GCM sealing failed");
  return out;
}

Expected<std::string> CredentialSeal::unseal(std::string_view sealed, std::string_view context) {
  if (sealed.size() < kNonceBytes + kTagBytes)
    return make_error(ErrorCode::invalid_argument, "a sealed value is shorter than its nonce and tag");
  auto k = key(/*create=*/false);
  if (!k) return k.error();
  const std::string_view nonce = sealed.substr(0, kNonceBytes);
  const std::string_view cipher = sealed.substr(kNonceBytes, sealed.size() - kNonceBytes - kTagBytes);
  std::string tag(sealed.substr(sealed.size() - kTagBytes));
  std::string out(cipher.size(), '\0');
  CipherCtx ctx(EVP_CIPHER_CTX_new(), &EVP_CIPHER_CTX_free);
  int n = 0;
  bool ok = ctx && EVP_DecryptInit_ex(ctx.get(), EVP_aes_256_gcm(), nullptr, bytes_of(*k), bytes_of(nonce)) == 1 &&
            EVP_DecryptUpdate(ctx.get(), nullptr, &n, bytes_of(context), static_cast<int>(context.size())) == 1 &&
            EVP_DecryptUpdate(ctx.get(), reinterpret_cast<unsigned char*>(out.data()), &n, bytes_of(cipher),
                              static_cast<int>(cipher.size())) == 1 &&
            EVP_CIPHER_CTX_ctrl(ctx.get(), EVP_CTRL_GCM_SET_TAG, static_cast<int>(kTagBytes), tag.data()) == 1;
  int tail = 0;
  // The tag is checked here: a changed byte, another key or another context fails.
  if (!ok || EVP_DecryptFinal_ex(ctx.get(), reinterpret_cast<unsigned char*>(out.data()) + n, &tail) != 1)
    return make_error(ErrorCode::invalid_argument,
                      "a sealed credential does not open under the key " + key_path_ + " (damaged, or another key)");
  return out;
}

}  // namespace jobctl::daemon::auth
