// The rows the store keeps, as typed values. The store's row codecs (row_codecs.h) decode every
// column once, when a row is read: a closed set is an enum, the placement's chosen candidate and a
// worker's capabilities are parsed, and a stored value that does not decode is an error naming the
// row (code io), never a default; a job's spec is decoded into train::JobSpec. What is still
// carried as JSON text (a job's progress, result and placement document, an event's detail) says
// so at its field.
//
// Thread safety: plain values.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/expected.h"

#include "daemon/store/worker_capabilities.h"
#include "scheduler/job_state.h"
#include "scheduler/option_kind.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::store {

using scheduler::JobState;
using scheduler::OptionKind;

// The candidate a job's placement chose: the placement document's "chosen" row (docs/api.md, "The
// placement document"), decoded. Every field below is checked when the row is read; a field the
// row leaves out (a row written by an older jobctld) reads as the default shown.
struct PlacementChoice {
  OptionKind option = OptionKind::local;
  std::string gpu;                 // the GPU model ("V100", "cpu"); "" when null
  int gpus = 1;                    // the machine's GPUs ("machine_gpus"; "gpus" in a document from before it)
  int job_gpus = 0;                // the GPUs the job takes there (resources.gpus, or with "auto"
                                   // the count chosen to fit); 0 when the row does not say
  std::string instance_type;       // cloud: the instance type; "" when null
  std::string region;              // cloud: where; "" when null
  std::string zone;
  std::string partition;           // slurm: the partition; "" when null
  double usd_per_hour = 0;
  double queue_wait_hours = 0;     // local: until a worker of the pool frees; cloud: provisioning
  double estimated_hours = 0;      // running time
  double estimated_cost_usd = 0;
  bool meets_deadline = true;
  // The whole row as placement wrote it (what the store writes back, unchanged).
  nlohmann::json row;

  bool on_cloud() const { return scheduler::is_cloud(option); }
};
// Decodes a chosen row: an object whose "option" is one of OptionKind's names and whose fields
// above have their types (a string field may be null). An error (code io) says which field.
Expected<PlacementChoice> placement_choice_from_json(nlohmann::json row);

// The figures the daemon reads from a job's progress: its worker's last heartbeat report, a JSON
// object kept as the worker sent it (JobRow::progress_json). A figure the report leaves out reads
// as 0 (a worker reports what it knows); one that is not a number is an error.
struct JobProgress {
  double step = 0;          // global steps done
  double total_steps = 0;
  double step_ms = 0;       // the last steps' mean time
  double start_step = 0;    // the step this run resumed from
  // step / total_steps clamped to [0, 1]; 0 without both.
  double done_fraction() const;
};
// Decodes progress text; an error (code io) naming `row` when it is not a JSON object or a figure
// is not a number.
Expected<JobProgress> decode_progress(std::string_view text, const std::string& row);

// The figures the daemon reads from a job's result (the worker's completion report, a JSON object
// kept as sent: JobRow::result_json), under the same rules as JobProgress.
struct JobResult {
  double elapsed_s = 0;     // the run's wall time
  double steps = 0;         // steps it ran
};
Expected<JobResult> decode_result(std::string_view text, const std::string& row);

// A job's whole placement document (JobRow::placement_json, the placement passes' decision with
// its candidate table: docs/api.md, "The placement document"), decoded; an error (code io) naming
// `row` when it is not a JSON object with a `chosen` object (null when nothing was chosen).
Expected<nlohmann::json> decode_placement_document(std::string_view text, const std::string& row);

// A job's lease: the worker that holds it, the epoch that fences its reports
// (daemon/jobs/lease_fence.h) and when it expires.
struct Lease {
  int64_t worker_id = 0;
  int64_t epoch = 0;
  std::optional<int64_t> expires_ms;
};

// A worker's state: registered and heard from (active), silent past the lease timeout (lost), or
// deregistered (gone).
enum class WorkerState : uint8_t { active, lost, gone };
std::string_view to_string(WorkerState s);
std::optional<WorkerState> parse_worker_state(std::string_view name);

