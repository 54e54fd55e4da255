// The store's row codecs: how the jobs, job_events and workers tables' columns become the typed
// rows of records.h and back. The one place those rows are decoded; the queries of each table
// family (store_jobs.cpp, store_workers.cpp, ...) select the columns in the order these read.
//
// Internal to daemon/store/. Thread safety: pure functions over one statement.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/expected.h"
#include "daemon/store/records.h"
#include "daemon/store/sqlite.h"

namespace jobctl::daemon::store {

std::string job_state_name(JobState s);
// A stored job state; an unknown one is an error (code io), never a default.
Expected<JobState> stored_job_state(const std::string& name);

// A stored JSON text column (an event's detail, a job's progress or result) as JSON; null when
// absent. jobctld wrote the text itself, so one that does not parse would be a bug: it is given
// back as the string rather than failing the answer it is part of.
nlohmann::json stored_json(const std::optional<std::string>& text);

// A job's machines (JobRow::resource_nodes), read from its spec: a gang's count is part of the spec
// and nothing else writes it.
#define JOBCTL_JOB_NODES_COLUMN \
  "CASE WHEN json_valid(spec) THEN COALESCE(json_extract(spec, '$.resources.nodes'), 1) ELSE 1 END"

// Every stored document has a checksum column beside it (CRC32C of its bytes as stored; NULL
// with an absent document), written where the row is encoded and verified where it is decoded:
// a byte changed inside a document, even one that still parses, is an error naming the table,
// the row, the column and the file rather than data served.

// The blobs' metadata rows (a checkpoint's, an output file's, a bundle's owner and size) have no
// document: each carries row_crc, the CRC32C of its columns' text joined by the unit separator,
// computed by SQL from the row itself, so that the write, the read and the migration that filled
// the rows stored before use this one expression.
#define JOBCTL_CHECKPOINT_ROW_CRC                                                                              \
  "crc32c(job_id || char(31) || step || char(31) || bytes || char(31) || crc32c || char(31) || file || "      \
  "char(31) || worker_id || char(31) || epoch || char(31) || created_ms)"
#define JOBCTL_OUTPUT_ROW_CRC \
  "crc32c(job_id || char(31) || path || char(31) || user || char(31) || bytes || char(31) || blob || char(31) || uploaded_ms)"
#define JOBCTL_BUNDLE_ROW_CRC "crc32c(sha256 || char(31) || user || char(31) || bytes || char(31) || stored_ms)"
#define JOBCTL_REGISTRY_CREDENTIAL_ROW_CRC \
  "crc32c(owner || char(31) || registry || char(31) || username || char(31) || hex(sealed) || char(31) || updated_ms)"

// The columns written by insert_job / update_job, in bind order (?2.. after the id).
inline constexpr const char* kJobColumns =
    "id, name, spec, state, priority, resource_gpu, resource_gpus, created_ms, updated_ms, "
    "worker_id, lease_epoch, lease_expires_ms, progress, result, error, recoveries, chosen, "
    "spec_crc, progress_crc, result_crc, chosen_crc";
// A single job read: every column and the placement document of job_placements.
inline constexpr const char* kJobReadColumns =
    "id, name, spec, state, priority, resource_gpu, resource_gpus, created_ms, updated_ms, "
    "worker_id, lease_epoch, lease_expires_ms, progress, result, error, recoveries, chosen, "
    "(SELECT placement FROM job_placements WHERE job_id = jobs.id), array_id, " JOBCTL_JOB_NODES_COLUMN
    ", spec_crc, progress_crc, result_crc, chosen_crc, "
    "(SELECT placement_crc FROM job_placements WHERE job_id = jobs.id), image_digest";
// A listing: no spec, no placement document, but both checked against their checksums by SQLite
// (the spec's checksum column reads as that of the empty text, 0, when it matches, and the
// placement's as NULL, that of no document): a damaged job is listed as damaged.
inline constexpr const char* kJobListColumns =
    "id, name, '', state, priority, resource_gpu, resource_gpus, created_ms, updated_ms, "
    "worker_id, lease_epoch, lease_expires_ms, progress, result, error, recoveries, chosen, NULL, array_id, "
    JOBCTL_JOB_NODES_COLUMN ", CASE WHEN crc32c(spec) IS spec_crc THEN 0 ELSE -1 END, progress_crc, result_crc, "
    "chosen_crc, (SELECT CASE WHEN crc32c(placement) IS placement_crc THEN NULL ELSE -1 END FROM job_placements "
    "WHERE job_id = jobs.id), image_digest";
// A worker read (never its secret's hash).
inline constexpr const char* kWorkerColumns = "id, name, capabilities, registered_ms, last_seen_ms, state";
inline constexpr const char* kEventColumns = "job_id, seq, time_ms, type, from_state, to_state, detail, detail_crc";

// A document's checksum column: the CRC32C of its bytes (SQL's crc32c() in sqlite.cpp, which the
// migration that added the columns used, gives the same); absent with the document.
int64_t document_checksum(std::string_view bytes);
std::optional<int64_t> document_checksum(const std::optional<std::string>& bytes);
// An error (code io) naming `table`, `row`, `column` and the statement's file when `bytes` do not
// match the stored checksum `crc`.
Status verify_document(const Statement& s, const char* table, const std::string& row, const char* column,
                       const std::optional<std::string>& bytes, std::optional<int64_t> crc);

// The same error for a metadata row whose `(JOBCTL_..._ROW_CRC) IS row_crc` column read false.
Status verify_row(const Statement& s, const char* table, const std::string& row, bool matches);

// A row selected with kJobReadColumns or kJobListColumns.
Expected<JobRow> read_job(const Statement& s);
// Binds ?2.. in kJobColumns order (?1 is the id where one is bound).
void bind_job_columns(Statement& s, const JobRow& r);
// For `jobctld --check` (database_check.h): the job's JSON documents (spec, progress, result,
// placement) parse as JSON objects; the error names the row and the document.
Status check_job_documents(const JobRow& job);
// A row selected with kEventColumns.
Expected<JobEventRow> read_event(const Statement& s);
// For `jobctld --check`: the event's detail parses as a JSON object.
Status check_event_detail(const JobEventRow& event);
// A row selected with kWorkerColumns.
Expected<WorkerRow> read_worker(const Statement& s);
// The capabilities column's text.
std::string capabilities_text(const WorkerCapabilities& c);

// The chosen column (a job's PlacementChoice): decoded, an error naming the job when it does not
// decode; and written back as the row placement wrote.
Expected<std::optional<PlacementChoice>> stored_choice(const std::optional<std::string>& text, int64_t job_id);
std::optional<std::string> choice_text(const std::optional<PlacementChoice>& c);
// An error (code io) naming the row whose stored value `e` describes.
Error corrupt(const std::string& row, const Error& e);

}  // namespace jobctl::daemon::store
