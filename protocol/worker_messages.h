// The worker protocol's messages (docs/api.md, "The worker protocol"): what jobctl-worker sends
// and what jobctld answers, as typed values, each with its JSON encoder and a strict decoder. Both
// sides use these, so the wire format is written once: the worker encodes its reports and decodes
// the answers; jobctld decodes the reports and encodes the answers.
//
// Decoders are strict where jobctld reads (unknown keys and wrong types are errors that name the
// field, as net/json_body.h's checks word them) and lenient where the worker reads an answer
// (a newer jobctld may add fields).
//
// Thread safety: plain values and pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"

namespace jobctl::protocol {

// Every report from a worker names the lease it acts under: the job (in the path), the worker and
// the lease epoch. A report whose lease is not the job's current one is refused (409).
struct LeaseRef {
  int64_t worker_id = 0;
  int64_t epoch = 0;
};

// POST /v1/workers: the answer (the request carries the worker's name and capabilities).
struct WorkerRegistered {
  int64_t worker_id = 0;
  std::string worker_secret;  // sent with every later call (docs/security.md)
  int heartbeat_interval_s = 2;
  int lease_timeout_s = 0;
  int max_lease_wait_s = 30;
  std::vector<std::string> warnings;  // what the operator should know (a GPU jobctl does not know)
};

// A stored checkpoint: the one a lease resumes from, and each entry of a job's checkpoint list
// (GET /v1/jobs/{id}/checkpoints), as the worker reads them.
struct ResumePoint {
  int64_t step = 0;
  int64_t bytes = 0;
  uint32_t crc32c = 0;  // on the wire: 8 hex digits
};

// A job across several machines (a gang, `resources.nodes` > 1): where this node stands in it and
// how its program finds the others. Every node of the gang is leased in the same change and gets
// the same addresses; the worker gives them to its program as JOBCTL_NODE_RANK, JOBCTL_NUM_NODES,
// JOBCTL_NODE_ADDRS, JOBCTL_MASTER_ADDR, JOBCTL_MASTER_PORT, JOBCTL_GPUS_PER_NODE
// (docs/job-protocol.md, "Jobs across machines").
struct GangRendezvous {
  int rank = 0;                     // this node's, 0 .. nodes - 1; rank 0 reports for the job
  int nodes = 1;
  std::vector<std::string> addrs;   // every node's address, in rank order (what its worker registered)
  std::string master_addr;          // rank 0's
  int master_port = 0;              // a port rank 0's worker found free when it asked for work
  int gpus_per_node = 0;            // resources.gpus (0: a CPU job)
};

// The job owner's credential for the registry of the job's image (the user stored it with
// `jobctl registry login`): sent with the lease to the worker that pulls, and nowhere else
// (docs/security.md).
struct RegistryCredential {
  std::string registry;  // host[:port]
  std::string username;
  std::string password;
};

// POST /v1/workers/{id}/lease: the job offered.
struct LeaseOffer {
  int64_t job_id = 0;
  int64_t epoch = 0;
  std::string name;
  std::string spec_json = "{}";       // the job's spec, canonical JSON text
  int64_t lease_expires_ms = 0;
  std::optional<ResumePoint> resume;  // none: a fresh start
  std::vector<int> gpus;              // the worker's GPUs the job takes
  std::optional<GangRendezvous> gang;  // none: a job on one machine
  std::string owner;                   // the user who submitted the job ("" without auth)
  std::optional<RegistryCredential> registry_credential;  // none: pull without logging in
};

// One line of a job's output, stamped when the worker read it.
struct OutputLine {
  int64_t time_ms = 0;  // ms since the epoch; 0: not stamped (jobctld stamps it on arrival)
  std::string text;     // without its newline
};

// POST /v1/jobs/{id}/heartbeat. The log travels as `"log": [{"time_ms": T, "text": "..."}, ...]`;
// a plain string (unstamped lines) is still read.
struct HeartbeatReport {
  HeartbeatReport() = default;
  // (A constructor rather than aggregate initialisation: callers that carry no log leave it out.)
  HeartbeatReport(LeaseRef lease_ref, std::optional<std::string> progress = std::nullopt,
                  std::vector<OutputLine> log_lines = {})
      : lease(lease_ref), progress_json(std::move(progress)), log(std::move(log_lines)) {}

