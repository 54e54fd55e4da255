// The bundles table (migration 14): who stored which code bundle. WriteTxn methods run on the
// writer thread inside its transaction (store.h); Store::bundle_size reads on a pooled reader.
#include <string>

#include "daemon/store/row_codecs.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::store {

Expected<int64_t> WriteTxn::bundle_bytes_of(const std::string& user) {
  auto p = db_.prepare("SELECT COALESCE(SUM(bytes), 0), COALESCE(MIN((" JOBCTL_BUNDLE_ROW_CRC
                       ") IS row_crc), 1) FROM bundles WHERE user = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, user);
  auto row = s->step();
  if (!row) return row.error();
  if (Status st = verify_row(**p, "bundles", "a row of user '" + user + "'", (*p)->column_int64(1) == 1); !st)
    return std::move(st).error();
  return (*p)->column_int64(0);
}

Expected<bool> WriteTxn::put_bundle(const BundleRow& row) {
  auto p = db_.prepare("INSERT OR IGNORE INTO bundles(sha256, user, bytes, stored_ms, row_crc) SELECT *, " JOBCTL_BUNDLE_ROW_CRC
                       " FROM (SELECT ?1 AS sha256, ?2 AS user, ?3 AS bytes, ?4 AS stored_ms)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, row.sha256).bind(2, row.user).bind(3, row.bytes).bind(4, row.stored_ms);
  if (auto st = s->run(); !st) return st.error();
  return db_.changes() == 1;
}

Expected<std::vector<std::string>> WriteTxn::bundle_shas() {
  auto p = db_.prepare("SELECT DISTINCT sha256 FROM bundles ORDER BY sha256");
  if (!p) return p.error();
  return first_column_texts(*p);
}

Expected<std::vector<std::string>> WriteTxn::bundles_unused_since(int64_t cutoff_ms) {
  // A job names its bundle in its spec ("bundle": the SHA-256); any job whose spec holds the
  // digest counts, which can only keep a bundle longer, never delete one still named. The scan of
  // the jobs runs per stale bundle, in the housekeeping pass (a few times an hour).
  auto p = db_.prepare(
      "SELECT b.sha256 FROM bundles b GROUP BY b.sha256 HAVING MAX(b.stored_ms) < ?1 AND NOT EXISTS ("
      "SELECT 1 FROM jobs j WHERE instr(j.spec, b.sha256) > 0 AND "
      "(j.state NOT IN ('succeeded', 'failed', 'cancelled') OR j.updated_ms >= ?1)) ORDER BY b.sha256");
  if (!p) return p.error();
  (*p)->bind(1, cutoff_ms);
  return first_column_texts(*p);
}

Status WriteTxn::delete_bundle(const std::string& sha256, const std::optional<std::string>& user) {
  auto p = db_.prepare(user ? "DELETE FROM bundles WHERE sha256 = ?1 AND user = ?2" : "DELETE FROM bundles WHERE sha256 = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, sha256);
  if (user) s->bind(2, *user);
  return s->run();
}

Expected<std::optional<int64_t>> Store::bundle_size(const std::string& sha256) {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare("SELECT MAX(bytes), MIN((" JOBCTL_BUNDLE_ROW_CRC
                         ") IS row_crc) FROM bundles WHERE sha256 = ?1 HAVING COUNT(*) > 0");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, sha256);
  return read_first_row<int64_t>(*s, [&](const Statement& row) -> Expected<int64_t> {
    if (Status st = verify_row(row, "bundles", "a row of bundle " + sha256, row.column_int64(1) == 1); !st)
      return std::move(st).error();
    return row.column_int64(0);
  });
}

}  // namespace jobctl::daemon::store
