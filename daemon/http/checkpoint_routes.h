// The checkpoint endpoints (docs/api.md, "Checkpoints"), added to the API router:
//   PUT /v1/jobs/{id}/checkpoints/{step}?worker_id=W&epoch=E&crc32c=HEX   (worker upload, fenced)
//   GET /v1/jobs/{id}/checkpoints                                         (list, newest first)
//   GET /v1/jobs/{id}/checkpoints/latest | /{step}                        (download)
//   POST /v1/jobs/{id}/checkpoints/{step}/reject                          (worker: cannot resume)
// Who may call which is the gate's (auth_gate.h). An upload's body reaches the handler as the
// file the server streamed it to (HttpRequest::body_file), which CheckpointService::put takes.
//
// Downloads are sent from the blob's file under the shared download cap (blob_download.h).
//
// Thread safety: as Router; the CheckpointService and the DownloadSlots must outlive the router.
#pragma once

#include "net/router.h"
#include "daemon/http/blob_download.h"
#include "daemon/jobs/checkpoint_service.h"

namespace jobctl::daemon::http {

void add_checkpoint_routes(net::Router& router, jobs::CheckpointService& checkpoints, DownloadSlots& slots);

// True for the one request that may carry a large body: a checkpoint upload. The server allows
// it checkpoints.max_bytes instead of http.max_body_bytes and streams it to a file.
bool is_checkpoint_upload(std::string_view method, std::string_view target);

}  // namespace jobctl::daemon::http
