// Worker identity (docs/security.md, "Workers"): registering a worker issues it a secret of its
// own ("jcw_" + 64 hex digits, daemon/auth/secret.h), shown once in the registration's answer;
// only its SHA-256 is stored (workers.secret_hash). Every later call of the worker protocol
// carries it (X-Worker-Secret), and the request gate (daemon/http/auth_gate.h) turns it into the
// one worker id the call may act for: a worker token (shared by a fleet) says "some worker of
// ours", the secret says which one. Secrets do not expire; a worker that registers again gets a
// new id and a new secret.
//
// Ownership: borrows the Store. Thread safety: every method is safe from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "base/expected.h"
#include "base/mutex.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::auth {

struct WorkerSecret {
  std::string secret;    // given to the worker once
  std::string hash_hex;  // stored
};

class WorkerCredentials {
 public:
  explicit WorkerCredentials(store::Store& store) : store_(store) {}

  // A new secret for a worker about to register.
  static Expected<WorkerSecret> issue();
  // The worker a secret belongs to. Code permission_denied (field X-Worker-Secret) when the
  // secret is missing, malformed or unknown.
  Expected<int64_t> authenticate(std::string_view secret);

 private:
  store::Store& store_;
  Mutex mu_;
  std::unordered_map<std::string, int64_t> cache_ JOBCTL_GUARDED_BY(mu_);  // hash -> worker id
};

}  // namespace jobctl::daemon::auth
