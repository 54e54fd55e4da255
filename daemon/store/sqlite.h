// Thin RAII wrappers over the SQLite C API: a connection, a prepared statement, and a per-
// connection cache of prepared statements (every query jobctld runs is prepared once and reused;
// no SQL text is ever built from input).
//
// Ownership and thread safety: a Connection owns its sqlite3 handle and its StatementCache; both
// belong to one thread at a time (the store hands each connection to one thread: the writer
// thread, or a reader that checked it out of the pool).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "base/expected.h"

struct sqlite3;
struct sqlite3_stmt;

namespace jobctl::daemon::store {

class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // Parameters are 1-based, as in SQLite.
  Statement& bind(int i, int64_t v);
  Statement& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Statement& bind(int i, double v);
  Statement& bind(int i, std::string_view v);
  Statement& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Statement& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Statement& bind_null(int i);
  Statement& bind_blob(int i, std::string_view bytes);
  Statement& bind(int i, const std::optional<int64_t>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }
  Statement& bind(int i, const std::optional<std::string>& v) {
    return v ? bind(i, std::string_view(*v)) : bind_null(i);
  }

  // Advances: true when a row is available, false when done; an Error on failure.
  Expected<bool> step();
  // Runs a statement that returns no rows (or ignores them) to completion.
  Status run();
  // Clears bindings and resets for the next use (also done by StatementCache::get).
  void reset();

  // Columns are 0-based, as in SQLite.
  int column_count() const;
  bool is_null(int col) const;
  bool is_blob(int col) const;
  int64_t column_int64(int col) const;
  double column_double(int col) const;
  std::string column_text(int col) const;
  std::optional<int64_t> column_opt_int64(int col) const;
  std::optional<std::string> column_opt_text(int col) const;
  // The file of the database the statement reads (errors about its rows name it).
  std::string database_file() const;

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_;
  Error bind_error_;
  bool bind_failed_ = false;
  void check_bind(int rc);
};

// Resets a cached statement when the code that used it is done, whatever path it leaves by, so
// that no statement keeps a snapshot or a half-read result.
class StatementUse {
 public:
  explicit StatementUse(Statement* s) : s_(s) {}
  ~StatementUse() { s_->reset(); }
  StatementUse(const StatementUse&) = delete;
  StatementUse& operator=(const StatementUse&) = delete;
  Statement* operator->() const { return s_; }
  Statement& operator*() const { return *s_; }

 private:
  Statement* s_;
};

// Steps `stmt` (bound, not yet stepped) through every row, calling `on_row(const Statement&)` on
// each. The first error — of a step, or a Status that `on_row` returns — stops it and is returned.
// The caller keeps its StatementUse: this neither resets nor finishes the statement early.
template <class OnRow>
Status for_each_row(Statement& stmt, OnRow&& on_row) {
  for (;;) {
    auto row = stmt.step();
    if (!row) return std::move(row).error();
    if (!*row) return {};
    if constexpr (std::is_void_v<std::invoke_result_t<OnRow&, const Statement&>>) {
      on_row(std::as_const(stmt));
    } else if (Status st = on_row(std::as_const(stmt)); !st) {
      return st;
    }
  }
}

// Every row of `stmt`, each read by `read(const Statement&)`, which returns T or Expected<T> (an
// error stops the read and is returned).
template <class T, class Read>
Expected<std::vector<T>> read_rows(Statement& stmt, Read&& read) {
  std::vector<T> out;
  Status st = for_each_row(stmt, [&](const Statement& s) -> Status {
    if constexpr (std::is_same_v<std::invoke_result_t<Read&, const Statement&>, Expected<T>>) {
      auto v = read(s);
      if (!v) return std::move(v).error();
      out.push_back(std::move(*v));
    } else {
      out.push_back(read(s));
    }
    return {};
  });
  if (!st) return std::move(st).error();
  return out;
}

// The first row of `stmt`, read as read_rows reads each; nullopt when it has none.
template <class T, class Read>
Expected<std::optional<T>> read_first_row(Statement& stmt, Read&& read) {
  auto row = stmt.step();
  if (!row) return std::move(row).error();
  if (!*row) return std::optional<T>{};
  if constexpr (std::is_same_v<std::invoke_result_t<Read&, const Statement&>, Expected<T>>) {
    auto v = read(std::as_const(stmt));
    if (!v) return std::move(v).error();
    return std::optional<T>(std::move(*v));
  } else {
    return std::optional<T>(read(std::as_const(stmt)));
  }
}

// The first column of every row of `stmt` (bound, not yet stepped), as integers; resets it.
Expected<std::vector<int64_t>> first_column_ints(Statement* stmt);
// The same for a text column.
Expected<std::vector<std::string>> first_column_texts(Statement* stmt);

class Connection {
 public:
  // Opens (creating when `create`) the database file. read_only connections are for readers.
  static Expected<std::unique_ptr<Connection>> open(const std::string& path, bool read_only);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // Runs SQL text with no parameters (schema, pragmas, BEGIN/COMMIT). Never with input in it.
  Status exec(std::string_view sql);
  // The prepared statement for this SQL text, prepared on first use, reset and ready to bind.
  Expected<Statement*> prepare(const std::string& sql);

  // Resets every cached statement, so that none keeps a read snapshot open (a stepped but
  // unfinished SELECT would hold one and block WAL checkpoints). Called when a connection is
  // given back to its pool and after each write batch.
  void reset_all();

  int64_t last_insert_rowid() const;
  int changes() const;
  sqlite3* handle() { return db_; }

 private:
  explicit Connection(sqlite3* db) : db_(db) {}
  sqlite3* db_;
  std::map<std::string, std::unique_ptr<Statement>, std::less<>> cache_;
};

// An Error carrying SQLite's message for `rc` on `db`: code "storage_unavailable" when the disk
// refused (full, read-only, an I/O error: the store, not the request, is at
// fault, and a retry may succeed), else code "io".
Error sqlite_error(sqlite3* db, int rc, std::string_view what);
// An error of that first kind: the disk under the store refused a write.
inline bool is_storage_failure(const Error& e) { return e.code == ErrorCode::storage_unavailable; }

}  // namespace jobctl::daemon::store
