// The podman implementation of ContainerRuntime (worker/container_runtime.h): rootful podman with
// runc (scripts/setup.sh writes the settings this needs), driven by its CLI.
//
// Registry credentials reach podman in an auth file of the worker's own (mode 0600 in a folder
// only the worker may enter), written for one pull and removed after it: never on a command line
// (visible to every user), in the environment, or in podman's own stored configuration.
//
// Thread safety: every call runs podman commands of its own; any thread, several at once.
#pragma once

#include <filesystem>
#include <memory>
#include <string>

#include "worker/container_runtime.h"

namespace jobctl::worker {

struct PodmanOptions {
  std::string program = "podman";       // a path, or a name looked up in PATH
  std::filesystem::path private_dir;    // the worker's own folder for auth files (created 0700)
  std::string registry_cert_dir;        // certificates of private registries' CAs (podman --cert-dir); "" none
  int pull_timeout_s = 1800;
};

// Checks that podman answers (`podman version`); errors say what to install or set up.
Expected<std::unique_ptr<ContainerRuntime>> make_podman_runtime(PodmanOptions options);

}  // namespace jobctl::worker
