#include "daemon/store/progress_history.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>
#include <vector>

namespace jobctl::daemon::store {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// progress.epochs_done (what jobctl-worker reports after each epoch), -1 when absent.
int64_t epochs_done(const json& progress) {
  if (!progress.is_object()) return -1;
  auto it = progress.find("epochs_done");
  return it != progress.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

}  // namespace

Expected<std::unique_ptr<ProgressHistory>> ProgressHistory::open(fs::path dir, const Clock& clock,
                                                                 ProgressHistoryOptions options) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io, "cannot create the progress folder " + dir.string() + ": " + ec.message());
  return std::unique_ptr<ProgressHistory>(new ProgressHistory(std::move(dir), clock, options));
}

ProgressHistory::ProgressHistory(fs::path dir, const Clock& clock, ProgressHistoryOptions options)
    : dir_(std::move(dir)), clock_(clock), options_(options) {}

fs::path ProgressHistory::file_for(int64_t job_id) const {
  return dir_ / (std::to_string(job_id) + ".jsonl");
}

Status ProgressHistory::record(int64_t job_id, std::string_view progress_json) {
  json progress = json::parse(progress_json, nullptr, false);
  if (progress.is_discarded() || !progress.is_object())
    return make_error(ErrorCode::invalid_argument, "progress must be a JSON object", "progress");
  const int64_t now = clock_.now_ms();
  const fs::path path = file_for(job_id);

  MutexLock lock(mu_);
  auto [it, fresh] = jobs_.try_emplace(job_id);
  JobState& st = it->second;
  if (fresh) {  // a daemon restart: continue the count and cadence from the file
    std::ifstream in(path, std::ios::binary);
    std::string line;
    while (std::getline(in, line)) {
      st.torn_tail = in.eof();  // the last line had no newline: a crash cut an append short
      json p = json::parse(line, nullptr, false);
      if (p.is_discarded() || !p.contains("time_ms") || !p["time_ms"].is_number_integer()) continue;
      ++st.points;
      st.last_ms = p["time_ms"].get<int64_t>();
      st.last_epochs = epochs_done(p["progress"]);
    }
  }
  // An epoch's end (its test loss and accuracy) is always kept; other points are rate-limited.
  const int64_t epochs = epochs_done(progress);
  const int64_t interval = st.points < options_.dense_points ? options_.min_interval_ms : options_.sparse_interval_ms;
  if (st.points > 0 && epochs == st.last_epochs && now - st.last_ms < interval) return {};

  // After a torn line, start on a fresh line so the new point is not glued to the torn one.
  const std::string line = (st.torn_tail ? "\n" : "") +
                           json{{"time_ms", now}, {"progress", std::move(progress)}}.dump() + "\n";
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(ErrorCode::io, "cannot open " + path.string() + ": " + std::strerror(errno));
  const ssize_t n = ::write(fd, line.data(), line.size());
  const int saved = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(line.size()))
    return make_error(ErrorCode::io, "cannot append to " + path.string() + ": " + std::strerror(n < 0 ? saved : EIO));
  ++st.points;
  st.last_ms = now;
  st.last_epochs = epochs;
  st.torn_tail = false;
  return {};
}

Expected<json> ProgressHistory::read(int64_t job_id, int64_t limit) const {
  if (limit < 2) limit = 2;
  std::vector<json> points;
  std::ifstream in(file_for(job_id));
  std::string line;
  while (std::getline(in, line)) {
    json p = json::parse(line, nullptr, false);
    // A torn last line (a crash mid-append) or anything else unreadable is skipped.
    if (p.is_discarded() || !p.is_object() || !p.contains("progress") || !p["progress"].is_object()) continue;
    points.push_back(std::move(p));
  }
  json out = json::array();
  const auto n = static_cast<int64_t>(points.size());
  if (n <= limit) {
    for (auto& p : points) out.push_back(std::move(p));
    return out;
  }
  // Evenly thinned: index i*(n-1)/(limit-1) for i in [0, limit), first and last kept.
  for (int64_t i = 0; i < limit; ++i) out.push_back(std::move(points[static_cast<size_t>(i * (n - 1) / (limit - 1))]));
  return out;
}

}  // namespace jobctl::daemon::store
