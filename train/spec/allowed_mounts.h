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

// What a machine offers a job in an image: a container runtime (jobctl-worker
// --container-runtime), and the host folders such jobs may mount (--allow-mount). Placement,
// the submit check and the configuration of the workers jobctld starts all use it.
struct ContainerSupport {
  bool runs_images = false;
  std::vector<AllowedMount> mounts;
  bool operator==(const ContainerSupport&) const = default;
  // Whether a job (in an image when `image`, with `job_mounts`) can run here: a job in no image
  // always can.
  bool takes(bool image, const std::vector<MountSpec>& job_mounts) const {
    if (!image) return true;
    if (!runs_images) return false;
    for (const auto& m : job_mounts)
      if (!mount_allowed(m.source, m.writable, mounts)) return false;
    return true;
  }
  // The jobctl-worker flags that give a worker this support (for the workers jobctld starts).
  std::vector<std::string> worker_flags() const {
    if (!runs_images) return {};
    std::vector<std::string> flags = {"--container-runtime", "podman"};
    for (const auto& m : mounts) {
      flags.push_back("--allow-mount");
      flags.push_back(m.prefix + (m.writable ? ":rw" : ""));
    }
    return flags;
  }
};

}  // namespace jobctl::train
