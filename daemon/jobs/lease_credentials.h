// The hook a lease's grant asks for the job owner's registry credential (docs/security.md,
// "Registry credentials"): whatever stores users' logins (daemon/auth/registry_credentials.h)
// implements it, so jobs/ does not depend on where they are kept or how they are sealed. The
// credential goes into that lease's offer only (protocol::LeaseOffer::registry_credential).
//
// Thread safety: called on the store's writer thread, inside the lease's transaction; it reads
// only through that WriteTxn (never the Store: it must not block on it).
#pragma once

#include <optional>

#include "base/expected.h"
#include "daemon/store/store.h"
#include "protocol/worker_messages.h"

namespace jobctl::daemon::jobs {

class LeaseCredentials {
 public:
  virtual ~LeaseCredentials() = default;
  // The owner's credential for the registry of `job`'s image (its spec's "image"); none for a job
  // without an image or an owner without a login there. An error refuses the lease (the change
  // rolls back): only the store's own; a credential that cannot be opened is none, said in an
  // event of the job.
  virtual Expected<std::optional<protocol::RegistryCredential>> registry_credential_in(store::WriteTxn& txn,
                                                                                        const store::JobRow& job,
                                                                                        const std::string& owner,
                                                                                        int64_t now_ms) = 0;
};

}  // namespace jobctl::daemon::jobs
