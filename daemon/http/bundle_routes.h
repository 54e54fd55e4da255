// Code bundles (docs/job-protocol.md, "Code bundles"), added to the API router:
//   POST /v1/bundles          (a user's or an admin's token: store a bundle; 201 {"bundle": SHA-256})
//   GET  /v1/bundles/{sha256} (any token: its bytes)
// A bundle is stored once under the SHA-256 of its bytes (content-addressed, so a second upload of
// the same code is free); a command job's spec names it (`bundle`). The daemon checks that a body
// is a bundle (its magic), within checkpoints.max_bytes and within the uploader's quota
// (jobs/bundle_service.h); what is inside is checked by the worker that unpacks it
// (bundle/code_bundle.h). The body reaches the handler as the file the server streamed it to,
// like a checkpoint upload; a download is sent from the file (blob_download.h).
//
// Thread safety: as Router; the BundleService and the DownloadSlots must outlive the router.
#pragma once

#include <string_view>

#include "daemon/http/blob_download.h"
#include "daemon/jobs/bundle_service.h"
#include "net/router.h"

namespace jobctl::daemon::http {

void add_bundle_routes(net::Router& router, jobs::BundleService& bundles, DownloadSlots& slots);

}  // namespace jobctl::daemon::http
