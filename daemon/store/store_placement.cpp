// The store's part of placement: the jobs waiting for a worker (queued, or placed and
// not leased yet), and the efficiency calibration. Declared in store.h; the calibration table
// comes from migration 2.
#include "daemon/store/store.h"

#include <map>

#include "daemon/store/row_codecs.h"  // JOBCTL_JOB_NODES_COLUMN

namespace jobctl::daemon::store {

Status WriteTxn::put_calibration(const CalibrationRecord& row) {
  auto p = db_.prepare(
      "INSERT INTO calibration(gpu_model, model_kind, log_efficiency, samples, updated_ms, overhead_s, "
      "overhead_samples, window) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(gpu_model, model_kind) DO UPDATE SET "
      "log_efficiency = excluded.log_efficiency, samples = excluded.samples, "
      "updated_ms = excluded.updated_ms, overhead_s = excluded.overhead_s, "
      "overhead_samples = excluded.overhead_samples, window = excluded.window");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, row.gpu_model).bind(2, row.model_kind).bind(3, row.log_efficiency).bind(4, row.samples)
      .bind(5, row.updated_ms).bind(6, row.overhead_seconds).bind(7, row.overhead_samples)
      .bind(8, row.window.is_null() ? std::string() : row.window.dump());
  return s->run();
}

Expected<std::vector<CalibrationRecord>> Store::calibrations() {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(
      "SELECT gpu_model, model_kind, log_efficiency, samples, updated_ms, overhead_s, overhead_samples, window "
      "FROM calibration "
      "ORDER BY gpu_model, model_kind");
  if (!p) return p.error();
  StatementUse s(*p);
  return read_rows<CalibrationRecord>(*s, [](const Statement& st) {
    nlohmann::json window;
    if (const std::string text = st.column_text(7); !text.empty()) {
      window = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      if (!window.is_object()) window = nullptr;
    }
    return CalibrationRecord{st.column_text(0), st.column_text(1), st.column_double(2), st.column_int64(3),
                             st.column_int64(4), st.column_double(5), st.column_int64(6), std::move(window)};
  });
}

namespace {

// A stored spec's image and its mounts (as JSON text), for matching workers.
#define JOBCTL_SPEC_IMAGE_COLUMNS                                                      \
  "CASE WHEN json_valid(spec) THEN json_extract(spec, '$.image') IS NOT NULL ELSE 0 END, " \
  "CASE WHEN json_valid(spec) THEN COALESCE(json_extract(spec, '$.mounts'), '') ELSE '' END"

// The mounts of a stored (canonical) spec: [{"source", "target", "writable"?}, ...].
Expected<std::vector<train::MountSpec>> decode_mounts(const std::string& text) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_array()) return make_error(ErrorCode::io, "not an array");
  std::vector<train::MountSpec> out;
  for (const auto& m : j) {
    if (!m.is_object() || !m.contains("source") || !m["source"].is_string() || !m.contains("target") ||
        !m["target"].is_string())
      return make_error(ErrorCode::io, "an entry is not {source, target}");
    const auto w = m.find("writable");
    out.push_back({m["source"].get<std::string>(), m["target"].get<std::string>(), w != m.end() && w->is_boolean() && w->get<bool>()});
  }
  return out;
}

