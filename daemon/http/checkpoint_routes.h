// The checkpoint endpoints (docs/api.md, "Checkpoints"), added to the API router:
//   PUT /v1/jobs/{id}/checkpoints/{step}?worker_id=W&epoch=E&crc32c=HEX   (worker upload, fenced)
//   GET /v1/jobs/{id}/checkpoints                                         (list, newest first)
//   GET /v1/jobs/{id}/checkpoints/latest | /{step}                        (download)
//   POST /v1/jobs/{id}/checkpoints/{step}/reject                          (worker: cannot resume)
// Each route declares who may call it (route_access.h: the worker protocol, or the job's owner,
// lease holder and admins for reads). An upload's body is streamed to a file (at most the
// server's upload limit, checkpoints.max_bytes, instead of http.max_body_bytes) and reaches the handler as
// HttpRequest::body_file, which CheckpointService::put takes.
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

}  // namespace jobctl::daemon::http
