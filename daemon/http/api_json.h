// The JSON shapes of jobctld's answers (docs/api.md): jobs, events, workers, leases, a job's
// estimated against actual runtime. Stored JSON columns (spec, progress, result, placement) are
// embedded as JSON, not as strings.
//
// Thread safety: pure functions.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

#include "daemon/jobs/job_wait.h"
#include "daemon/jobs/protocol.h"
#include "daemon/ledger/job_segments.h"

namespace jobctl::daemon::http {

nlohmann::json job_summary_json(const jobs::JobRow& job);
nlohmann::json job_detail_json(const jobs::JobDetail& detail);
// A job's "runtime" (GET /v1/jobs/{id}): the estimated hours of its latest placement's choice
// and, once it succeeded, the actual hours (the result's elapsed_s, else its last start to its
// end) and error_fraction = (estimated - actual) / actual; basis: where the estimate came from
// (the placement document's runtime_basis: model, estimate, history or assumed). Null when it was
// never placed.
// A job's `cost` (its summary's and its detail's): what it cost, what all on-demand would have, and
// the difference; null on-demand and saved figures when none of its time has an on-demand
// equivalent.
nlohmann::json job_cost_json(const ledger::JobCost& cost);
nlohmann::json runtime_json(const store::JobRow& job, const std::vector<store::JobEventRow>& events);
nlohmann::json event_json(const jobs::JobEventRow& ev);
// A waiting job's `waiting` (jobs/job_wait.h): reason, queue, position, queue_length,
// expected_start_ms (null: none) and expected_start_basis.
nlohmann::json wait_json(const jobs::JobWait& wait);
nlohmann::json worker_json(const jobs::WorkerInfo& info);
nlohmann::json lease_json(const jobs::LeaseGrant& grant);
// A stored checkpoint: step, bytes, crc32c (8 hex digits), uploader, url.
nlohmann::json checkpoint_json(const store::CheckpointRow& checkpoint);

}  // namespace jobctl::daemon::http
