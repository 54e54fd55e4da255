#include "daemon/store/row_codecs.h"

#include <nlohmann/json.hpp>

#include "base/crc32c.h"

#include "daemon/store/deflated_text.h"
#include "daemon/store/stored_spec_memo.h"

namespace jobctl::daemon::store {

std::string job_state_name(JobState s) { return std::string(scheduler::to_string(s)); }

Expected<JobState> stored_job_state(const std::string& name) {
  auto s = scheduler::parse_job_state(name);
  if (!s) return make_error(ErrorCode::io, "the database holds an unknown job state '" + name + "'");
  return *s;
}

Error corrupt(const std::string& row, const Error& e) {
  return make_error(ErrorCode::io, row + ": the stored " + (e.field.empty() ? std::string("value") : e.field) +
                                       " does not decode: " + e.message);
}

int64_t document_checksum(std::string_view bytes) { return crc32c::value(bytes.data(), bytes.size()); }

std::optional<int64_t> document_checksum(const std::optional<std::string>& bytes) {
  if (!bytes) return std::nullopt;
  return document_checksum(std::string_view(*bytes));
}

namespace {

Error damaged(const Statement& s, const char* table, const std::string& row, const char* what) {
  return make_error(ErrorCode::io, std::string("table ") + table + ", " + row + ": the stored " + what +
                                       " is damaged (its checksum does not match) in " + s.database_file() +
                                       "; docs/operations.md says how to restore it");
}

}  // namespace

Status verify_document(const Statement& s, const char* table, const std::string& row, const char* column,
                       const std::optional<std::string>& bytes, std::optional<int64_t> crc) {
  if (document_checksum(bytes) == crc) return {};
  return damaged(s, table, row, column);
}

Status verify_row(const Statement& s, const char* table, const std::string& row, bool matches) {
  if (matches) return {};
  return damaged(s, table, row, "metadata");
}

Expected<std::optional<PlacementChoice>> stored_choice(const std::optional<std::string>& text, int64_t job_id) {
  if (!text) return std::optional<PlacementChoice>{};
  auto c = placement_choice_from_json(nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false));
  if (!c) return corrupt("job " + std::to_string(job_id), c.error());
  return std::optional<PlacementChoice>(std::move(*c));
}

std::optional<std::string> choice_text(const std::optional<PlacementChoice>& c) {
  if (!c) return std::nullopt;
  return c->row.dump();
}

Expected<JobRow> read_job(const Statement& s) {
  JobRow r;
  r.id = s.column_int64(0);
  r.name = s.column_text(1);
  r.spec_json = s.column_text(2);
  auto st = stored_job_state(s.column_text(3));
  if (!st) return st.error();
  r.state = *st;
  r.priority = static_cast<int>(s.column_int64(4));
  r.resource_gpu = s.column_text(5);
  r.resource_gpus = static_cast<int>(s.column_int64(6));
  r.created_ms = s.column_int64(7);
  r.updated_ms = s.column_int64(8);
  r.worker_id = s.column_opt_int64(9);
  r.lease_epoch = s.column_int64(10);
  r.lease_expires_ms = s.column_opt_int64(11);
  r.progress_json = s.column_opt_text(12);
  r.result_json = s.column_opt_text(13);
  r.error = s.column_opt_text(14);
  r.recoveries = static_cast<int>(s.column_int64(15));
  // Every document against its checksum before any of it is decoded.
  const std::string row = "row " + std::to_string(r.id);
  const std::optional<std::string> chosen_text = s.column_opt_text(16);
  const bool placement_deflated = s.is_blob(17);  // asked before the bytes are read as text
  const std::optional<std::string> placement_bytes = s.column_opt_text(17);
  if (document_checksum(std::string_view(r.spec_json)) != s.column_opt_int64(20))
    return verify_document(s, "jobs", row, "spec", r.spec_json, s.column_opt_int64(20)).error();
  const std::pair<const char*, const std::optional<std::string>*> docs[] = {
      {"progress", &r.progress_json}, {"result", &r.result_json}, {"chosen", &chosen_text}};
  for (int i = 0; i < 3; ++i)
    if (Status st = verify_document(s, "jobs", row, docs[i].first, *docs[i].second, s.column_opt_int64(21 + i)); !st)
      return std::move(st).error();
  if (Status st = verify_document(s, "job_placements", row, "placement", placement_bytes, s.column_opt_int64(24)); !st)
    return std::move(st).error();
  if (!r.spec_json.empty()) {  // a listing reads no spec
    StoredSpecMemo& memo = StoredSpecMemo::process();
    r.spec = memo.find(r.id, r.spec_json);
    if (!r.spec) {
      auto spec = train::parse_job_spec(r.spec_json);
      if (spec) {
        r.spec = std::make_shared<const train::JobSpec>(std::move(*spec));
        memo.keep(r.id, r.spec_json, r.spec);
      } else {
        r.spec_error = spec.error().message;
      }
    }
  }
  auto chosen = stored_choice(chosen_text, r.id);
  if (!chosen) return chosen.error();
  r.chosen = std::move(*chosen);
  if (placement_deflated) {  // deflated (deflated_text.h); TEXT: written before documents were
    auto text = inflate_text(*placement_bytes);
    if (!text) return make_error(text.error().code, "job " + std::to_string(r.id) + ": " + text.error().message);
    r.placement_json = std::move(*text);
  } else {
    r.placement_json = placement_bytes;
  }
  r.array_id = s.column_opt_int64(18);
  r.resource_nodes = static_cast<int>(s.column_int64(19));
  r.image_digest = s.column_opt_text(25);
  return r;
}

