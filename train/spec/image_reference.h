// A container image's reference as a job spec names it: registry/repository[:tag][@sha256:digest]
// (the OCI distribution grammar). The registry is required: an unqualified name ("python:3.11")
// would be resolved by each worker's own search list, so two workers could run different images
// under one spec.
//
// Thread safety: pure functions over values.
#pragma once

#include <string>
#include <string_view>

#include "base/expected.h"

namespace jobctl::train {

struct ImageReference {
  std::string registry;    // host[:port], e.g. "127.0.0.1:5000" or "registry.example.com"
  std::string repository;  // e.g. "team/train"
  std::string tag;         // "" when absent (a registry then serves "latest")
  std::string digest;      // "sha256:<64 hex>" or ""
};

// A registry as an image reference names it: host[:port], the host with a dot, a port, or
// "localhost" (a registry login is for the images that begin with it). Errors: invalid_argument
// naming `field`.
[[nodiscard]] Expected<std::string> parse_registry_host(std::string_view text, const std::string& field = "registry");

// Errors: invalid_argument naming `field`, saying which part is wrong.
[[nodiscard]] Expected<ImageReference> parse_image_reference(std::string_view text,
                                                             const std::string& field = "image");

}  // namespace jobctl::train
