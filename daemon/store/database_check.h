// `jobctld --check`: every damage jobctld can find in a database file, listed, the file left as
// it is (docs/operations.md, "Checking and restoring the database").
//
// Two layers: SQLite's own `PRAGMA integrity_check` (the file's pages, b-trees and indexes: a
// corrupt page, a torn write), and every row of jobs, job_events and workers read through the
// store's row codecs, their JSON documents (spec, progress, result, placement, event details,
// capabilities) checked against their checksums and parsed — what a GET would have met: a byte
// changed inside a document, even one that still parses, is found. Each problem names the table,
// the row and the file.
//
// Thread safety: a free function over its own read-only connection; it may run beside a jobctld.
#pragma once

#include <string>
#include <vector>

#include "base/expected.h"

namespace jobctl::daemon::store {

// The problems found in the SQLite file at `path` (empty: none). Errors: io when the file cannot
// be opened or read at all (the message names it).
Expected<std::vector<std::string>> check_database(const std::string& path);

// The text of an error that says the database file at `path` is damaged, with what to do, for
// an error of opening or migrating it that SQLite reports as corruption ("database disk image is
// malformed", "file is not a database"); any other error comes back unchanged.
Error explain_damaged_database(const std::string& path, const Error& e);

}  // namespace jobctl::daemon::store
