// Looks up the Unix identity a child is to run as (SpawnOptions::run_as): a user's uid, primary
// gid and supplementary groups, from the system's user database (getpwnam_r, getgrouplist).
// Done before fork(): the child only applies them (initgroups is not async-signal-safe).
// Thread safety: safe from any thread (reentrant lookups).
#pragma once

#include <string>

#include "base/expected.h"
#include "process/child.h"

namespace jobctl::process {

// `user`: a name, or a numeric uid that has an entry. Errors: not_found (no such user),
// invalid_argument (empty), io (the database could not be read).
Expected<Credentials> credentials_of(const std::string& user);

}  // namespace jobctl::process
