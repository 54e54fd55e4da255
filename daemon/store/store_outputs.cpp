// The job_outputs table (migration 16): a job's output files. WriteTxn methods: they run on the
// writer thread inside its transaction (store.h).
#include <string>

#include "daemon/store/row_codecs.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::store {

Expected<std::vector<OutputRow>> WriteTxn::outputs(int64_t job_id) {
  auto p = db_.prepare(
      "SELECT job_id, path, user, bytes, blob, uploaded_ms, (" JOBCTL_OUTPUT_ROW_CRC ") IS row_crc FROM job_outputs "
      "WHERE job_id = ?1 ORDER BY path");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id);
  return read_rows<OutputRow>(*s, [](const Statement& row) -> Expected<OutputRow> {
    if (Status st = verify_row(row, "job_outputs", "row (job " + std::to_string(row.column_int64(0)) + ", path " +
                                                       row.column_text(1) + ")",
                               row.column_int64(6) == 1);
        !st)
      return std::move(st).error();
    OutputRow o;
    o.job_id = row.column_int64(0);
    o.path = row.column_text(1);
    o.user = row.column_text(2);
    o.bytes = row.column_int64(3);
    o.blob = row.column_text(4);
    o.uploaded_ms = row.column_int64(5);
    return o;
  });
}

Status WriteTxn::put_output(const OutputRow& o) {
  auto p = db_.prepare(
      "INSERT OR REPLACE INTO job_outputs(job_id, path, user, bytes, blob, uploaded_ms, row_crc) SELECT *, "
      JOBCTL_OUTPUT_ROW_CRC " FROM (SELECT ?1 AS job_id, ?2 AS path, ?3 AS user, ?4 AS bytes, ?5 AS blob, "
      "?6 AS uploaded_ms)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, o.job_id).bind(2, o.path).bind(3, o.user).bind(4, o.bytes).bind(5, o.blob).bind(6, o.uploaded_ms);
  return s->run();
}

Expected<int64_t> WriteTxn::output_bytes_of_user(const std::string& user) {
  auto p = db_.prepare("SELECT COALESCE(SUM(bytes), 0), COALESCE(MIN((" JOBCTL_OUTPUT_ROW_CRC
                       ") IS row_crc), 1) FROM job_outputs WHERE user = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, user);
  auto row = s->step();
  if (!row) return row.error();
  if (Status st = verify_row(**p, "job_outputs", "a row of user '" + user + "'", (*p)->column_int64(1) == 1); !st)
    return std::move(st).error();
  return (*p)->column_int64(0);
}

Expected<std::vector<int64_t>> WriteTxn::jobs_with_outputs_finished_before(int64_t cutoff_ms) {
  auto p = db_.prepare(
      "SELECT DISTINCT o.job_id FROM job_outputs o CROSS JOIN jobs j ON j.id = o.job_id "
      "WHERE j.state IN ('succeeded', 'failed', 'cancelled') AND j.updated_ms < ?1 ORDER BY o.job_id");
  if (!p) return p.error();
  (*p)->bind(1, cutoff_ms);
  return first_column_ints(*p);
}

Expected<std::vector<int64_t>> WriteTxn::jobs_with_outputs() {
  auto p = db_.prepare("SELECT DISTINCT job_id FROM job_outputs ORDER BY job_id");
  if (!p) return p.error();
  return first_column_ints(*p);
}

Status WriteTxn::delete_outputs(int64_t job_id, const std::optional<std::string>& path) {
  auto p = db_.prepare(path ? "DELETE FROM job_outputs WHERE job_id = ?1 AND path = ?2"
                            : "DELETE FROM job_outputs WHERE job_id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id);
  if (path) s->bind(2, *path);
  return s->run();
}

}  // namespace jobctl::daemon::store
