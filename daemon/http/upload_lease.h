// The lease a worker's upload (a checkpoint, a job output) acts under: its query's worker_id and
// epoch, both required, and the caller must be that worker (check_acting_worker, by its secret);
// the service then fences it to the job's current lease (daemon/jobs/lease_fence.h).
//
// Thread safety: a function.
#pragma once

#include <functional>
#include <string>

#include "base/expected.h"
#include "net/message.h"
#include "protocol/worker_messages.h"

namespace jobctl::daemon::http {

// The query's other keys go to `other`, which returns an error (field: the key) for one it does
// not take. Errors: invalid_argument naming worker_id or epoch, `other`'s, the caller's.
Expected<protocol::LeaseRef> upload_lease(const net::HttpRequest& req,
                                          const std::function<Status(const std::string& key, const std::string& value)>& other);

}  // namespace jobctl::daemon::http
