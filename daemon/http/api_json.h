// The JSON shapes of jobctld's answers (docs/api.md): jobs, events, workers, leases. Stored JSON
// columns (spec, progress, result) are embedded as JSON, not as strings.
//
// Thread safety: pure functions.
#pragma once

#include <nlohmann/json.hpp>

#include "daemon/service/protocol.h"

namespace jobctl::daemon::http {

nlohmann::json job_summary_json(const service::JobRow& job);
nlohmann::json job_detail_json(const service::JobDetail& detail);
nlohmann::json event_json(const service::JobEventRow& ev);
nlohmann::json worker_json(const service::WorkerInfo& info);
nlohmann::json lease_json(const service::LeaseGrant& grant);
// A stored checkpoint: step, bytes, crc32c (8 hex digits), uploader, url.
nlohmann::json checkpoint_json(const store::CheckpointRow& checkpoint);

}  // namespace jobctl::daemon::http
