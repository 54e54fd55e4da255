// Which images a worker's bounded image cache (jobctl-worker --image-cache-mb) removes: the least
// recently used of those it pulled for jobs, until the images it holds fit the bound. An image a
// container uses (or a lease of this worker is about to run) and one the worker never used for a
// job (the machine's own) are never removed; when they alone exceed the bound, the cache stays over
// it.
//
// Thread safety: a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jobctl::worker {

struct CachedImage {
  std::string id;             // the runtime's image id
  int64_t bytes = 0;
  bool used_for_jobs = false;  // in the worker's use log (worker/image_use_log.h)
  int64_t last_used_ms = 0;    // when a lease last took it (meaningful when used_for_jobs)
  bool in_use = false;         // a container or a lease holds it
};

// The ids to remove, least recently used first (ties: the smaller id), so that the total bytes of
// `images` is at most `bound_bytes` once they are gone, or as close as the removable ones allow.
std::vector<std::string> images_to_evict(const std::vector<CachedImage>& images, int64_t bound_bytes);

}  // namespace jobctl::worker
