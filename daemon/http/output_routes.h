// A job's outputs (docs/api.md, "Outputs"; docs/job-protocol.md, "Outputs"), added to the API router:
//   PUT /v1/jobs/{id}/outputs?path=P&worker_id=W&epoch=E  (the lease holder: store one file; 201)
//   GET /v1/jobs/{id}/outputs                             (owner, lease holder, admin: the list)
//   GET /v1/jobs/{id}/outputs/file?path=P                 (owner, lease holder, admin: one file's bytes)
// An upload reaches the handler as the file the server streamed it to; a download is sent from
// the blob's file (blob_download.h). Another user's job answers 404, as if it did not exist.
//
// Thread safety: as Router; the OutputService and the DownloadSlots must outlive the router.
#pragma once

#include "daemon/http/blob_download.h"
#include "daemon/jobs/output_service.h"
#include "net/router.h"

namespace jobctl::daemon::http {

void add_output_routes(net::Router& router, jobs::OutputService& outputs, DownloadSlots& slots);

}  // namespace jobctl::daemon::http
