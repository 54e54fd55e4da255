// The container runtime a worker runs jobs in images with (jobctl-worker --container-runtime;
// docs/job-protocol.md, "Jobs in an image"). One small interface over a CLI-compatible runtime:
// podman today (worker/podman_runtime.h); another with the same commands can follow.
//
// What a container of a job is: named and labelled for its lease, started in the foreground so
// that its program's stdout and stderr are the runtime process's, a SIGTERM to that process
// reaches the program (its --init forwards it) and the runtime exits with the program's status.
// A runtime process killed outright leaves its container running (the runtime's monitor owns it):
// remove() ends it, and a worker at start removes every container labelled with its work folder.
//
// Thread safety: implementations may be called from several runner threads at once.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/expected.h"
#include "protocol/worker_messages.h"
#include "train/spec/job_spec.h"

namespace jobctl::worker {

// A host path seen inside the container at `target`.
struct ContainerBind {
  std::string source;
  std::string target;
  bool writable = false;
  bool operator==(const ContainerBind&) const = default;
};

// One container run: everything the runtime's run command is made from.
struct ContainerRun {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  std::string image;
  std::vector<std::string> argv;
  std::vector<std::string> env;   // NAME=value: all the program gets beyond the image's own
  std::string workdir;
  std::vector<ContainerBind> binds;
  std::optional<std::pair<uint32_t, uint32_t>> user;  // uid, gid; none: the image's user
  uint64_t memory_bytes = 0;      // 0: no limit
  int pids_limit = 0;             // 0: the runtime's default
  std::vector<std::string> devices;  // host device nodes ("/dev/nvidia0") or CDI names ("nvidia.com/gpu=0")
  bool host_network = false;      // the host's network (a gang's rendezvous); else the runtime's default
};

// An image as the worker holds it after prepare_image.
struct PreparedImage {
  std::string id;       // the runtime's id of the image (what images() and remove_image() name)
  std::string digest;   // "sha256:<64 hex>": the manifest digest the registry served
  int64_t bytes = 0;    // its size on this worker
  bool pulled = false;  // pulled now (false: already here)
  double pull_seconds = 0;
  int layers = 0;         // layers the pull went through (podman 4.3 does not say which were here already)
};

// An image the runtime holds.
struct HeldImage {
  std::string id;
  std::vector<std::string> names;  // the references it is stored under ("host:5000/repo:tag")
  int64_t bytes = 0;
  bool in_use = false;             // a container (running or not) uses it
};

// Labels on every container of a lease.
inline constexpr std::string_view kJobLabel = "io.jobctl.job";
inline constexpr std::string_view kEpochLabel = "io.jobctl.epoch";
inline constexpr std::string_view kWorkerLabel = "io.jobctl.worker";          // the worker's name
inline constexpr std::string_view kWorkerDirLabel = "io.jobctl.worker-dir";   // its --work-dir: one per worker process

class ContainerRuntime {
 public:
  virtual ~ContainerRuntime() = default;
  virtual std::string_view name() const = 0;

  // Makes `image` present as `pull` says (if_missing: pulled when absent; always: pulled; never:
  // must be here), logging in with `credential` for that pull only. Progress lines go to
  // `log_line`. Errors name the image and say why (unknown, unreachable, refused credentials).
  virtual Expected<PreparedImage> prepare_image(const std::string& image, train::ImagePull pull,
                                                const std::optional<protocol::RegistryCredential>& credential,
                                                const std::function<void(const std::string&)>& log_line) = 0;
  // The argv of the foreground process that runs `run` (see above).
  virtual std::vector<std::string> run_command(const ContainerRun& run) const = 0;
  // Ends (SIGKILL) and removes the container named `name`; one that is gone is not an error.
  virtual Status remove(const std::string& name) = 0;
  // Every image the runtime holds, with its size and whether a container uses it.
  virtual Expected<std::vector<HeldImage>> images() = 0;
  // Removes the image `id` (every name of it); one a container uses is refused, one that is gone
  // is not an error.
  virtual Status remove_image(const std::string& id) = 0;
  // The names of the containers, running or not, labelled key=value.
  virtual Expected<std::vector<std::string>> labelled(std::string_view key, const std::string& value) = 0;
};

}  // namespace jobctl::worker
