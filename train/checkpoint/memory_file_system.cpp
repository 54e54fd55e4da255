#include "train/checkpoint/memory_file_system.h"

#include <algorithm>

namespace jobctl::train {

namespace {
std::string parent_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string(".") : path.substr(0, slash);
}
std::string name_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}
}  // namespace

Status MemoryFileSystem::write_file_synced(const std::string& path, std::span<const uint8_t> data) {
  std::lock_guard lock(mu_);
  log_.push_back("write " + path);
  if (torn_write_) {
    const size_t keep = std::min(*torn_write_, data.size());
    torn_write_.reset();
    files_[path] = std::vector<uint8_t>(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(keep));
    return make_error(ErrorCode::io, "injected write failure on " + path);
  }
  files_[path] = std::vector<uint8_t>(data.begin(), data.end());
  return ok_status();
}

Status MemoryFileSystem::rename(const std::string& from, const std::string& to) {
  std::lock_guard lock(mu_);
  log_.push_back("rename " + from + " " + to);
  if (fail_rename_) {
    fail_rename_ = false;
    return make_error(ErrorCode::io, "injected rename failure on " + from);
  }
  auto it = files_.find(from);
  if (it == files_.end()) return make_error(ErrorCode::io, "cannot rename " + from + ": no such file");
  files_[to] = std::move(it->second);
  files_.erase(from);
  return ok_status();
}

Status MemoryFileSystem::sync_directory(const std::string& dir) {
  std::lock_guard lock(mu_);
  log_.push_back("sync_dir " + dir);
  return ok_status();
}

Expected<std::vector<uint8_t>> MemoryFileSystem::read_file(const std::string& path) {
  std::lock_guard lock(mu_);
  auto it = files_.find(path);
  if (it == files_.end()) return make_error(ErrorCode::io, "cannot open " + path + ": no such file");
  return it->second;
}

Expected<std::vector<std::string>> MemoryFileSystem::list_directory(const std::string& dir) {
  std::lock_guard lock(mu_);
  std::vector<std::string> names;
  for (const auto& [path, data] : files_)
    if (parent_of(path) == dir) names.push_back(name_of(path));
  return names;
}

Status MemoryFileSystem::remove_file(const std::string& path) {
  std::lock_guard lock(mu_);
  log_.push_back("remove " + path);
  files_.erase(path);
  return ok_status();
}

Status MemoryFileSystem::create_directories(const std::string& dir) {
  std::lock_guard lock(mu_);
  dirs_.push_back(dir);
  return ok_status();
}

void MemoryFileSystem::fail_next_write_after(size_t bytes) {
  std::lock_guard lock(mu_);
  torn_write_ = bytes;
}

void MemoryFileSystem::fail_next_rename() {
  std::lock_guard lock(mu_);
  fail_rename_ = true;
}

bool MemoryFileSystem::exists(const std::string& path) const {
  std::lock_guard lock(mu_);
  return files_.count(path) != 0;
}

std::vector<uint8_t> MemoryFileSystem::contents(const std::string& path) const {
  std::lock_guard lock(mu_);
  auto it = files_.find(path);
  return it == files_.end() ? std::vector<uint8_t>{} : it->second;
}

void MemoryFileSystem::set_contents(const std::string& path, std::vector<uint8_t> data) {
  std::lock_guard lock(mu_);
  files_[path] = std::move(data);
}

std::vector<std::string> MemoryFileSystem::log() const {
  std::lock_guard lock(mu_);
  return log_;
}

}  // namespace jobctl::train
