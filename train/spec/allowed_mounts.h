// Which host folders a worker lets jobs in an image mount (jobctl-worker --allow-mount
// PREFIX[:rw]): the worker checks each mount against them before it starts a container, and
// jobctld offers a job only to workers whose prefixes take all of its mounts. Both use this one
// rule, on the paths as written; the worker checks the resolved source again (links followed).
//
// Thread safety: pure functions over values.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/expected.h"
#include "train/spec/job_spec.h"

namespace jobctl::train {

struct AllowedMount {
  std::string prefix;     // an absolute folder; its subfolders are allowed too
  bool writable = false;  // mounts under it may be writable
  bool operator==(const AllowedMount&) const = default;
};

// "PREFIX" or "PREFIX:rw" (also "PREFIX:ro"). Errors: invalid_argument naming `field`.
Expected<AllowedMount> parse_allowed_mount(std::string_view text, const std::string& field = "--allow-mount");

// Whether `path` is `root` or inside it (by whole components: /data is not inside /dat).
bool path_within(std::string_view path, std::string_view root);

// Whether `source` (writable or not) is under one of `allowed` that permits it.
bool mount_allowed(std::string_view source, bool writable, const std::vector<AllowedMount>& allowed);

}  // namespace jobctl::train
