#include "train/checkpoint/checkpoint_store.h"

#include <algorithm>
#include <cstdio>

#include "train/checkpoint/checkpoint_format.h"

namespace jobctl::train {

namespace {
constexpr const char* kPrefix = "ckpt-";
constexpr const char* kSuffix = ".ckpt";
constexpr size_t kDigits = 12;
}  // namespace

CheckpointStore::CheckpointStore(FileSystem& fs, std::string dir, int keep)
    : fs_(fs), dir_(std::move(dir)), keep_(std::max(1, keep)) {}

std::string CheckpointStore::periodic_name(int64_t step) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "ckpt-%012lld.ckpt", static_cast<long long>(step));
  return buf;
}

int64_t CheckpointStore::step_of(const std::string& name) {
  const size_t prefix = 5, suffix = 5;
  if (name.size() != prefix + kDigits + suffix) return -1;
  if (name.compare(0, prefix, kPrefix) != 0 || name.compare(prefix + kDigits, suffix, kSuffix) != 0) return -1;
  int64_t step = 0;
  for (size_t i = prefix; i < prefix + kDigits; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

Expected<WrittenCheckpoint> CheckpointStore::write_periodic(const TrainingState& state) {
  const std::vector<uint8_t> bytes = encode_checkpoint(state);
  const std::string name = periodic_name(state.global_step);
  if (auto st = write_file_atomic(fs_, dir_, name, bytes); !st) return Unexpected{std::move(st).error()};
  if (auto st = prune(); !st) return Unexpected{std::move(st).error()};
  return WrittenCheckpoint{join_path(dir_, name), bytes.size()};
}

Expected<WrittenCheckpoint> CheckpointStore::write_final(const TrainingState& state) {
  const std::vector<uint8_t> bytes = encode_checkpoint(state);
  if (auto st = write_file_atomic(fs_, dir_, kFinalName, bytes); !st) return Unexpected{std::move(st).error()};
  return WrittenCheckpoint{join_path(dir_, kFinalName), bytes.size()};
}

Status CheckpointStore::prune() {
  auto names = fs_.list_directory(dir_);
  if (!names) return Unexpected{std::move(names).error()};
  std::vector<std::pair<int64_t, std::string>> periodic;
  for (const auto& n : *names)
    if (const int64_t s = step_of(n); s >= 0) periodic.emplace_back(s, n);
  std::sort(periodic.begin(), periodic.end(), std::greater<>());
  bool removed = false;
  for (size_t i = static_cast<size_t>(keep_); i < periodic.size(); ++i) {
    if (auto st = fs_.remove_file(join_path(dir_, periodic[i].second)); !st) return st;
    removed = true;
  }
  return removed ? fs_.sync_directory(dir_) : ok_status();
}

Expected<std::vector<std::string>> CheckpointStore::list() const {
  auto names = fs_.list_directory(dir_);
  if (!names) return Unexpected{std::move(names).error()};
  std::vector<std::pair<int64_t, std::string>> periodic;
  bool final_present = false;
  for (const auto& n : *names) {
    if (n == kFinalName) final_present = true;
    if (const int64_t s = step_of(n); s >= 0) periodic.emplace_back(s, n);
  }
  std::sort(periodic.begin(), periodic.end(), std::greater<>());
  std::vector<std::string> paths;
  if (final_present) paths.push_back(join_path(dir_, kFinalName));
  for (const auto& [step, n] : periodic) paths.push_back(join_path(dir_, n));
  return paths;
}

Expected<TrainingState> CheckpointStore::load(const std::string& path) const {
  auto bytes = fs_.read_file(path);
  if (!bytes) return Unexpected{std::move(bytes).error()};
  auto state = decode_checkpoint(*bytes);
  if (!state) {
    Error e = std::move(state).error();
    e.message = path + ": " + e.message;
    return e;
  }
  return state;
}

Expected<LoadedCheckpoint> CheckpointStore::load_newest_valid() const {
  auto paths = list();
  if (!paths) return Unexpected{std::move(paths).error()};
  LoadedCheckpoint out;
  for (const auto& p : *paths) {
    auto st = load(p);
    if (st) {
      out.path = p;
      out.state = std::move(*st);
      return out;
    }
    out.skipped.push_back(st.error().message);
  }
  std::string msg = "no valid checkpoint in " + dir_;
  for (const auto& s : out.skipped) msg += "; skipped " + s;
  return make_error(ErrorCode::not_found, msg);
}

}  // namespace jobctl::train
