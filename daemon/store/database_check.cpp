#include "daemon/store/database_check.h"

#include <filesystem>
#include <utility>

#include "daemon/store/row_codecs.h"
#include "daemon/store/sqlite.h"

namespace jobctl::daemon::store {

namespace {

bool reports_corruption(const std::string& message) {
  return message.find("malformed") != std::string::npos || message.find("not a database") != std::string::npos ||
         message.find("corrupt") != std::string::npos;
}

// Every row of `sql`, read by `check`; a row that fails is one problem, and a failed step (a
// damaged page under the table) is one more, after which the table's remaining rows are unread.
template <class Check>
void check_rows(Connection& db, const std::string& sql, const std::string& table, const std::string& file,
                std::vector<std::string>& problems, Check&& check) {
  auto p = db.prepare(sql);
  if (!p) {
    problems.push_back(file + ": table " + table + " cannot be read: " + p.error().message);
    return;
  }
  StatementUse s(*p);
  for (;;) {
    auto row = s->step();
    if (!row) {
      problems.push_back(file + ": table " + table + ": reading stopped: " + row.error().message);
      return;
    }
    if (!*row) return;
    if (Status st = check(std::as_const(**p)); !st) {
      const std::string& m = st.error().message;
      // A checksum's error names its table and row already (row_codecs.h).
      problems.push_back(file + ": " + (m.rfind("table ", 0) == 0 ? m : "table " + table + ", " + m));
    }
  }
}

}  // namespace

Expected<std::vector<std::string>> check_database(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    return make_error(ErrorCode::io, path + " does not exist", "data_dir");
  auto conn = Connection::open(path, /*read_only=*/true);
  if (!conn) return conn.error();
  Connection& db = **conn;
  std::vector<std::string> problems;
  // SQLite's own check of every page (up to 1000 findings).
  auto integrity = db.prepare("PRAGMA integrity_check(1000)");
  if (!integrity) {  // not even the schema reads
    problems.push_back(explain_damaged_database(path, integrity.error()).message);
    return problems;
  }
  {
    StatementUse s(*integrity);
    for (;;) {
      auto row = s->step();
      if (!row) {
        problems.push_back(path + ": integrity_check stopped: " + row.error().message);
        break;
      }
      if (!*row) break;
      const std::string line = s->column_text(0);
      if (line != "ok") problems.push_back(path + ": page check: " + line);
    }
  }
  check_rows(db, std::string("SELECT ") + kJobReadColumns + " FROM jobs ORDER BY id", "jobs", path, problems,
             [](const Statement& s) -> Status {
               auto job = read_job(s);
               if (!job && job.error().message.rfind("table ", 0) == 0) return job.error();
               if (!job) return make_error(job.error().code, "row " + std::to_string(s.column_int64(0)) + ": " + job.error().message);
               return check_job_documents(*job);
             });
  check_rows(db, std::string("SELECT ") + kEventColumns + " FROM job_events ORDER BY job_id, seq", "job_events",
             path, problems, [](const Statement& s) -> Status {
               auto e = read_event(s);
               if (!e && e.error().message.rfind("table ", 0) == 0) return e.error();
               if (!e) return make_error(e.error().code, "row (job " + std::to_string(s.column_int64(0)) + ", seq " +
                                                             std::to_string(s.column_int64(1)) + "): " + e.error().message);
               return check_event_detail(*e);
             });
  check_rows(db, std::string("SELECT ") + kWorkerColumns + " FROM workers ORDER BY id", "workers", path, problems,
             [](const Statement& s) -> Status {
               auto w = read_worker(s);
               if (!w) return make_error(w.error().code, "row " + std::to_string(s.column_int64(0)) + ": " + w.error().message);
               return {};
             });
  // The blobs' metadata rows, each by its checksum (the expression their writes computed).
  const auto metadata = [&](const char* table, const std::string& key_sql, const char* crc_sql) {
    check_rows(db, "SELECT " + key_sql + ", (" + crc_sql + ") IS row_crc FROM " + table, table, path, problems,
               [&](const Statement& s) { return verify_row(s, table, "row (" + s.column_text(0) + ")", s.column_int64(1) == 1); });
  };
  metadata("checkpoints", "'job ' || job_id || ', step ' || step", JOBCTL_CHECKPOINT_ROW_CRC);
  metadata("job_outputs", "'job ' || job_id || ', path ' || path", JOBCTL_OUTPUT_ROW_CRC);
  metadata("bundles", "'bundle ' || sha256 || ', user ' || user", JOBCTL_BUNDLE_ROW_CRC);
  return problems;
}

Error explain_damaged_database(const std::string& path, const Error& e) {
  if (!reports_corruption(e.message)) return e;
  return make_error(ErrorCode::io,
                    "the database file " + path + " is damaged (" + e.message +
                        "). Stop here: run `jobctld --check --data-dir " +
                        std::filesystem::path(path).parent_path().string() +
                        "` to list what is damaged, then restore the newest backup in its place (docs/operations.md, "
                        "\"Checking and restoring the database\")",
                    "data_dir");
}

}  // namespace jobctl::daemon::store
