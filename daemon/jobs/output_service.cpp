#include "daemon/jobs/output_service.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

#include "base/log_line.h"
#include "base/relative_path.h"
#include "daemon/jobs/lease_fence.h"

namespace jobctl::daemon::jobs {

namespace {

std::string output_job_text(int64_t id) { return "job " + std::to_string(id); }

std::string output_blob_name(int64_t now_ms, uint64_t nonce) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "out-%lld-%llu", static_cast<long long>(now_ms), static_cast<unsigned long long>(nonce));
  return buf;
}

Status check_output_path(const std::string& path) {
  if (auto problem = relative_path_problem(path))
    return make_error(ErrorCode::invalid_argument, "an output's path must stay inside JOBCTL_OUTPUT_DIR: " + *problem,
                      "path");
  return {};
}

int64_t output_sweep_period_ms(int64_t retention_ms) { return std::clamp<int64_t>(retention_ms / 10, 1000, 600'000); }

}  // namespace

OutputService::OutputService(store::Store& store, const store::BlobStore& blobs, const Clock& clock,
                             OutputOptions options)
    : store_(store), blobs_(blobs), clock_(clock), options_(options) {}

Expected<OutputRow> OutputService::put(const OutputUpload& up) {
  store::StagedFile staged(up.staged_file);
  if (auto st = check_output_path(up.path); !st) return st.error();
  const int64_t max_job = options_.max_bytes_per_job;
  if (up.bytes > static_cast<uint64_t>(max_job))
    return make_error(ErrorCode::payload_too_large,
                      "the output " + up.path + " is " + std::to_string(up.bytes) +
                          " bytes, more than outputs.max_bytes_per_job " + std::to_string(max_job),
                      "outputs.max_bytes_per_job");
  // The fence first, so that a fenced-off worker does not make the daemon store its bytes; the
  // transaction below checks again.
  auto pre = store_.get_job(up.job_id);
  if (!pre) return pre.error();
  if (!*pre) return make_error(ErrorCode::not_found, output_job_text(up.job_id) + " does not exist");
  if (auto st = check_lease(**pre, up.lease); !st) return st.error();

  MutexLock lock(mu_);
  const int64_t now = clock_.now_ms();
  OutputRow row;
  row.job_id = up.job_id;
  row.path = up.path;
  row.bytes = static_cast<int64_t>(up.bytes);
  row.blob = output_blob_name(now, nonce_.fetch_add(1));
  row.uploaded_ms = now;
  if (auto st = blobs_.adopt(up.job_id, row.blob, up.staged_file); !st) return st.error();
  staged.keep();
  std::string replaced;  // the blob of the row this one replaces
  const int64_t quota = options_.quota_bytes_per_user;
  Status st = store_.write([&](store::WriteTxn& txn) -> Status {
    replaced.clear();
    auto found = txn.job(row.job_id);
    if (!found) return found.error();
    if (!*found) return make_error(ErrorCode::not_found, output_job_text(row.job_id) + " does not exist");
    if (auto s = check_lease(**found, up.lease); !s) return s;
    auto owner = txn.job_owner(row.job_id);
    if (!owner) return owner.error();
    row.user = owner->value_or("");
    auto rows = txn.outputs(row.job_id);
    if (!rows) return rows.error();
    int64_t job_bytes = row.bytes, replaced_bytes = 0;
    for (const auto& o : *rows) {
      if (o.path == row.path) {
        replaced = o.blob;
        replaced_bytes = o.user == row.user ? o.bytes : 0;
      } else {
        job_bytes += o.bytes;
      }
    }
    if (job_bytes > max_job)
      return make_error(ErrorCode::payload_too_large,
                        "storing " + row.path + " (" + std::to_string(row.bytes) + " bytes) would take " +
                            output_job_text(row.job_id) + "'s outputs to " + std::to_string(job_bytes) +
                            " bytes, over outputs.max_bytes_per_job " + std::to_string(max_job),
                        "outputs.max_bytes_per_job");
    auto used = txn.output_bytes_of_user(row.user);
    if (!used) return used.error();
    const int64_t after = *used - replaced_bytes + row.bytes;
    if (after > quota)
      return make_error(ErrorCode::limit_exceeded,
                        "storing " + row.path + " (" + std::to_string(row.bytes) + " bytes) would take " +
                            (row.user.empty() ? std::string("the local user") : "user '" + row.user + "'") +
                            "'s outputs to " + std::to_string(after) + " bytes, over outputs.quota_bytes_per_user " +
                            std::to_string(quota) + "; outputs are deleted " +
                            std::to_string(options_.retention_ms / 1000) + " s after their job ends",
                        "outputs.quota_bytes_per_user");
    return txn.put_output(row);
  });
  if (!st) {
    (void)blobs_.remove(row.job_id, row.blob);
    return st.error();
  }
  if (!replaced.empty()) (void)blobs_.remove(row.job_id, replaced);
  return row;
}

Expected<std::vector<OutputRow>> OutputService::list(int64_t job_id) {
  return store_.write_value<std::vector<OutputRow>>([job_id](store::WriteTxn& txn) -> Expected<std::vector<OutputRow>> {
    auto found = txn.job(job_id);
    if (!found) return found.error();
    if (!*found) return make_error(ErrorCode::not_found, output_job_text(job_id) + " does not exist");
    return txn.outputs(job_id);
  });
}

Expected<std::pair<OutputRow, std::string>> OutputService::locate(int64_t job_id, const std::string& path) {
  if (auto st = check_output_path(path); !st) return st.error();
  auto rows = list(job_id);
  if (!rows) return rows.error();
  for (auto& r : *rows) {
    if (r.path != path) continue;
    std::string file = blobs_.path_of(job_id, r.blob);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(file, ec))
      return make_error(ErrorCode::io, output_job_text(job_id) + ": the blob of the output " + path + " is missing");
    return std::make_pair(std::move(r), std::move(file));
  }
  return make_error(ErrorCode::not_found, output_job_text(job_id) + " has no output " + path, "path");
}

