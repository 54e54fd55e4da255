// The store's schema as an ordered list of migrations. At start the store applies every
// migration newer than the database's schema_version, each in its own transaction, so a database
// of any earlier version is brought up to date and a crash mid-way leaves it at a whole version.
// A database newer than this binary knows is refused rather than misread.
//
// Thread safety: call from the one thread that owns the write connection.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "daemon/store/sqlite.h"

namespace jobctl::daemon::store {

struct Migration {
  int version;             // 1, 2, 3, ... without gaps
  std::string_view name;   // what it does, for the log
  std::string_view sql;    // one or more statements
};

// Every migration this binary knows, oldest first.
const std::vector<Migration>& migrations();

// The schema version the database is at (0 for a new file).
Expected<int> schema_version(Connection& db);

// Applies the missing migrations. Returns the resulting version.
// now_ms is recorded as each migration's applied time.
Expected<int> apply_migrations(Connection& db, int64_t now_ms,
                               const std::vector<Migration>& list = migrations());

}  // namespace jobctl::daemon::store