// An API token's role (docs/security.md).
enum class TokenRole : uint8_t { admin, user, worker };
std::string_view to_string(TokenRole r);
std::optional<TokenRole> parse_token_role(std::string_view name);

struct JobRow {
  int64_t id = 0;                 // assigned by the store on insert
  std::string name;
  std::string spec_json;          // canonical (train::to_json): the text stored and served
  // spec_json decoded, once, where the row was read whole (a single read; submit builds it with the
  // text); a listing's rows carry neither. Shared: rows are copied often, the spec never changes.
  // A stored text that does not decode (its checksum matched: written so, not damaged since) leaves
  // it null and says why in spec_error; decoded_spec() is then that error.
  std::shared_ptr<const train::JobSpec> spec;
  std::string spec_error;
  JobState state = JobState::queued;
  int priority = 50;
  std::string resource_gpu = "any";
  int resource_gpus = 1;
  int64_t created_ms = 0;
  int64_t updated_ms = 0;
  std::optional<int64_t> worker_id;
  int64_t lease_epoch = 0;
  std::optional<int64_t> lease_expires_ms;
  std::optional<std::string> progress_json;  // JSON text
  std::optional<std::string> result_json;    // JSON text
  std::optional<std::string> error;
  int recoveries = 0;
  // Placement: the decision's chosen candidate row (small: matching, estimates and the
  // ledger read it), on the job row; and the whole decision with its candidate table (kilobytes),
  // in the job_placements table so that the frequent updates of a job (every heartbeat) do not
  // rewrite it. Single-job reads load placement_json (JSON text); listings leave it empty.
  // update_job writes chosen; WriteTxn::put_placement writes placement_json.
  std::optional<PlacementChoice> chosen;
  std::optional<std::string> placement_json;
  // The job array (sweep) it belongs to: the array's id is its first job's id. Written once, at
  // submit (WriteTxn::set_job_array), never by update_job.
  std::optional<int64_t> array_id;
  // Machines it runs on at once (resources.nodes; > 1: a gang, whose other nodes' leases are its
  // GangMemberRows). Read from the spec; update_job does not write it.
  int resource_nodes = 1;
  // The manifest digest ("sha256:<64 hex>") of the image its newest lease runs, as the worker
  // reported it (POST /v1/jobs/{id}/image); none: no image, or not reported yet. Written by
  // WriteTxn::set_job_image_digest, never by update_job.
  std::optional<std::string> image_digest;
  // A listing's row whose stored documents are damaged (a checksum that does not match, a value
  // that does not decode): what is damaged, and only id, name and state read; the job itself is
  // not served (a single read of it is that error).
  std::optional<std::string> damaged;

  // The lease, while a worker holds the job (placed or running with a worker).
  std::optional<Lease> lease() const {
    if (!worker_id || (state != JobState::placed && state != JobState::running)) return std::nullopt;
    return Lease{*worker_id, lease_epoch, lease_expires_ms};
  }
  // Placed on an option and waiting for a worker of it to take the lease.
  bool awaiting_lease() const { return state == JobState::placed && !worker_id; }
  // The decoded spec, or an error naming the job: its stored spec does not decode (code io), or
  // the row was read without it (a listing's; code internal: the caller read the wrong kind of row).
  Expected<const train::JobSpec*> decoded_spec() const;
};

struct JobEventRow {
  int64_t job_id = 0;
  int64_t seq = 0;                // assigned by the store: 1, 2, 3, ... per job
  int64_t time_ms = 0;
  std::string type;               // "submitted", "leased", "started", "succeeded", ...
  std::optional<JobState> from_state;
  std::optional<JobState> to_state;
  std::string detail_json = "{}";
};

