// The store's part of the cost ledger (daemon/ledger/ledger.h). Declared in
// store.h; the table comes from migration 2.
#include "daemon/store/store.h"

namespace jobctl::daemon::store {

namespace {

constexpr const char* kLedgerColumns =
    "resource, start_ms, end_ms, job_id, kind, usd_per_hour, on_demand_usd_per_hour, user, "
    "billed_seconds, usd, on_demand_usd";

}  // namespace

Status WriteTxn::upsert_ledger(const LedgerRecord& r) {
  auto p = db_.prepare(std::string("INSERT OR REPLACE INTO ledger(") + kLedgerColumns +
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, r.resource).bind(2, r.start_ms).bind(3, r.end_ms).bind(4, r.job_id).bind(5, r.kind)
      .bind(6, r.usd_per_hour).bind(7, r.on_demand_usd_per_hour).bind(8, r.user)
      .bind(9, r.billed_seconds).bind(10, r.usd).bind(11, r.on_demand_usd);
  return s->run();
}

Expected<std::vector<LedgerRecord>> Store::ledger_rows(int64_t from_ms, int64_t to_ms) {
  auto r = reader();
  if (!r) return r.error();
  // Overlap: start < to and end > from (a zero-length row at `from` counts too).
  auto p = (**r).prepare(std::string("SELECT ") + kLedgerColumns +
                         " FROM ledger WHERE start_ms < ?2 AND (end_ms > ?1 OR "
                         "(end_ms = start_ms AND start_ms >= ?1)) ORDER BY start_ms, resource");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, from_ms).bind(2, to_ms);
  std::vector<LedgerRecord> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    const Statement& st = **p;
    LedgerRecord l;
    l.resource = st.column_text(0);
    l.start_ms = st.column_int64(1);
    l.end_ms = st.column_int64(2);
    l.job_id = st.column_int64(3);
    l.kind = st.column_text(4);
    l.usd_per_hour = st.column_double(5);
    l.on_demand_usd_per_hour = st.column_double(6);
    l.user = st.column_text(7);
    l.billed_seconds = st.column_int64(8);
    l.usd = st.column_double(9);
    l.on_demand_usd = st.column_double(10);
    out.push_back(std::move(l));
  }
  return out;
}

Expected<double> Store::ledger_job_total_usd(int64_t job_id) {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare("SELECT COALESCE(SUM(usd), 0) FROM ledger WHERE job_id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id);
  auto row = s->step();
  if (!row) return row.error();
  return (**p).column_double(0);
}

Expected<std::map<std::string, double>> Store::ledger_totals_by_resource(std::string_view prefix) {
  auto r = reader();
  if (!r) return r.error();
  // Prefix match as a range on the primary key (resource, start_ms): no LIKE, no escaping.
  auto p = (**r).prepare(
      "SELECT resource, SUM(usd) FROM ledger WHERE resource >= ?1 AND resource < ?1 || char(1114111) "
      "GROUP BY resource");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, prefix);
  std::map<std::string, double> out;
  for (;;) {
    auto row = s->step();
    if (!row) return row.error();
    if (!*row) break;
    out[s->column_text(0)] = s->column_double(1);
  }
  return out;
}

}  // namespace jobctl::daemon::store