// Jobs waiting for a worker, in id order, with what matching needs. `placed`: jobs placed but not
// leased, with their chosen option from the chosen column (the placement's chosen candidate, a
// small JSON object; SQLite's json_extract reads the five fields); otherwise queued jobs.
Expected<std::vector<QueuedJobRow>> waiting_jobs(Connection& db, bool placed) {
  auto p = db.prepare(placed ? "SELECT id, priority, created_ms, resource_gpu, resource_gpus, "
                               "COALESCE(json_extract(chosen, '$.option'), ''), "
                               "COALESCE(json_extract(chosen, '$.gpu'), ''), "
                               "COALESCE(json_extract(chosen, '$.instance_type'), ''), "
                               "CASE WHEN json_valid(spec) THEN json_extract(spec, '$.command') IS NOT NULL ELSE 0 END, "
                               "COALESCE(json_extract(chosen, '$.estimated_hours'), 0), " JOBCTL_JOB_NODES_COLUMN
                               ", COALESCE(json_extract(chosen, '$.zone'), ''), " JOBCTL_SPEC_IMAGE_COLUMNS
                               " FROM jobs WHERE state = 'placed' AND worker_id IS NULL ORDER BY id"
                             : "SELECT id, priority, created_ms, resource_gpu, resource_gpus, '', '', '', "
                               "CASE WHEN json_valid(spec) THEN json_extract(spec, '$.command') IS NOT NULL ELSE 0 END, 0, "
                               JOBCTL_JOB_NODES_COLUMN ", '', " JOBCTL_SPEC_IMAGE_COLUMNS
                               " FROM jobs WHERE state = 'queued' ORDER BY id");
  if (!p) return p.error();
  StatementUse s(*p);
  return read_rows<QueuedJobRow>(*s, [](const Statement& row) -> Expected<QueuedJobRow> {
    QueuedJobRow q;
    q.id = row.column_int64(0);
    q.priority = static_cast<int>(row.column_int64(1));
    q.created_ms = row.column_int64(2);
    q.resource_gpu = row.column_text(3);
    q.resource_gpus = static_cast<int>(row.column_int64(4));
    if (const std::string option = row.column_text(5); !option.empty()) {
      q.placement_option = scheduler::parse_option_name(option);
      if (!q.placement_option)
        return make_error(ErrorCode::io, "job " + std::to_string(q.id) + ": the stored chosen.option '" + option +
                                             "' is not local, on_demand, spot or slurm");
    }
    q.placement_gpu = row.column_text(6);
    q.placement_instance_type = row.column_text(7);
    q.command = row.column_int64(8) != 0;  // a spec that is not JSON (never stored by submit) reads as no command
    q.placement_estimated_hours = row.column_double(9);
    q.nodes = static_cast<int>(row.column_int64(10));
    q.placement_zone = row.column_text(11);
    q.image = row.column_int64(12) != 0;
    if (const std::string mounts = row.column_text(13); !mounts.empty()) {
      auto decoded = decode_mounts(mounts);
      if (!decoded) return make_error(ErrorCode::io, "job " + std::to_string(q.id) + ": its spec's mounts: " + decoded.error().message);
      q.mounts = std::move(*decoded);
    }
    return q;
  });
}

}  // namespace

Expected<std::vector<QueuedJobRow>> Store::queued_jobs() {
  auto r = reader();
  if (!r) return r.error();
  return waiting_jobs(**r, false);
}

Expected<std::vector<int64_t>> Store::queued_job_ids() {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare("SELECT id FROM jobs WHERE state = 'queued' ORDER BY id");
  if (!p) return p.error();
  return first_column_ints(*p);
}

Expected<std::vector<std::pair<int64_t, std::optional<std::string>>>> Store::queued_unplaceable_keys() {
  auto r = reader();
  if (!r) return r.error();
  Connection& db = **r;
  // Two index reads from one snapshot, merged here: the key sits after kilobytes of placement
  // document in its row, so a join would read every queued job's document (overflow pages
  // included); the partial index job_placements(unplaceable_key) holds just the keys (named: with
  // no statistics SQLite may prefer scanning the table).
  if (auto st = db.exec("BEGIN"); !st) return st.error();
  std::vector<std::pair<int64_t, std::optional<std::string>>> out;
  std::map<int64_t, std::string> keys;
  Status read = [&]() -> Status {
    auto ids = db.prepare("SELECT id FROM jobs WHERE state = 'queued' ORDER BY id");
    if (!ids) return ids.error();
    auto queued = first_column_ints(*ids);
    if (!queued) return queued.error();
    auto p = db.prepare("SELECT job_id, unplaceable_key FROM job_placements INDEXED BY job_placements_unplaceable_key "
                        "WHERE unplaceable_key IS NOT NULL");
    if (!p) return p.error();
    StatementUse s(*p);
    Status keyed = for_each_row(*s, [&keys](const Statement& row) { keys.emplace(row.column_int64(0), row.column_text(1)); });
    if (!keyed) return keyed;
    out.reserve(queued->size());
    for (int64_t id : *queued) {
      auto key = keys.find(id);  // a key of a job no longer queued is stale: left out
      out.emplace_back(id, key == keys.end() ? std::nullopt : std::optional<std::string>(std::move(key->second)));
    }
    return {};
  }();
  db.reset_all();
  (void)db.exec("COMMIT");
  if (!read) return read.error();
  return out;
}

Expected<std::vector<QueuedJobRow>> Store::placed_waiting_jobs() {
  auto r = reader();
  if (!r) return r.error();
  return waiting_jobs(**r, true);
}

}  // namespace jobctl::daemon::store
