#include "daemon/auth/worker_credentials.h"

#include "daemon/auth/secret.h"

namespace jobctl::daemon::auth {

namespace {

constexpr std::string_view kWorkerSecretPrefix = "jcw_";

Error refused(const std::string& why) {
  return make_error(ErrorCode::permission_denied,
                    why + ": every call of the worker protocol must carry the worker's own secret in "
                          "X-Worker-Secret (returned once by POST /v1/workers/register)",
                    "X-Worker-Secret");
}

}  // namespace

Expected<WorkerSecret> WorkerCredentials::issue() {
  auto secret = random_secret(kWorkerSecretPrefix);
  if (!secret) return secret.error();
  WorkerSecret out{std::move(*secret), {}};
  out.hash_hex = sha256_hex(out.secret);
  if (out.hash_hex.empty()) return make_error(ErrorCode::internal, "SHA-256 failed");
  return out;
}

Expected<int64_t> WorkerCredentials::authenticate(std::string_view secret) {
  if (secret.empty()) return refused("no worker secret");
  if (!looks_like_secret(secret, kWorkerSecretPrefix)) return refused("a malformed worker secret");
  const std::string hash = sha256_hex(secret);
  {
    MutexLock lock(mu_);
    if (auto it = cache_.find(hash); it != cache_.end()) return it->second;
  }
  auto id = store_.worker_by_secret_hash(hash);
  if (!id) return id.error();
  if (!*id) return refused("an unknown worker secret");
  MutexLock lock(mu_);
  if (cache_.size() > 100000) cache_.clear();  // bounded: a safety valve, not an eviction policy
  cache_[hash] = **id;
  return **id;
}

}  // namespace jobctl::daemon::auth