namespace {

// Empty when `text` (absent is fine) is a JSON object, else what is wrong with it.
std::string json_object_problem(const std::optional<std::string>& text) {
  if (!text) return {};
  const nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return "is not JSON";
  if (!j.is_object()) return "is not a JSON object";
  return {};
}

}  // namespace

Status check_job_documents(const JobRow& job) {
  const std::pair<const char*, const std::optional<std::string>*> docs[] = {
      {"spec", nullptr}, {"progress", &job.progress_json}, {"result", &job.result_json},
      {"placement", &job.placement_json}};
  for (const auto& [name, text] : docs) {
    const std::string problem = json_object_problem(text ? *text : std::optional<std::string>(job.spec_json));
    if (!problem.empty())
      return make_error(ErrorCode::io, "row " + std::to_string(job.id) + ": the stored " + name + " " + problem);
  }
  return {};
}

Status check_event_detail(const JobEventRow& event) {
  const std::string problem = json_object_problem(event.detail_json);
  if (problem.empty()) return {};
  return make_error(ErrorCode::io, "row (job " + std::to_string(event.job_id) + ", seq " + std::to_string(event.seq) +
                                       "): the stored detail " + problem);
}

nlohmann::json stored_json(const std::optional<std::string>& text) {
  if (!text) return nullptr;
  nlohmann::json j = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? nlohmann::json(*text) : j;
}

Expected<JobEventRow> read_event(const Statement& s) {
  JobEventRow e;
  e.job_id = s.column_int64(0);
  e.seq = s.column_int64(1);
  e.time_ms = s.column_int64(2);
  e.type = s.column_text(3);
  if (auto f = s.column_opt_text(4)) {
    auto st = stored_job_state(*f);
    if (!st) return st.error();
    e.from_state = *st;
  }
  if (auto t = s.column_opt_text(5)) {
    auto st = stored_job_state(*t);
    if (!st) return st.error();
    e.to_state = *st;
  }
  const std::optional<std::string> detail = s.column_opt_text(6);
  if (Status st = verify_document(s, "job_events", "row (job " + std::to_string(e.job_id) + ", seq " +
                                                       std::to_string(e.seq) + ")", "detail", detail, s.column_opt_int64(7));
      !st)
    return std::move(st).error();
  e.detail_json = detail.value_or("{}");
  return e;
}

Expected<WorkerRow> read_worker(const Statement& s) {
  WorkerRow w;
  w.id = s.column_int64(0);
  w.name = s.column_text(1);
  const std::string what = "worker " + std::to_string(w.id);
  auto caps = capabilities_from_json(nlohmann::json::parse(s.column_text(2), nullptr, /*allow_exceptions=*/false),
                                     "capabilities");
  if (!caps) return corrupt(what, caps.error());
  w.capabilities = std::move(*caps);
  w.registered_ms = s.column_int64(3);
  w.last_seen_ms = s.column_int64(4);
  auto state = parse_worker_state(s.column_text(5));
  if (!state) return make_error(ErrorCode::io, what + ": the database holds an unknown worker state '" + s.column_text(5) + "'");
  w.state = *state;
  return w;
}

std::string capabilities_text(const WorkerCapabilities& c) { return to_json(c).dump(); }

void bind_job_columns(Statement& s, const JobRow& r) {
  // ?2.. in kJobColumns order (?1 is the id where one is bound).
  const std::optional<std::string> chosen = choice_text(r.chosen);
  s.bind(2, r.name)
      .bind(3, r.spec_json)
      .bind(4, job_state_name(r.state))
      .bind(5, r.priority)
      .bind(6, r.resource_gpu)
      .bind(7, r.resource_gpus)
      .bind(8, r.created_ms)
      .bind(9, r.updated_ms)
      .bind(10, r.worker_id)
      .bind(11, r.lease_epoch)
      .bind(12, r.lease_expires_ms)
      .bind(13, r.progress_json)
      .bind(14, r.result_json)
      .bind(15, r.error)
      .bind(16, r.recoveries)
      .bind(17, chosen)
      .bind(18, document_checksum(std::string_view(r.spec_json)))
      .bind(19, document_checksum(r.progress_json))
      .bind(20, document_checksum(r.result_json))
      .bind(21, document_checksum(chosen));
}

}  // namespace jobctl::daemon::store
