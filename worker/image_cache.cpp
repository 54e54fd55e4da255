#include "worker/image_cache.h"

#include <algorithm>

#include "worker/image_eviction.h"

namespace jobctl::worker {

void ImageCache::Pin::release() {
  if (!cache_) return;
  MutexLock lock(cache_->mu_);
  if (auto it = cache_->pinned_.find(id_); it != cache_->pinned_.end() && --it->second <= 0) cache_->pinned_.erase(it);
  cache_ = nullptr;
}

ImageCache::ImageCache(std::shared_ptr<ContainerRuntime> runtime, int64_t bound_bytes, std::filesystem::path use_file,
                       const jobctl::Clock& clock, std::ostream& log)
    : runtime_(std::move(runtime)), bound_bytes_(bound_bytes), clock_(clock), log_(log), uses_(std::move(use_file)) {}

void ImageCache::start() {
  MutexLock lock(mu_);
  if (auto st = uses_.load(); !st)
    log_ << "jobctl-worker: image cache: " << st.error().message << "; starting with no recorded uses\n";
  trim_locked();
}

ImageCache::Pin ImageCache::use(const std::string& id, bool pulled) {
  MutexLock lock(mu_);
  ++pinned_[id];
  if (pulled || uses_.last_used().contains(id)) {
    uses_.used(id, clock_.now_ms());
    if (auto st = uses_.save(); !st) log_ << "jobctl-worker: image cache: " << st.error().message << "\n";
  }
  trim_locked();
  return Pin(this, id);
}

void ImageCache::trim() {
  MutexLock lock(mu_);
  trim_locked();
}

void ImageCache::trim_locked() {
  auto held = runtime_->images();
  if (!held) {
    log_ << "jobctl-worker: image cache: " << held.error().message << "\n";
    return;
  }
  std::vector<CachedImage> images;
  bool forgot = false;
  for (const HeldImage& h : *held) {
    CachedImage c{.id = h.id, .bytes = h.bytes, .in_use = h.in_use || pinned_.contains(h.id)};
    if (auto it = uses_.last_used().find(h.id); it != uses_.last_used().end()) {
      c.used_for_jobs = true;
      c.last_used_ms = it->second;
    }
    images.push_back(std::move(c));
  }
  // Images removed by someone else leave the log too.
  for (auto it = uses_.last_used().begin(); it != uses_.last_used().end();) {
    const std::string id = it++->first;
    if (std::none_of(held->begin(), held->end(), [&](const HeldImage& h) { return h.id == id; })) {
      uses_.forget(id);
      forgot = true;
    }
  }
  for (const std::string& id : images_to_evict(images, bound_bytes_)) {
    const auto& h = *std::find_if(held->begin(), held->end(), [&](const HeldImage& x) { return x.id == id; });
    const std::string name = h.names.empty() ? id.substr(0, 12) : h.names.front();
    if (auto st = runtime_->remove_image(id); !st) {
      log_ << "jobctl-worker: image cache: " << st.error().message << "\n";
      continue;
    }
    log_ << "jobctl-worker: image cache: removed " << name << " (" << h.bytes / 1000000 << " MB, least recently used; bound "
         << bound_bytes_ / 1000000 << " MB)\n";
    uses_.forget(id);
    forgot = true;
  }
  if (forgot)
    if (auto st = uses_.save(); !st) log_ << "jobctl-worker: image cache: " << st.error().message << "\n";
}

}  // namespace jobctl::worker
