#include "daemon/http/blob_download.h"

#include "net/json_body.h"

namespace jobctl::daemon::http {

DownloadSlots::DownloadSlots(int max_concurrent) : max_concurrent_(max_concurrent) {}

net::HttpResponse DownloadSlots::file_answer(std::string path, std::vector<std::pair<std::string, std::string>> headers) {
  if (state_->in_use.fetch_add(1) >= max_concurrent_) {
    state_->in_use.fetch_sub(1);
    net::HttpResponse busy = net::error_response(make_error(
        ErrorCode::unavailable, "too many blob downloads at once (the limit is " + std::to_string(max_concurrent_) +
                                    ", checkpoints.max_concurrent_downloads); retry shortly"));
    busy.headers.emplace_back("Retry-After", "1");
    return busy;
  }
  net::HttpResponse res;
  res.status = 200;
  res.content_type = "application/octet-stream";
  res.body_path = std::move(path);
  res.headers = std::move(headers);
  // The slot goes back when the server drops the answer (written, or its connection gone).
  res.held = std::shared_ptr<const void>(state_.get(), [state = state_](const void*) { state->in_use.fetch_sub(1); });
  return res;
}

}  // namespace jobctl::daemon::http