  LeaseRef lease;
  std::optional<std::string> progress_json;  // a JSON object's text
  std::vector<OutputLine> log;                  // the job's output since the last delivered heartbeat
};

struct HeartbeatReply {
  bool cancel = false;  // the job was cancelled: stop it
  bool move = false;    // the job is to move: checkpoint now and give it back
  int64_t lease_expires_ms = 0;
};

// POST /v1/jobs/{id}/complete, /fail, /preempt.
struct CompletionReport {
  LeaseRef lease;
  std::string result_json;  // a JSON object (final_loss, test_accuracy, ...)
};

struct FailureReport {
  LeaseRef lease;
  std::string error;
};

struct PreemptionReport {
  LeaseRef lease;
  std::string reason;
};

// POST /v1/jobs/{id}/image: the image a lease runs, as the worker resolved it (what ran, for
// reproducibility).
struct ImageReport {
  LeaseRef lease;
  std::string image;   // the spec's reference
  std::string digest;  // "sha256:<64 hex>": the manifest digest the registry served
};

// POST /v1/jobs/{id}/checkpoints/{step}/reject: the lease holder cannot resume from it.
struct CheckpointRejection {
  LeaseRef lease;
  std::string error;
  std::optional<int64_t> fallback_step;  // the checkpoint tried next; none: a fresh start
};

// Limits jobctld holds reports to (the heartbeat's log has its own, configured one).
inline constexpr size_t kMaxFailureBytes = 16384;
inline constexpr size_t kMaxReasonBytes = 4096;
inline constexpr size_t kMaxRejectionBytes = 4096;

// Encoders: the JSON body each message travels as.
nlohmann::json to_json(const LeaseRef& m);
nlohmann::json to_json(const WorkerRegistered& m);
nlohmann::json to_json(const LeaseOffer& m);
nlohmann::json to_json(const HeartbeatReport& m);
nlohmann::json to_json(const HeartbeatReply& m);
nlohmann::json to_json(const CompletionReport& m);
nlohmann::json to_json(const FailureReport& m);
nlohmann::json to_json(const PreemptionReport& m);
nlohmann::json to_json(const CheckpointRejection& m);
nlohmann::json to_json(const ImageReport& m);

// jobctld's decoders of the reports (strict; errors name the field). `max_log_bytes` bounds the
// heartbeat's log (payload_too_large past it).
Expected<LeaseRef> lease_ref_from_json(const nlohmann::json& body);
Expected<HeartbeatReport> heartbeat_report_from_json(const nlohmann::json& body, size_t max_log_bytes);
Expected<CompletionReport> completion_report_from_json(const nlohmann::json& body);
Expected<FailureReport> failure_report_from_json(const nlohmann::json& body);
Expected<PreemptionReport> preemption_report_from_json(const nlohmann::json& body);
Expected<CheckpointRejection> checkpoint_rejection_from_json(const nlohmann::json& body);
Expected<ImageReport> image_report_from_json(const nlohmann::json& body);

// The worker's decoders of the answers (lenient on extra fields; a missing or mistyped required
// field is an error naming it).
Expected<WorkerRegistered> worker_registered_from_json(const nlohmann::json& body);
Expected<LeaseOffer> lease_offer_from_json(const nlohmann::json& body);
// A checkpoint object (docs/api.md, "Checkpoints"): its step, bytes and crc32c (8 hex digits).
Expected<ResumePoint> resume_point_from_json(const nlohmann::json& body);
Expected<HeartbeatReply> heartbeat_reply_from_json(const nlohmann::json& body);

}  // namespace jobctl::protocol