struct WorkerRow {
  int64_t id = 0;                 // assigned by the store on insert
  std::string name;
  WorkerCapabilities capabilities;
  int64_t registered_ms = 0;
  int64_t last_seen_ms = 0;
  WorkerState state = WorkerState::active;
  // SHA-256 of the worker's secret, lowercase hex (auth/worker_credentials.h). Written by
  // insert_worker only; reads leave it empty (the secret's hash never leaves the store).
  std::string secret_hash;
};

// A listing query: jobs in id order after `after_id`, optionally of one state.
struct JobQuery {
  std::optional<JobState> state;
  int64_t after_id = 0;
  int limit = 100;
  std::optional<std::string> owner;  // only this user's jobs (auth: a `user` token lists its own)
  std::optional<int64_t> array_id;   // only this job array's jobs
};

// What a queued job needs for matching, without its spec.
struct QueuedJobRow {
  int64_t id = 0;
  int priority = 50;
  int64_t created_ms = 0;
  std::string resource_gpu;
  int resource_gpus = 1;
  // Cost-based placement (daemon/placement/placement_passes.h). No option: not placed
  // yet (a matcher without placement ignores these fields).
  std::optional<OptionKind> placement_option;
  std::string placement_gpu;            // local: the chosen pool's GPU model ("cpu", "V100")
  std::string placement_instance_type;  // cloud: the chosen instance type
  // A command job (the user's own program): offered only to workers that run them
  // (jobctl-worker --allow-commands).
  bool command = false;
  double placement_estimated_hours = 0;  // placed: the chosen option's running time (0: none)
  int nodes = 1;  // machines leased together (resources.nodes)
  std::string placement_zone{};  // cloud: the zone the chosen offer was priced in ("": none named)
  // A job in an image: offered only to workers with a container runtime whose allowed folders
  // take all of its mounts.
  bool image = false;
  std::vector<train::MountSpec> mounts{};
};

// One node of a gang's current lease (migration 20): which worker holds rank `rank` of the job
// under the job's lease epoch. Rank 0 is the job's own lease holder (JobRow::worker_id); its row
// is kept too so that a gang's nodes, addresses and billing read from one place. The rows live as
// long as the lease: whatever ends the job's lease deletes them in the same change.
struct GangMemberRow {
  int64_t job_id = 0;
  int rank = 0;
  int64_t worker_id = 0;
  int64_t epoch = 0;
  std::vector<int> gpus;       // the worker's GPUs this node takes
  std::string address;         // where the others reach it (the worker's registered address)
  int64_t expires_ms = 0;      // rank > 0: the member's own lease expiry, renewed by its heartbeats;
                               // a vacant rank's: when the gang stops waiting for a replacement
  int master_port = 0;         // the gang's rendezvous port (rank 0's machine)

  // A rank whose node was lost, awaiting a replacement (resources.on_node_loss "replace_node").
  bool vacant() const { return worker_id == 0; }
};

// A job with an owner that is queued, placed or running, as the budget watch reads it.
struct OwnedJob {
  int64_t id = 0;
  std::string owner;
  JobState state = JobState::queued;
  bool leased = false;  // a worker holds it
};

// A lease as the placement service and the provisioner read it, without the job's spec or
// placement table (Store::lease_summaries).
struct LeaseSummary {
  int64_t job_id = 0;
  int64_t worker_id = 0;
  int64_t epoch = 0;
  std::optional<PlacementChoice> chosen;      // the placement's chosen candidate
  std::optional<std::string> progress_json;  // the last heartbeat's progress (JSON text)
  int64_t leased_ms = 0;                      // when the worker took it (its last `leased` event)
  int gpus = 1;                               // GPUs it asked for (resources.gpus)
};

// A succeeded job's last run: the worker that ran it and when that run started and ended (its
// last `started` and its `succeeded` events), and how many runs it took (`started` events).
struct FinishedRun {
  int64_t job_id = 0;
  int64_t worker_id = 0;
  int64_t started_ms = 0;
  int64_t succeeded_ms = 0;
  int64_t runs = 0;
};