Expected<int> OutputService::reconcile() {
  MutexLock lock(mu_);
  if (auto st = blobs_.prepare(); !st) return st.error();
  std::vector<int64_t> with_rows;
  Status listed = store_.write([&](store::WriteTxn& txn) -> Status {
    auto ids = txn.jobs_with_outputs();
    if (!ids) return ids.error();
    with_rows = std::move(*ids);
    return {};
  });
  if (!listed) return listed.error();
  std::set<int64_t> jobs(with_rows.begin(), with_rows.end());
  for (int64_t id : blobs_.job_ids()) jobs.insert(id);
  int removed = 0;
  for (int64_t job_id : jobs) {
    const auto names = blobs_.names(job_id);
    const std::set<std::string> on_disk(names.begin(), names.end());
    std::set<std::string> named;
    Status st = store_.write([&](store::WriteTxn& txn) -> Status {
      named.clear();
      auto rows = txn.outputs(job_id);
      if (!rows) return rows.error();
      for (const auto& r : *rows) {
        if (on_disk.contains(r.blob)) {
          named.insert(r.blob);
        } else {  // a row whose bytes are gone cannot be served: dropped
          if (auto s = txn.delete_outputs(job_id, r.path); !s) return s;
          ++removed;
        }
      }
      return {};
    });
    if (!st) return st.error();
    if (named.empty()) {
      removed += static_cast<int>(on_disk.size());
      if (auto s = blobs_.remove_job(job_id); !s) return s.error();
      continue;
    }
    for (const auto& name : on_disk)
      if (!named.contains(name)) {
        if (auto s = blobs_.remove(job_id, name); !s) return s.error();
        ++removed;
      }
  }
  return removed;
}

Expected<int> OutputService::sweep() {
  MutexLock lock(mu_);
  const int64_t cutoff = clock_.now_ms() - options_.retention_ms;
  std::vector<int64_t> gone;
  Status st = store_.write([&](store::WriteTxn& txn) -> Status {
    auto ids = txn.jobs_with_outputs_finished_before(cutoff);
    if (!ids) return ids.error();
    for (int64_t id : *ids)
      if (auto s = txn.delete_outputs(id); !s) return s;
    gone = std::move(*ids);
    return {};
  });
  if (!st) return st.error();
  // The rows are gone: a crash from here on leaves folders reconcile() removes at the next start.
  Status removed;
  for (int64_t id : gone)
    if (auto s = blobs_.remove_job(id); !s && removed) removed = s;
  if (!removed) return removed.error();
  return static_cast<int>(gone.size());
}

void OutputService::tick() {
  {
    MutexLock lock(mu_);
    const int64_t now = clock_.now_ms();
    if (now < next_sweep_ms_) return;
    next_sweep_ms_ = now + output_sweep_period_ms(options_.retention_ms);
  }
  if (auto swept = sweep(); !swept) LogLine() << "jobctld: output retention pass: " << swept.error().message;
}

}  // namespace jobctl::daemon::jobs
