// The JSON shapes of jobctld's answers (docs/api.md): jobs, events, workers, leases. Stored JSON
// columns (spec, progress, result) are embedded as JSON, not as strings.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "daemon/jobs/protocol.h"

namespace jobctl::daemon::http {

nlohmann::json job_summary_json(const jobs::JobRow& job);
nlohmann::json job_detail_json(const jobs::JobDetail& detail);
nlohmann::json event_json(const jobs::JobEventRow& ev);
nlohmann::json worker_json(const jobs::WorkerInfo& info);
nlohmann::json lease_json(const jobs::LeaseGrant& grant);
// A stored checkpoint: step, bytes, crc32c (8 hex digits), uploader, url.
nlohmann::json checkpoint_json(const store::CheckpointRow& checkpoint);

}  // namespace jobctl::daemon::http