// One ledger interval (daemon/ledger/ledger.h; migration 2): billed per second.
struct LedgerRecord {
  std::string resource;           // "instance:<id>", "local:<worker id>:gpu<k>" or "local:<worker id>:cpu"
  int64_t start_ms = 0;           // with resource: the key
  int64_t end_ms = 0;
  int64_t job_id = 0;             // 0: none
  std::string kind;               // local | on_demand | spot
  double usd_per_hour = 0;
  double on_demand_usd_per_hour = 0;
  std::string user;
  int64_t billed_seconds = 0;
  double usd = 0;
  double on_demand_usd = 0;
  // An owned-GPU lease that has not ended (migration 8): stored with end_ms = start_ms and
  // nothing billed; every read bills it up to the store clock's now.
  bool open = false;
};

// One job's billed total (Store::ledger_job_totals).
struct LedgerJobTotal {
  double usd = 0;
  double on_demand_usd = 0;      // of the time with an on-demand equivalent
  double no_equivalent_usd = 0;  // spent on time with none (ledger::ledger_row_has_on_demand_equivalent)
};

// A persisted efficiency calibration (cost/efficiency_calibrator.h; migrations 2 and 9).
struct CalibrationRecord {
  std::string gpu_model;
  std::string model_kind;
  double log_efficiency = 0;
  int64_t samples = 0;
  int64_t updated_ms = 0;
  double overhead_seconds = 0;   // per run, outside its steps (migration 9)
  int64_t overhead_samples = 0;
  // The whole entry, recent runs included (cost::EfficiencyCalibrator's JSON; migration 14). Null
  // for a row from before it, and for a stored window that is not a JSON object: the row's
  // figures above stand then.
  nlohmann::json window;
};

// A stored code bundle, per user who uploaded it (migration 14): the blob itself is
// `<data_dir>/bundles/job-0/<sha256>.bundle`, shared by every user who stored the same bytes.
struct BundleRow {
  std::string sha256;
  std::string user;
  int64_t bytes = 0;
  int64_t stored_ms = 0;
};

// One file of a job's outputs (migration 16): what the program left in JOBCTL_OUTPUT_DIR at
// `path`; its bytes are the blob `<data_dir>/outputs/job-<job_id>/<blob>`.
struct OutputRow {
  int64_t job_id = 0;
  std::string path;      // relative, '/'-separated
  std::string user;      // the job's owner when it was uploaded ('' with auth off)
  int64_t bytes = 0;
  std::string blob;
  int64_t uploaded_ms = 0;
};

// An API token (docs/security.md): only the SHA-256 of the secret is stored.
struct TokenRow {
  int64_t id = 0;                 // assigned by the store on insert
  std::string user;               // whom it acts for; jobs it submits are owned by this user
  TokenRole role = TokenRole::user;
  std::string hash_hex;           // SHA-256 of the secret, lowercase hex
  std::string prefix;             // the secret's first characters, to recognise it in listings
  std::string permissions;        // granted beyond the role, comma-separated: "" or "commands"
  int64_t created_ms = 0;
  std::optional<int64_t> revoked_ms;
};

// A user's webhook (docs/notifications.md): where the job events it names are POSTed, signed
// with its secret.
struct WebhookRow {
  int64_t id = 0;                   // assigned by the store on insert
  std::string owner;                // the user whose jobs it reports ('' with auth off)
  std::string url;
  std::vector<std::string> events;  // job event types: "succeeded", "failed", ...
  std::string secret;               // HMAC-SHA256 key, hex
  int64_t created_ms = 0;
};

// A user's login to a container registry (docs/security.md, "Registry credentials"): the
// password sealed (auth/credential_seal.h), never stored in clear.
struct RegistryCredentialRow {
  std::string owner;     // the user who stored it ('' with auth off)
  std::string registry;  // host[:port]
  std::string username;
  std::string sealed;    // the sealed password's bytes (nonce, ciphertext, tag)
  int64_t updated_ms = 0;
};

