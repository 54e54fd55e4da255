#include "daemon/jobs/checkpoint_service.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "daemon/jobs/checkpoint_check.h"
#include "daemon/jobs/job_transition.h"
#include "daemon/jobs/lease_fence.h"
#include "scheduler/job_state.h"
#include "train/spec/job_spec.h"

namespace jobctl::daemon::jobs {

using store::JobState;
using store::WriteTxn;

namespace {

std::string job_text(int64_t id) { return "job " + std::to_string(id); }

std::string blob_name(int64_t step, int64_t epoch, int64_t now_ms, uint64_t nonce) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "ckpt-%012lld-e%lld-%lld-%llu.ckpt", static_cast<long long>(step),
                static_cast<long long>(epoch), static_cast<long long>(now_ms),
                static_cast<unsigned long long>(nonce));
  return buf;
}

// How many checkpoints the job keeps (checkpoint.keep, at least one; the spec's default without a spec).
size_t keep_of(const store::JobRow& job) {
  return static_cast<size_t>(std::max(1, job.spec ? job.spec->checkpoint.keep : train::CheckpointSpec{}.keep));
}

}  // namespace

CheckpointService::CheckpointService(store::Store& store, const store::BlobStore& blobs,
                                     const Clock& clock, CheckpointOptions options)
    : store_(store), blobs_(blobs), clock_(clock), options_(options) {}

Expected<CheckpointRow> CheckpointService::put(const CheckpointUpload& up) {
  // The staged file is this call's: whatever happens below, it does not stay in the incoming
  // folder (moved into the store, or removed here).
  store::StagedFile staged(up.staged_file);
  if (up.step < 0) return make_error(ErrorCode::invalid_argument, "step must be >= 0", "step");
  if (up.bytes == 0) return make_error(ErrorCode::invalid_argument, "the checkpoint is empty", "body");
  if (up.bytes > static_cast<uint64_t>(options_.max_bytes))
    return make_error(ErrorCode::payload_too_large,
                      "the checkpoint is " + std::to_string(up.bytes) +
                          " bytes, more than checkpoints.max_bytes " + std::to_string(options_.max_bytes),
                      "body");
  // The fence first, so that a fenced-off worker does not make the daemon read its bytes for
  // nothing; the transaction below checks again.
  auto pre = store_.get_job(up.job_id);
  if (!pre) return pre.error();
  if (!*pre) return make_error(ErrorCode::not_found, job_text(up.job_id) + " does not exist");
  if (auto st = check_lease(**pre, up.lease); !st) return st.error();
  auto spec = (*pre)->decoded_spec();
  if (!spec) return spec.error();
  auto scan = check_checkpoint_file(up.staged_file, up.crc32c, up.step, expectation_for(**spec));
  if (!scan) return scan.error();

  const int64_t now = clock_.now_ms();
  CheckpointRow row;
  row.job_id = up.job_id;
  row.step = up.step;
  row.bytes = static_cast<int64_t>(scan->bytes);
  row.crc32c = scan->crc32c;
  row.file = blob_name(up.step, up.lease.epoch, now, nonce_.fetch_add(1));
  row.worker_id = up.lease.worker_id;
  row.epoch = up.lease.epoch;
  row.created_ms = now;
  if (auto st = blobs_.adopt(up.job_id, row.file, up.staged_file); !st) return st.error();
  staged.keep();
  // The row, then keep-K; blobs that no row references any more are removed after the commit.
  std::vector<std::string> obsolete;
  Status st = store_.write([&row, &obsolete](WriteTxn& txn) -> Status {
    obsolete.clear();
    auto found = txn.job(row.job_id);
    if (!found) return found.error();
    if (!*found) return make_error(ErrorCode::not_found, job_text(row.job_id) + " does not exist");
    if (auto s = check_lease(**found, LeaseRef{row.worker_id, row.epoch}); !s) return s;
    auto before = txn.checkpoints(row.job_id);
    if (!before) return before.error();
    for (const auto& c : *before)
      if (c.step == row.step) obsolete.push_back(c.file);  // replaced
    if (auto s = txn.put_checkpoint(row); !s) return s;
    auto all = txn.checkpoints(row.job_id);
    if (!all) return all.error();
    const size_t keep = keep_of(**found);
    for (size_t i = keep; i < all->size(); ++i) {
      if (auto s = txn.delete_checkpoint(row.job_id, (*all)[i].step); !s) return s;
      obsolete.push_back((*all)[i].file);
    }
    return {};
  });
  if (!st) {
    (void)blobs_.remove(up.job_id, row.file);
    return st.error();
  }
  for (const auto& f : obsolete)
    if (f != row.file) (void)blobs_.remove(up.job_id, f);
  return row;
}

