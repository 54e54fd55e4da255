// Sealing secrets jobctld must give back later (a registry password: it is sent to the worker
// that pulls the image), so that the database never holds them in clear: AES-256-GCM (OpenSSL
// EVP) under a 32-byte key kept in a file of its own in the data directory, beside the database
// and not in it (docs/security.md, "Registry credentials"). A copy of the database alone reveals
// no password; a backup of the database without the key file loses every sealed secret.
//
// The key file is created at the first seal, mode 0600, atomically: written whole to a temporary
// file, then linked to its name, so a crash or a second writer never leaves a partial key and an
// existing key is never replaced. Unsealing without the key file is an error; it never makes a
// new key (which could open nothing sealed before).
//
// A sealed value is nonce (12 random bytes) || ciphertext || tag (16 bytes). The caller's
// `context` (who owns it, what it is for) is authenticated with it: a value copied to another
// row does not open there.
//
// Thread safety: every method is safe from any thread (the key is loaded once, under a mutex).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "base/mutex.h"

namespace jobctl::daemon::auth {

class CredentialSeal {
 public:
  explicit CredentialSeal(std::string key_path) : key_path_(std::move(key_path)) {}

  // Errors: io (the key file cannot be created or read, or is not 32 bytes), internal (OpenSSL).
  Expected<std::string> seal(std::string_view plaintext, std::string_view context);
  // Errors: io as seal(), and when the key file is absent; invalid_argument when the value does
  // not open under this key and context (damaged, another key, another row).
  Expected<std::string> unseal(std::string_view sealed, std::string_view context);

  const std::string& key_path() const { return key_path_; }

 private:
  // The key, read from its file or (create) made into it.
  Expected<std::string> key(bool create) JOBCTL_EXCLUDES(mu_);

  const std::string key_path_;
  Mutex mu_;
  std::optional<std::string> key_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::auth
