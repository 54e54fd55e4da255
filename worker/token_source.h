// Where jobctl-worker takes its API token from without leaving it where a job program could read
// it (docs/security.md, "What a job program can reach"): a file only its owner may read
// (--token-file), or the environment, from which it is then wiped.
//
// Thread safety: take_environment_variable() edits this process's environment; call it from
// main() before any other thread starts.
#pragma once

#include <optional>
#include <string>

#include "base/expected.h"

namespace jobctl::worker {

// The token in `path`, surrounding white space trimmed. Refused (permission_denied, naming the
// field "--token-file") when the file is not a regular file, is readable or writable by group
// or others, or belongs to a user other than this process's; not_found when it cannot be read;
// invalid_argument when it is empty.
Expected<std::string> read_token_file(const std::string& path);

// The value of environment variable `name`, which is then removed from the environment and its
// bytes overwritten where they lay: unsetenv() alone leaves them in the block the kernel shows
// as /proc/<pid>/environ. nullopt when unset.
std::optional<std::string> take_environment_variable(const char* name);

}  // namespace jobctl::worker
