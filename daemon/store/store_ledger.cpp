// The store's part of the cost ledger (daemon/ledger/ledger.h). Declared in store.h; the table
// comes from migration 2, its `open` column from migration 8.
#include "daemon/store/store.h"

#include <algorithm>

namespace jobctl::daemon::store {

namespace {

constexpr const char* kLedgerColumns =
    "resource, start_ms, end_ms, job_id, kind, usd_per_hour, on_demand_usd_per_hour, user, "
    "billed_seconds, usd, on_demand_usd, open";

// An open row's end when read at ?1 (now): the rows below bill it as if it ended then.
constexpr const char* kEnd = "(CASE WHEN open THEN MAX(start_ms, ?1) ELSE end_ms END)";
// Its billed dollars: whole seconds, rounded up, as Ledger::accrue_in computes a closed row's.
constexpr const char* kUsd =
    "(CASE WHEN open THEN ((MAX(start_ms, ?1) - start_ms + 999) / 1000) * usd_per_hour / 3600.0 ELSE usd END)";

LedgerRecord read_row(const Statement& st) {
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
  l.open = st.column_int64(11) != 0;
  return l;
}

// An open row as it stands at now_ms: ending then, billed to then.
void bill_open_row(LedgerRecord& l, int64_t now_ms) {
  if (!l.open) return;
  l.end_ms = std::max(l.start_ms, now_ms);
  l.billed_seconds = (l.end_ms - l.start_ms + 999) / 1000;
  l.usd = static_cast<double>(l.billed_seconds) * l.usd_per_hour / 3600.0;
  l.on_demand_usd = static_cast<double>(l.billed_seconds) * l.on_demand_usd_per_hour / 3600.0;
}

// Every row a bound statement selects (kLedgerColumns), open ones billed up to now_ms.
Expected<std::vector<LedgerRecord>> billed_rows(Statement& st, int64_t now_ms) {
  return read_rows<LedgerRecord>(st, [now_ms](const Statement& row) {
    LedgerRecord l = read_row(row);
    bill_open_row(l, now_ms);
    return l;
  });
}

}  // namespace

Status WriteTxn::upsert_ledger(const LedgerRecord& r) {
  auto p = db_.prepare(std::string("INSERT OR REPLACE INTO ledger(") + kLedgerColumns +
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, r.resource).bind(2, r.start_ms).bind(3, r.end_ms).bind(4, r.job_id).bind(5, r.kind)
      .bind(6, r.usd_per_hour).bind(7, r.on_demand_usd_per_hour).bind(8, r.user)
      .bind(9, r.billed_seconds).bind(10, r.usd).bind(11, r.on_demand_usd).bind(12, int64_t{r.open ? 1 : 0});
  return s->run();
}

Expected<std::vector<LedgerRecord>> WriteTxn::open_ledger_rows(int64_t job_id) {
  auto p = db_.prepare(std::string("SELECT ") + kLedgerColumns +
                       " FROM ledger WHERE job_id = ?1 AND open = 1 ORDER BY resource, start_ms");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id);
  return read_rows<LedgerRecord>(*s, read_row);
}

Expected<std::vector<LedgerRecord>> Store::ledger_rows(int64_t from_ms, int64_t to_ms) {
  auto r = reader();
  if (!r) return r.error();
  const int64_t now = clock_.now_ms();
  // Overlap: start < to and end > from (a zero-length row at `from` counts too).
  auto p = (**r).prepare(std::string("SELECT ") + kLedgerColumns + " FROM ledger WHERE start_ms < ?3 AND (" + kEnd +
                         " > ?2 OR (" + kEnd + " = start_ms AND start_ms >= ?2)) ORDER BY start_ms, resource");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, now).bind(2, from_ms).bind(3, to_ms);
  return billed_rows(*s, now);
}

Expected<std::vector<LedgerRecord>> Store::ledger_rows_of_job(int64_t job_id) {
  auto r = reader();
  if (!r) return r.error();
  const int64_t now = clock_.now_ms();
  auto p = (**r).prepare(std::string("SELECT ") + kLedgerColumns + " FROM ledger WHERE job_id = ?1 ORDER BY start_ms, resource");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id);
  return billed_rows(*s, now);
}

Expected<double> Store::ledger_job_total_usd(int64_t job_id) {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(std::string("SELECT COALESCE(SUM(") + kUsd + "), 0) FROM ledger WHERE job_id = ?2");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, clock_.now_ms()).bind(2, job_id);
  auto row = s->step();
  if (!row) return row.error();
  return (**p).column_double(0);
}

Expected<std::map<int64_t, LedgerJobTotal>> Store::ledger_job_totals(int64_t first_id, int64_t last_id) {
  auto r = reader();
  if (!r) return r.error();
  // An open row's on-demand dollars, as bill_open_row computes them. A row billed with no
  // on-demand figure has no on-demand equivalent (ledger::ledger_row_has_on_demand_equivalent).
  const std::string on_demand =
      "(CASE WHEN open THEN ((MAX(start_ms, ?1) - start_ms + 999) / 1000) * on_demand_usd_per_hour / 3600.0 "
      "ELSE on_demand_usd END)";
  auto p = (**r).prepare(std::string("SELECT job_id, SUM(") + kUsd + "), SUM(" + on_demand + "), SUM(CASE WHEN " +
                         kUsd + " > 0 AND " + on_demand + " <= 0 THEN " + kUsd +
                         " ELSE 0 END) FROM ledger WHERE job_id BETWEEN ?2 AND ?3 GROUP BY job_id");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, clock_.now_ms()).bind(2, first_id).bind(3, last_id);
  std::map<int64_t, LedgerJobTotal> out;
  Status read = for_each_row(*s, [&out](const Statement& row) {
    out[row.column_int64(0)] = LedgerJobTotal{row.column_double(1), row.column_double(2), row.column_double(3)};
  });
  if (!read) return std::move(read).error();
  return out;
}

Expected<std::map<std::string, double>> Store::ledger_totals_by_resource(std::string_view prefix) {
  auto r = reader();
  if (!r) return r.error();
  // Prefix match as a range on the primary key (resource, start_ms): no LIKE, no escaping.
  auto p = (**r).prepare(std::string("SELECT resource, SUM(") + kUsd +
                         ") FROM ledger WHERE resource >= ?2 AND resource < ?2 || char(1114111) GROUP BY resource");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, clock_.now_ms()).bind(2, prefix);
  std::map<std::string, double> out;
  Status read = for_each_row(*s, [&out](const Statement& row) { out[row.column_text(0)] = row.column_double(1); });
  if (!read) return std::move(read).error();
  return out;
}

}  // namespace jobctl::daemon::store
