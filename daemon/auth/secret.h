// Bearer secrets (API tokens, worker secrets; docs/security.md): "<prefix>" + 64 hex digits
// from 32 bytes of OpenSSL's RAND_bytes, stored only as their SHA-256. 256 random bits need no
// salt or slow hash: nothing can be guessed, so a copy of the database lets no one in.
//
// Thread safety: pure functions (RAND_bytes is thread-safe).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "base/expected.h"

namespace jobctl::daemon::auth {

inline constexpr size_t kSecretHexDigits = 64;

// A new secret, "<prefix>" + 64 lowercase hex digits. Error code internal when the system's
// random generator fails.
Expected<std::string> random_secret(std::string_view prefix);
// Whether `text` has the shape of a secret with this prefix (checked before hashing anything).
bool looks_like_secret(std::string_view text, std::string_view prefix);
// SHA-256 of `text`, lowercase hex.
std::string sha256_hex(std::string_view text);
// HMAC-SHA256 of `data` under `key`, lowercase hex ("" only if OpenSSL fails): webhook signatures.
std::string hmac_sha256_hex(std::string_view key, std::string_view data);
// SHA-256 of a file's bytes, lowercase hex, read a piece at a time (a blob is never held whole).
// Errors: "io" when the file cannot be read; "internal" when OpenSSL fails.
Expected<std::string> sha256_file_hex(const std::string& path);

}  // namespace jobctl::daemon::auth
