// Blob downloads (checkpoints, code bundles): the answer names the blob's file, which the server
// sends a piece at a time (net::HttpResponse::body_path), so a download costs a small buffer
// however large the blob; and at most `max_concurrent` are sent at once, across every blob route
// that shares one DownloadSlots. One more is answered 503 `unavailable` with Retry-After: 1
// rather than queued: a queued download would hold a connection and a handler thread while it
// waits, and the worker (the client that downloads blobs) already retries a 5xx with back-off.
//
// Thread safety: every method is safe from any thread; a slot is given back when the answer has
// been written or its connection is gone, whichever thread that happens on.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "net/message.h"

namespace jobctl::daemon::http {

class DownloadSlots {
 public:
  explicit DownloadSlots(int max_concurrent);

  // 200 with the file at `path` as its body (application/octet-stream) and `headers`, holding a
  // slot until it is written; or the 503 above when every slot is taken.
  net::HttpResponse file_answer(std::string path, std::vector<std::pair<std::string, std::string>> headers = {});
  // Downloads being sent now.
  int in_use() const { return state_->in_use.load(); }

 private:
  struct State {
    std::atomic<int> in_use{0};
  };
  const int max_concurrent_;
  std::shared_ptr<State> state_ = std::make_shared<State>();
};

}  // namespace jobctl::daemon::http
