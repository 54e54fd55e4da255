// The worker's bounded image cache (jobctl-worker --image-cache-mb; docs/configuration.md): after
// each lease takes its image, and at start, the worker removes the least recently used images it
// took for jobs until what its container runtime holds fits the bound (worker/image_eviction.h
// decides which). An image a container uses or a lease of this worker holds (a Pin, from the pull
// until the lease ends) is never removed, nor one the worker never used for a job. Last uses
// persist in <work dir>/image-uses.json (worker/image_use_log.h).
//
// Thread safety: every member may be called from several runner threads at once.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <ostream>
#include <string>

#include "base/clock.h"
#include "base/mutex.h"
#include "worker/container_runtime.h"
#include "worker/image_use_log.h"

namespace jobctl::worker {

class ImageCache {
 public:
  // A lease's hold on its image: not evicted while this lives.
  class Pin {
   public:
    Pin() = default;
    Pin(Pin&& o) noexcept : cache_(std::exchange(o.cache_, nullptr)), id_(std::move(o.id_)) {}
    Pin& operator=(Pin&& o) noexcept {
      if (this != &o) {
        release();
        cache_ = std::exchange(o.cache_, nullptr);
        id_ = std::move(o.id_);
      }
      return *this;
    }
    ~Pin() { release(); }

   private:
    friend class ImageCache;
    Pin(ImageCache* cache, std::string id) : cache_(cache), id_(std::move(id)) {}
    void release();
    ImageCache* cache_ = nullptr;
    std::string id_;
  };

  ImageCache(std::shared_ptr<ContainerRuntime> runtime, int64_t bound_bytes, std::filesystem::path use_file,
             const jobctl::Clock& clock, std::ostream& log);

  // Reads the use log (an unreadable one is said and started afresh) and trims.
  void start() JOBCTL_EXCLUDES(mu_);
  // A lease took image `id` now: it is pinned and the cache trimmed; its last use is recorded (and
  // saved) when the worker pulled it (`pulled`) now or before, never for the machine's own image.
  Pin use(const std::string& id, bool pulled) JOBCTL_EXCLUDES(mu_);
  // Removes what images_to_evict says; failures are logged, never fatal (the next trim retries).
  void trim() JOBCTL_EXCLUDES(mu_);

  int64_t bound_bytes() const { return bound_bytes_; }

 private:
  void trim_locked() JOBCTL_REQUIRES(mu_);

  std::shared_ptr<ContainerRuntime> runtime_;
  const int64_t bound_bytes_;
  const jobctl::Clock& clock_;
  std::ostream& log_;
  Mutex mu_;
  ImageUseLog uses_ JOBCTL_GUARDED_BY(mu_);
  std::map<std::string, int> pinned_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::worker
