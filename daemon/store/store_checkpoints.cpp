// The checkpoints table and the lease-expiry queries (migration 3). WriteTxn methods:
// they run on the writer thread inside its transaction (store.h).
#include <string>

#include "daemon/store/row_codecs.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::store {

Expected<std::vector<CheckpointRow>> WriteTxn::checkpoints(int64_t job_id) {
  auto p = db_.prepare(
      "SELECT job_id, step, bytes, crc32c, file, worker_id, epoch, created_ms, (" JOBCTL_CHECKPOINT_ROW_CRC
      ") IS row_crc FROM checkpoints WHERE job_id = ?1 ORDER BY step DESC");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id);
  return read_rows<CheckpointRow>(*s, [](const Statement& row) -> Expected<CheckpointRow> {
    if (Status st = verify_row(row, "checkpoints", "row (job " + std::to_string(row.column_int64(0)) + ", step " +
                                                       std::to_string(row.column_int64(1)) + ")",
                               row.column_int64(8) == 1);
        !st)
      return std::move(st).error();
    CheckpointRow c;
    c.job_id = row.column_int64(0);
    c.step = row.column_int64(1);
    c.bytes = row.column_int64(2);
    c.crc32c = static_cast<uint32_t>(row.column_int64(3));
    c.file = row.column_text(4);
    c.worker_id = row.column_int64(5);
    c.epoch = row.column_int64(6);
    c.created_ms = row.column_int64(7);
    return c;
  });
}

Status WriteTxn::put_checkpoint(const CheckpointRow& c) {
  auto p = db_.prepare(
      "INSERT OR REPLACE INTO checkpoints(job_id, step, bytes, crc32c, file, worker_id, epoch, created_ms, row_crc) "
      "SELECT *, " JOBCTL_CHECKPOINT_ROW_CRC " FROM (SELECT ?1 AS job_id, ?2 AS step, ?3 AS bytes, ?4 AS crc32c, "
      "?5 AS file, ?6 AS worker_id, ?7 AS epoch, ?8 AS created_ms)");
  if (!p) return p.error();
  return (*p)
      ->bind(1, c.job_id)
      .bind(2, c.step)
      .bind(3, c.bytes)
      .bind(4, static_cast<int64_t>(c.crc32c))
      .bind(5, c.file)
      .bind(6, c.worker_id)
      .bind(7, c.epoch)
      .bind(8, c.created_ms)
      .run();
}

Status WriteTxn::delete_checkpoint(int64_t job_id, int64_t step) {
  auto p = db_.prepare("DELETE FROM checkpoints WHERE job_id = ?1 AND step = ?2");
  if (!p) return p.error();
  return (*p)->bind(1, job_id).bind(2, step).run();
}

Expected<std::vector<int64_t>> WriteTxn::jobs_with_expired_leases(int64_t now_ms) {
  auto p = db_.prepare(
      "SELECT id FROM jobs WHERE lease_expires_ms IS NOT NULL AND lease_expires_ms < ?1 "
      "AND state IN ('placed', 'running') ORDER BY id");
  if (!p) return p.error();
  (*p)->bind(1, now_ms);
  return first_column_ints(*p);
}

Expected<std::vector<int64_t>> WriteTxn::jobs_leased_to(int64_t worker_id) {
  auto p = db_.prepare(
      "SELECT id FROM jobs WHERE state IN ('placed', 'running') AND "
      "(worker_id = ?1 OR id IN (SELECT job_id FROM gang_members WHERE worker_id = ?1)) ORDER BY id");
  if (!p) return p.error();
  (*p)->bind(1, worker_id);
  return first_column_ints(*p);
}

Expected<std::vector<int64_t>> WriteTxn::finished_jobs_with_checkpoints(int64_t keep_final_since_ms) {
  // CROSS JOIN makes checkpoints the outer loop (SQLite keeps the written order for it): the sweep
  // then costs the checkpoints stored, which it keeps few, and one job lookup each. With a plain
  // JOIN the planner walked every finished job from the index jobs(state, id) instead, a scan of
  // nearly the whole table at 1,000,000 jobs stored, every sweep of an idle daemon. A succeeded
  // job that keeps only its final checkpoint has nothing to sweep yet and is left out.
  auto p = db_.prepare(
      "SELECT c.job_id FROM checkpoints c CROSS JOIN jobs j ON j.id = c.job_id "
      "WHERE j.state IN ('succeeded', 'failed', 'cancelled') GROUP BY c.job_id "
      "HAVING NOT (MAX(j.state) = 'succeeded' AND MAX(j.updated_ms) >= ?1 AND COUNT(*) = 1) ORDER BY c.job_id");
  if (!p) return p.error();
  (*p)->bind(1, keep_final_since_ms);
  return first_column_ints(*p);
}

Expected<int64_t> WriteTxn::rebase_active_leases(int64_t expires_ms) {
  auto p = db_.prepare(
      "UPDATE jobs SET lease_expires_ms = ?1 WHERE state IN ('placed', 'running') "
      "AND lease_expires_ms IS NOT NULL AND lease_expires_ms <> ?1");
  if (!p) return p.error();
  if (auto st = (*p)->bind(1, expires_ms).run(); !st) return st.error();
  const auto extended = static_cast<int64_t>(db_.changes());
  // A gang's other nodes get the same time to reconnect.
  // (A vacant rank keeps a later replacement deadline: its window is the gang's assembly time.)
  auto members = db_.prepare("UPDATE gang_members SET expires_ms = ?1 WHERE expires_ms < ?1 OR worker_id <> 0");
  if (!members) return members.error();
  if (auto st = (*members)->bind(1, expires_ms).run(); !st) return st.error();
  return extended;
}

}  // namespace jobctl::daemon::store
