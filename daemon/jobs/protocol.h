// The typed requests and answers of the service layer: what the HTTP handlers decode bodies into
// and encode answers from (docs/api.md shows their JSON). The worker protocol's reports are the
// shared messages of protocol/worker_messages.h.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "daemon/jobs/worker_capabilities.h"
#include "daemon/store/records.h"
#include "protocol/worker_messages.h"

namespace jobctl::daemon::jobs {

using store::JobEventRow;
using store::JobRow;
using store::JobState;
using store::WorkerRow;

struct JobListRequest {
  std::optional<JobState> state;
  int64_t after_id = 0;
  int limit = 100;
  std::optional<std::string> owner;  // only this user's jobs (set for `user` tokens)
  std::optional<int64_t> array_id;   // only this job array's jobs
};

// Who submits a job and how to recognise a retry (auth: docs/security.md). Both empty when
// auth is off and no Idempotency-Key header was sent.
struct SubmitContext {
  std::string owner;            // the token's user; stored in jobs.owner
  std::string idempotency_key;  // a retried submit with the same key returns the first job
  bool may_submit_commands = true;  // the caller's token may submit command jobs (http/caller.h)
  // The job's own estimated cost (the cheapest option meeting its deadline), noted by
  // SubmitAdmission::admit_spec for admit(); 0: not estimated.
  double estimated_cost_usd = 0;
};

struct JobPage {
  std::vector<JobRow> jobs;            // without spec_json
  std::optional<int64_t> next_after;   // pass as `after` for the next page; none when done
  std::map<int64_t, store::LedgerJobTotal> costs;  // billed so far, by job id (none: nothing billed)
};

struct JobDetail {
  JobRow job;
  std::vector<JobEventRow> events;
  std::vector<store::LedgerRecord> ledger;  // what its leases were billed, in start order
  std::vector<store::GangMemberRow> nodes;  // a leased gang's nodes in rank order; else none
};

struct WorkerRegistration {
  std::string name;
  WorkerCapabilities capabilities;
  // SHA-256 (hex) of the secret the worker is issued (auth/worker_credentials.h); the HTTP layer
  // makes the secret, the service stores only its hash.
  std::string secret_hash;
};

struct WorkerRegistered {
  int64_t worker_id = 0;
  int heartbeat_interval_s = 0;
  int lease_timeout_s = 0;
  int max_lease_wait_s = 0;
};

struct WorkerInfo {
  WorkerRow row;
  WorkerCapabilities capabilities;
  std::vector<int64_t> job_ids;        // jobs it holds now (placed or running)
};

struct LeaseGrant {
  int64_t job_id = 0;
  int64_t epoch = 0;
  std::string name;
  std::string spec_json;               // canonical
  int64_t lease_expires_ms = 0;
  // The newest stored checkpoint to resume from; none for a fresh start.
  std::optional<store::CheckpointRow> resume;
  // The worker's GPUs (indices into its registered "gpus") the job takes: resources.gpus of the
  // free ones it asked with that the job's GPU request names; empty for a CPU job or a CPU worker.
  std::vector<int> gpus;
  // A gang's node: its rank and the rendezvous (protocol::GangRendezvous); none for one machine.
  std::optional<protocol::GangRendezvous> gang;
  // The user who submitted the job ("" without auth): a worker reuses a setup only for its user.
  std::string owner;
  // The owner's login to the registry of the job's image (lease_credentials.h); none: no image,
  // or no login stored for its registry.
  std::optional<protocol::RegistryCredential> registry_credential;
};

// The worker protocol's messages, shared with jobctl-worker (protocol/worker_messages.h: the
// reports and answers with their JSON encoders and decoders).
using protocol::CompletionReport;
using protocol::FailureReport;
using protocol::ImageReport;
using protocol::HeartbeatReply;
using protocol::HeartbeatReport;
using protocol::OutputLine;
using protocol::LeaseRef;
using protocol::PreemptionReport;

}  // namespace jobctl::daemon::jobs