// The job event types a webhook may subscribe to: a job ended, was held (a budget or its owner),
// went over its owner's budget while running, or was moved.
const std::vector<std::string_view>& notifiable_events();
bool is_notifiable_event(std::string_view type);

enum class DeliveryState { pending, delivered, failed };
std::string_view delivery_state_name(DeliveryState s);
std::optional<DeliveryState> parse_delivery_state(std::string_view s);

// One delivery of one job event to one webhook, and how its attempts went.
struct WebhookDeliveryRow {
  int64_t id = 0;
  int64_t webhook_id = 0;
  int64_t job_id = 0;
  int64_t event_seq = 0;
  std::string event;
  DeliveryState state = DeliveryState::pending;
  int attempts = 0;
  int64_t next_attempt_ms = 0;
  int last_status = 0;            // the receiver's last HTTP status; 0: it was not reached
  std::string last_error;
  int64_t created_ms = 0;
  std::optional<int64_t> finished_ms;
};

// A pending delivery with what sending it needs: the webhook and the job event it reports.
struct DueDelivery {
  WebhookDeliveryRow delivery;
  WebhookRow webhook;
  JobEventRow event;
  std::string job_name;
};

// A stored checkpoint of a job (docs/recovery.md): the blob lives in the daemon's blob store
// under `file`; the row says what it is. One row per (job, step).
struct CheckpointRow {
  int64_t job_id = 0;
  int64_t step = 0;               // global steps completed when it was taken
  int64_t bytes = 0;
  uint32_t crc32c = 0;            // CRC32C of the whole blob, verified on upload
  std::string file;               // blob name inside the job's folder of the blob store
  int64_t worker_id = 0;          // who uploaded it, under which lease epoch
  int64_t epoch = 0;
  int64_t created_ms = 0;
};

// A cloud instance the daemon launched or adopted (daemon/provisioning/provisioner.h; migration 4).
// The provider is the truth about whether it runs; this row is what the daemon knows and bills.
struct InstanceRow {
  std::string id;                 // the provider's id
  std::string provider;           // "sim" | "exec"
  std::string instance_type;
  std::string region;
  std::string zone;
  bool spot = false;
  std::string state = "pending";  // pending | running | shutting-down | terminated | ...
  int64_t job_id = 0;             // the job it was launched for (0: adopted, none)
  bool dedicated = false;         // it runs job_id alone, a command job (migration 15)
  double usd_per_hour = 0;        // what it is billed at
  double on_demand_usd_per_hour = 0;  // the same offer on demand (the spend report's reference)
  int64_t launched_ms = 0;
  std::optional<int64_t> ended_ms;     // when its billing ended, as the cloud reports it (else when seen terminated)
  std::optional<int64_t> idle_since_ms;  // its worker holds no lease since then
  std::optional<int64_t> notice_ms;    // an interruption notice was given
  std::string reason;             // why it was launched, ended or adopted
  // The ledger interval being accrued: [segment_start_ms, now) for segment_job_id (0: idle).
  int64_t segment_start_ms = 0;
  int64_t segment_job_id = 0;
  std::string segment_user;

  bool live() const { return state != "terminated"; }
};

// A Slurm batch job jobctld submitted (or adopted) for a job placed on a partition
// (daemon/slurm/slurm_launcher.h; migration 10).
struct SlurmJobRow {
  int64_t slurm_job_id = 0;
  int64_t job_id = 0;              // the jobctl job it runs (0: adopted without one)
  std::string partition;
  int gpus = 0;
  std::string state = "pending";   // pending | running | ended
  int64_t submitted_ms = 0;
  std::optional<int64_t> ended_ms;
  int restarts_at_launch = 0;      // Slurm's restart count when jobctld recorded it
  std::string event;               // how it ended: slurm/job_outcome.h's event
  std::string reason;              // why it was submitted, adopted or ended

  bool live() const { return state != "ended"; }
};

}  // namespace jobctl::daemon::store
