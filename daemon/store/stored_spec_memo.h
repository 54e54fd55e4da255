// The decoded specs of the jobs read most recently, so that a job's spec is decoded once rather
// than at every read of its row: a running job's row is read on the writer thread for each stored
// heartbeat, and each placement pass reads every queued job's; its spec text never changes, and
// decoding it at every read cost jobctld measurably more CPU under heartbeats (bench/RESULTS.md,
// "One decode of a job's spec").
//
// A slot per job id modulo its size (a newer job takes an older one's slot); a slot answers only
// for the very text it was decoded from, so a memo can never serve another text's spec. A text
// that does not decode is not kept (its error is decoded again at the next read).
//
// Thread safety: every method may be called from any thread (one mutex, held for a lookup).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/mutex.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::store {

class StoredSpecMemo {
 public:
  explicit StoredSpecMemo(size_t slots);

  // The spec decoded from `text` for job `id`, if this memo holds it; else null.
  std::shared_ptr<const train::JobSpec> find(int64_t id, const std::string& text) const JOBCTL_EXCLUDES(mu_);
  void keep(int64_t id, const std::string& text, std::shared_ptr<const train::JobSpec> spec) JOBCTL_EXCLUDES(mu_);

  // The memo of every store in this process (specs are decoded by content: one per process suffices).
  static StoredSpecMemo& process();

 private:
  struct Slot {
    int64_t id = 0;
    std::string text;
    std::shared_ptr<const train::JobSpec> spec;
  };
  size_t slot_of(int64_t id) const { return static_cast<size_t>(static_cast<uint64_t>(id) % slot_count_); }

  const size_t slot_count_;
  mutable Mutex mu_;
  std::vector<Slot> slots_ JOBCTL_GUARDED_BY(mu_);
};

}  // namespace jobctl::daemon::store
