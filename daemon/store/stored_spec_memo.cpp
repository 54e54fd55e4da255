#include "daemon/store/stored_spec_memo.h"

#include <utility>

namespace jobctl::daemon::store {

StoredSpecMemo::StoredSpecMemo(size_t slots) : slot_count_(slots == 0 ? 1 : slots), slots_(slot_count_) {}

std::shared_ptr<const train::JobSpec> StoredSpecMemo::find(int64_t id, const std::string& text) const {
  MutexLock lock(mu_);
  const Slot& slot = slots_[slot_of(id)];
  if (slot.id != id || slot.text != text) return nullptr;
  return slot.spec;
}

void StoredSpecMemo::keep(int64_t id, const std::string& text, std::shared_ptr<const train::JobSpec> spec) {
  MutexLock lock(mu_);
  Slot& slot = slots_[slot_of(id)];
  slot.id = id;
  slot.text = text;
  slot.spec = std::move(spec);
}

StoredSpecMemo& StoredSpecMemo::process() {
  // 2,048 jobs: a fleet's running jobs and a pass's recent reads, a few MB at most.
  static StoredSpecMemo memo(2048);
  return memo;
}

}  // namespace jobctl::daemon::store
