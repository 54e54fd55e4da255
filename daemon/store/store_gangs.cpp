// The gang_members table (migration 20): the nodes of a gang's current lease. WriteTxn methods run
// on the writer thread inside its transaction (store.h); Store::gang_members reads on a reader.
#include <string>

#include <nlohmann/json.hpp>

#include "daemon/store/store.h"

namespace jobctl::daemon::store {

namespace {

constexpr const char* kGangColumns = "job_id, rank, worker_id, epoch, gpus, address, expires_ms, master_port";

Expected<std::vector<GangMemberRow>> read_members(Statement& s) {
  return read_rows<GangMemberRow>(s, [](const Statement& row) -> Expected<GangMemberRow> {
    GangMemberRow m;
    m.job_id = row.column_int64(0);
    m.rank = static_cast<int>(row.column_int64(1));
    m.worker_id = row.column_int64(2);
    m.epoch = row.column_int64(3);
    const nlohmann::json gpus = nlohmann::json::parse(row.column_text(4), nullptr, false);
    if (!gpus.is_array())
      return make_error(ErrorCode::io, "job " + std::to_string(m.job_id) + " rank " + std::to_string(m.rank) +
                                           ": the stored gpus are not a JSON array");
    for (const auto& g : gpus)
      if (g.is_number_integer()) m.gpus.push_back(g.get<int>());
    m.address = row.column_text(5);
    m.expires_ms = row.column_int64(6);
    m.master_port = static_cast<int>(row.column_int64(7));
    return m;
  });
}

Expected<std::vector<GangMemberRow>> members_of(Connection& db, int64_t job_id) {
  auto p = db.prepare(std::string("SELECT ") + kGangColumns + " FROM gang_members WHERE job_id = ?1 ORDER BY rank");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id);
  return read_members(*s);
}

}  // namespace

Expected<std::vector<GangMemberRow>> WriteTxn::gang_members(int64_t job_id) { return members_of(db_, job_id); }

Status WriteTxn::put_gang_member(const GangMemberRow& m) {
  auto p = db_.prepare(std::string("INSERT OR REPLACE INTO gang_members (") + kGangColumns +
                       ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, m.job_id)
      .bind(2, static_cast<int64_t>(m.rank))
      .bind(3, m.worker_id)
      .bind(4, m.epoch)
      .bind(5, nlohmann::json(m.gpus).dump())
      .bind(6, m.address)
      .bind(7, m.expires_ms)
      .bind(8, static_cast<int64_t>(m.master_port));
  return s->run();
}

Status WriteTxn::delete_gang_members(int64_t job_id) {
  auto p = db_.prepare("DELETE FROM gang_members WHERE job_id = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, job_id);
  return s->run();
}

Expected<std::vector<GangMemberRow>> WriteTxn::expired_gang_members(int64_t now_ms) {
  auto p = db_.prepare(std::string("SELECT ") + kGangColumns +
                       " FROM gang_members WHERE rank > 0 AND expires_ms < ?1 ORDER BY job_id, rank");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, now_ms);
  return read_members(*s);
}

Expected<std::vector<GangMemberRow>> Store::gang_vacancies() {
  auto r = reader();
  if (!r) return r.error();
  auto p = (**r).prepare(std::string("SELECT ") + kGangColumns +
                         " FROM gang_members WHERE worker_id = 0 AND (job_id, epoch) IN "
                         "(SELECT id, lease_epoch FROM jobs WHERE state IN ('placed', 'running')) ORDER BY job_id, rank");
  if (!p) return p.error();
  StatementUse s(*p);
  return read_members(*s);
}

Expected<std::vector<GangMemberRow>> Store::gang_members(int64_t job_id) {
  auto r = reader();
  if (!r) return r.error();
  return members_of(**r, job_id);
}

}  // namespace jobctl::daemon::store
