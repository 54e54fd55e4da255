// The registry_credentials table (migration 24): each user's container registry logins, the
// password sealed by the caller (auth/credential_seal.h). Declared in store.h.
#include <string>

#include "daemon/store/row_codecs.h"
#include "daemon/store/store.h"

namespace jobctl::daemon::store {

namespace {

constexpr const char* kCredentialColumns =
    "owner, registry, username, sealed, updated_ms, (" JOBCTL_REGISTRY_CREDENTIAL_ROW_CRC ") IS row_crc";

Expected<RegistryCredentialRow> read_credential(const Statement& s) {
  RegistryCredentialRow r;
  r.owner = s.column_text(0);
  r.registry = s.column_text(1);
  r.username = s.column_text(2);
  r.sealed = s.column_text(3);
  r.updated_ms = s.column_int64(4);
  if (Status st = verify_row(s, "registry_credentials", "the row of user '" + r.owner + "' for " + r.registry,
                             s.column_int64(5) == 1);
      !st)
    return std::move(st).error();
  return r;
}

}  // namespace

Status WriteTxn::put_registry_credential(const RegistryCredentialRow& row) {
  auto p = db_.prepare("INSERT OR REPLACE INTO registry_credentials (owner, registry, username, sealed, updated_ms, row_crc) "
                       "SELECT *, " JOBCTL_REGISTRY_CREDENTIAL_ROW_CRC
                       " FROM (SELECT ?1 AS owner, ?2 AS registry, ?3 AS username, ?4 AS sealed, ?5 AS updated_ms)");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, row.owner).bind(2, row.registry).bind(3, row.username).bind_blob(4, row.sealed).bind(5, row.updated_ms);
  return s->run();
}

Expected<bool> WriteTxn::delete_registry_credential(const std::string& owner, const std::string& registry) {
  auto p = db_.prepare("DELETE FROM registry_credentials WHERE owner = ?1 AND registry = ?2");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, owner).bind(2, registry);
  if (auto st = s->run(); !st) return st.error();
  return db_.changes() == 1;
}

Expected<std::optional<RegistryCredentialRow>> WriteTxn::registry_credential(const std::string& owner,
                                                                              const std::string& registry) {
  auto p = db_.prepare(std::string("SELECT ") + kCredentialColumns +
                       " FROM registry_credentials WHERE owner = ?1 AND registry = ?2");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, owner).bind(2, registry);
  return read_first_row<RegistryCredentialRow>(*s, read_credential);
}

Expected<int64_t> WriteTxn::registry_credentials_count(const std::string& owner) {
  auto p = db_.prepare("SELECT COUNT(*) FROM registry_credentials WHERE owner = ?1");
  if (!p) return p.error();
  StatementUse s(*p);
  s->bind(1, owner);
  auto row = s->step();
  if (!row) return row.error();
  return (*p)->column_int64(0);
}

Expected<std::vector<RegistryCredentialRow>> Store::registry_credentials(const std::string& owner) {
  std::vector<RegistryCredentialRow> out;
  Status st = with_reader([&](Connection& db) -> Status {
    auto p = db.prepare(std::string("SELECT ") + kCredentialColumns +
                        " FROM registry_credentials WHERE owner = ?1 ORDER BY registry");
    if (!p) return p.error();
    StatementUse s(*p);
    s->bind(1, owner);
    auto rows = read_rows<RegistryCredentialRow>(*s, read_credential);
    if (!rows) return rows.error();
    out = std::move(*rows);
    return {};
  });
  if (!st) return st.error();
  return out;
}

}  // namespace jobctl::daemon::store