Expected<std::vector<CheckpointRow>> CheckpointService::reject(const CheckpointRejection& r) {
  const int64_t now = clock_.now_ms();
  std::string removed_file;
  auto left = store_.write_value<std::vector<CheckpointRow>>(
      [&r, now, &removed_file](WriteTxn& txn) -> Expected<std::vector<CheckpointRow>> {
        removed_file.clear();
        auto found = txn.job(r.job_id);
        if (!found) return found.error();
        if (!*found) return make_error(ErrorCode::not_found, job_text(r.job_id) + " does not exist");
        if (auto st = check_lease(**found, r.lease); !st) return st.error();
        auto rows = txn.checkpoints(r.job_id);
        if (!rows) return rows.error();
        std::vector<CheckpointRow> kept;
        for (auto& c : *rows) {
          if (c.step == r.step) removed_file = c.file;
          else kept.push_back(std::move(c));
        }
        if (removed_file.empty())
          return make_error(ErrorCode::not_found,
                            job_text(r.job_id) + " has no checkpoint at step " + std::to_string(r.step), "step");
        if (auto st = txn.delete_checkpoint(r.job_id, r.step); !st) return st.error();
        nlohmann::json detail = {{"step", r.step},
                                 {"error", r.error},
                                 {"worker_id", r.lease.worker_id},
                                 {"epoch", r.lease.epoch},
                                 {"fallback_step", r.fallback_step ? nlohmann::json(*r.fallback_step) : nlohmann::json(nullptr)}};
        if (auto st = note_job_event(txn, r.job_id, "checkpoint_rejected", detail, now); !st) return st.error();
        return kept;
      });
  if (!left) return left.error();
  (void)blobs_.remove(r.job_id, removed_file);
  return left;
}

Expected<std::vector<CheckpointRow>> CheckpointService::list(int64_t job_id) {
  return store_.write_value<std::vector<CheckpointRow>>(
      [job_id](WriteTxn& txn) -> Expected<std::vector<CheckpointRow>> {
        auto found = txn.job(job_id);
        if (!found) return found.error();
        if (!*found) return make_error(ErrorCode::not_found, job_text(job_id) + " does not exist");
        return txn.checkpoints(job_id);
      });
}

Expected<std::pair<CheckpointRow, std::string>> CheckpointService::locate(int64_t job_id,
                                                                       std::optional<int64_t> step) {
  auto rows = list(job_id);
  if (!rows) return rows.error();
  const CheckpointRow* pick = nullptr;
  for (const auto& r : *rows) {
    if (!step || r.step == *step) {
      pick = &r;
      break;
    }
  }
  if (pick == nullptr)
    return make_error(ErrorCode::not_found, step ? job_text(job_id) + " has no checkpoint at step " + std::to_string(*step)
                                        : job_text(job_id) + " has no checkpoint",
                      step ? "step" : "");
  std::string path = blobs_.path_of(job_id, pick->file);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return make_error(ErrorCode::io, job_text(job_id) + ": the blob of the checkpoint at step " +
                                std::to_string(pick->step) + " is missing from the blob store");
  return std::make_pair(*pick, std::move(path));
}

Expected<int> CheckpointService::sweep_finished() {
  // A job that succeeded within final_checkpoint_retention_ms keeps its newest checkpoint (the
  // trained model, kept with the job's outputs); every other finished job keeps none.
  const int64_t keep_since = options_.final_checkpoint_retention_ms > 0
                                 ? clock_.now_ms() - options_.final_checkpoint_retention_ms
                                 : std::numeric_limits<int64_t>::max();
  std::vector<std::pair<int64_t, std::vector<std::string>>> removed;  // job, its removed blobs
  std::vector<int64_t> emptied;
  Status st = store_.write([&](WriteTxn& txn) -> Status {
    removed.clear();
    emptied.clear();
    auto ids = txn.finished_jobs_with_checkpoints(keep_since);
    if (!ids) return ids.error();
    for (int64_t id : *ids) {
      auto job = txn.job(id);
      if (!job) return job.error();
      const bool keep_final =
          *job && (*job)->state == JobState::succeeded && (*job)->updated_ms >= keep_since;
      auto rows = txn.checkpoints(id);  // newest first
      if (!rows) return rows.error();
      std::vector<std::string> files;
      for (size_t i = keep_final ? 1 : 0; i < rows->size(); ++i) {
        if (auto s = txn.delete_checkpoint(id, (*rows)[i].step); !s) return s;
        files.push_back((*rows)[i].file);
      }
      if (keep_final) removed.emplace_back(id, std::move(files));
      else emptied.push_back(id);
    }
    return {};
  });
  if (!st) return st.error();
  for (const auto& [id, files] : removed)
    for (const auto& f : files) (void)blobs_.remove(id, f);
  for (int64_t id : emptied) (void)blobs_.remove_job(id);
  return static_cast<int>(removed.size() + emptied.size());
}

void CheckpointService::tick() {
  const int64_t now = clock_.now_ms();
  int64_t last = last_sweep_ms_.load();
  if (now - last < options_.sweep_interval_ms) return;
  if (!last_sweep_ms_.compare_exchange_strong(last, now)) return;  // another tick is sweeping
  auto swept = sweep_finished();
  sweep_log_.report(swept ? Status{} : Status{swept.error()}, *log_, now);
}

Expected<int> CheckpointService::reconcile() {
  if (auto st = blobs_.prepare(); !st) return st.error();
  int removed = 0;
  for (int64_t job_id : blobs_.job_ids()) {
    auto rows = list(job_id);
    if (!rows && rows.error().code != ErrorCode::not_found) return rows.error();
    std::unordered_set<std::string> referenced;
    if (rows)
      for (const auto& r : *rows) referenced.insert(r.file);
    if (referenced.empty()) {
      removed += static_cast<int>(blobs_.names(job_id).size());
      if (auto st = blobs_.remove_job(job_id); !st) return st.error();
      continue;
    }
    for (const auto& name : blobs_.names(job_id)) {
      if (referenced.count(name)) continue;
      if (auto st = blobs_.remove(job_id, name); !st) return st.error();
      ++removed;
    }
  }
  return removed;
}

}  // namespace jobctl::daemon::jobs
