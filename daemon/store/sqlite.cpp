#include "daemon/store/sqlite.h"

#include <sqlite3.h>

#include "base/crc32c.h"

namespace jobctl::daemon::store {

namespace {

// SQL's crc32c(x): the CRC32C of a text's or blob's bytes, NULL for NULL — the same value
// document_checksum (row_codecs.h) computes, so a migration can checksum rows written before.
void sql_crc32c(sqlite3_context* ctx, int, sqlite3_value** argv) {
  if (sqlite3_value_type(argv[0]) == SQLITE_NULL) {
    sqlite3_result_null(ctx);
    return;
  }
  const void* bytes = sqlite3_value_blob(argv[0]);
  const int n = sqlite3_value_bytes(argv[0]);
  sqlite3_result_int64(ctx, jobctl::crc32c::value(bytes, static_cast<size_t>(n)));
}

// The disk under the database refused a write (full, read-only, failing): the store, not the
// request, is at fault, and a later retry may succeed.
bool disk_refused(int rc) {
  switch (rc & 0xFF) {  // the primary result code of an extended one
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
      return true;
    default:
      return false;
  }
}

Error sql_error(int rc, std::string message) {
  if (disk_refused(rc))
    return make_error(ErrorCode::storage_unavailable, "the store cannot write: " + message);
  return make_error(ErrorCode::io, std::move(message));
}

}  // namespace

Error sqlite_error(sqlite3* db, int rc, std::string_view what) {
  std::string msg(what);
  msg += ": ";
  msg += db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return sql_error(rc, std::move(msg));
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::check_bind(int rc) {
  if (rc != SQLITE_OK && !bind_failed_) {
    bind_failed_ = true;
    bind_error_ = sqlite_error(db_, rc, "binding a parameter");
  }
}

Statement& Statement::bind(int i, int64_t v) {
  check_bind(sqlite3_bind_int64(stmt_, i, v));
  return *this;
}
Statement& Statement::bind(int i, double v) {
  check_bind(sqlite3_bind_double(stmt_, i, v));
  return *this;
}
Statement& Statement::bind(int i, std::string_view v) {
  check_bind(sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}
Statement& Statement::bind_blob(int i, std::string_view bytes) {
  check_bind(sqlite3_bind_blob64(stmt_, i, bytes.data(), bytes.size(), SQLITE_TRANSIENT));
  return *this;
}
Statement& Statement::bind_null(int i) {
  check_bind(sqlite3_bind_null(stmt_, i));
  return *this;
}

Expected<bool> Statement::step() {
  if (bind_failed_) return bind_error_;
  const int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return sqlite_error(db_, rc, "running a statement");
}

Status Statement::run() {
  for (;;) {
    auto r = step();
    if (!r) return r.error();
    if (!*r) return {};
  }
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
  bind_failed_ = false;
}

int Statement::column_count() const { return sqlite3_column_count(stmt_); }
bool Statement::is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
std::string Statement::database_file() const {
  const char* f = sqlite3_db_filename(db_, "main");
  return f ? f : "";
}
bool Statement::is_blob(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_BLOB; }
int64_t Statement::column_int64(int col) const { return sqlite3_column_int64(stmt_, col); }
double Statement::column_double(int col) const { return sqlite3_column_double(stmt_, col); }
std::string Statement::column_text(int col) const {
  const auto* p = sqlite3_column_text(stmt_, col);
  const int n = sqlite3_column_bytes(stmt_, col);
  return p != nullptr ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(n))
                      : std::string();
}
std::optional<int64_t> Statement::column_opt_int64(int col) const {
  if (is_null(col)) return std::nullopt;
  return column_int64(col);
}
std::optional<std::string> Statement::column_opt_text(int col) const {
  if (is_null(col)) return std::nullopt;
  return column_text(col);
}

Expected<std::unique_ptr<Connection>> Connection::open(const std::string& path, bool read_only) {
  sqlite3* db = nullptr;
  const int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE) |
                    SQLITE_OPEN_NOMUTEX;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    Error e = sqlite_error(db, rc, "opening " + path);
    sqlite3_close(db);
    return e;
  }
  sqlite3_extended_result_codes(db, 1);
  // Readers may briefly meet the writer's checkpoint; wait instead of failing.
  sqlite3_busy_timeout(db, 5000);
  sqlite3_create_function_v2(db, "crc32c", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr, sql_crc32c, nullptr,
                             nullptr, nullptr);
  return std::unique_ptr<Connection>(new Connection(db));
}

Connection::~Connection() {
  cache_.clear();  // finalize every statement before closing
  sqlite3_close(db_);
}

Status Connection::exec(std::string_view sql) {
  char* err = nullptr;
  const std::string text(sql);
  const int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string msg = err != nullptr ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    return sql_error(rc, "SQL failed (" + msg + "): " + text.substr(0, 80));
  }
  return {};
}

Expected<Statement*> Connection::prepare(const std::string& sql) {
  auto it = cache_.find(sql);
  if (it == cache_.end()) {
    sqlite3_stmt* stmt = nullptr;
    const int rc = sqlite3_prepare_v3(db_, sql.c_str(), static_cast<int>(sql.size()),
                                      SQLITE_PREPARE_PERSISTENT, &stmt, nullptr);
    if (rc != SQLITE_OK) return sqlite_error(db_, rc, "preparing a statement");
    it = cache_.emplace(sql, std::make_unique<Statement>(db_, stmt)).first;
  }
  it->second->reset();
  return it->second.get();
}

void Connection::reset_all() {
  for (auto& [sql, stmt] : cache_) stmt->reset();
}

int64_t Connection::last_insert_rowid() const { return sqlite3_last_insert_rowid(db_); }
int Connection::changes() const { return sqlite3_changes(db_); }

Expected<std::vector<int64_t>> first_column_ints(Statement* stmt) {
  StatementUse s(stmt);
  return read_rows<int64_t>(*s, [](const Statement& r) { return r.column_int64(0); });
}

Expected<std::vector<std::string>> first_column_texts(Statement* stmt) {
  StatementUse s(stmt);
  return read_rows<std::string>(*s, [](const Statement& r) { return r.column_text(0); });
}

}  // namespace jobctl::daemon::store
