#include "worker/image_eviction.h"

#include <algorithm>
#include <tuple>

namespace jobctl::worker {

std::vector<std::string> images_to_evict(const std::vector<CachedImage>& images, int64_t bound_bytes) {
  int64_t total = 0;
  std::vector<const CachedImage*> removable;
  for (const CachedImage& i : images) {
    total += std::max<int64_t>(i.bytes, 0);
    if (i.used_for_jobs && !i.in_use) removable.push_back(&i);
  }
  std::sort(removable.begin(), removable.end(), [](const CachedImage* a, const CachedImage* b) {
    return std::tie(a->last_used_ms, a->id) < std::tie(b->last_used_ms, b->id);
  });
  std::vector<std::string> out;
  for (const CachedImage* i : removable) {
    if (total <= bound_bytes) break;
    out.push_back(i->id);
    total -= std::max<int64_t>(i->bytes, 0);
  }
  return out;
}

}  // namespace jobctl::worker
