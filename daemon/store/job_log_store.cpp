#include "daemon/store/job_log_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <fstream>
#include <string_view>
#include <system_error>

#include "base/utc_time.h"

namespace jobctl::daemon::store {

namespace fs = std::filesystem;

namespace {

constexpr size_t kTimeChars = 24;  // 2026-11-27T00:01:02.345Z, format_utc_ms

Error io_error(const std::string& what, const fs::path& path, int err) {
  return make_error(ErrorCode::io, what + " " + path.string() + ": " + std::strerror(err));
}

Status write_all(int fd, const std::string& data, const fs::path& path) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return io_error("cannot write to", path, n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  return {};
}

}  // namespace

std::string JobLogStore::format_line(int64_t number, int64_t time_ms, const std::string& text) {
  std::string line = std::to_string(number);
  line += ' ';
  line += format_utc_ms(time_ms);
  line += ' ';
  line += text;
  line += '\n';
  return line;
}

bool JobLogStore::parse_line(const std::string& line, StoredLogLine& out) {
  const size_t sp = line.find(' ');
  if (sp == std::string::npos || sp == 0 || line.size() < sp + 1 + kTimeChars + 1 || line[sp + 1 + kTimeChars] != ' ')
    return false;
  auto r = std::from_chars(line.data(), line.data() + sp, out.number);
  if (r.ec != std::errc() || r.ptr != line.data() + sp || out.number < 1) return false;
  const auto time = parse_rfc3339(std::string_view(line).substr(sp + 1, kTimeChars));
  if (!time) return false;
  out.time_ms = *time;
  out.text = line.substr(sp + 2 + kTimeChars);
  return true;
}

Expected<std::unique_ptr<JobLogStore>> JobLogStore::open(fs::path dir, JobLogOptions options) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return make_error(ErrorCode::io, "cannot create the log folder " + dir.string() + ": " + ec.message());
  return std::unique_ptr<JobLogStore>(new JobLogStore(std::move(dir), options));
}

JobLogStore::JobLogStore(fs::path dir, JobLogOptions options) : dir_(std::move(dir)), options_(options) {}

fs::path JobLogStore::path_of(int64_t job_id) const { return dir_ / (std::to_string(job_id) + ".log"); }

Expected<JobLogStore::FileState> JobLogStore::load(int64_t job_id) const {
  FileState st;
  const fs::path path = path_of(job_id);
  std::ifstream in(path, std::ios::binary);
  if (!in) return st;  // no log yet
  std::string line;
  int64_t whole = 0;  // bytes up to the end of the last whole line
  StoredLogLine parsed;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no newline: a torn last line
    whole += static_cast<int64_t>(line.size()) + 1;
    if (parse_line(line, parsed)) st.last_number = parsed.number;
  }
  std::error_code ec;
  const auto size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) return make_error(ErrorCode::io, "cannot read the size of " + path.string() + ": " + ec.message());
  if (size > whole && ::truncate(path.c_str(), whole) != 0) return io_error("cannot cut the torn line of", path, errno);
  st.bytes = whole;
  return st;
}

Status JobLogStore::append(int64_t job_id, const std::vector<LogEntry>& entries) {
  if (entries.empty()) return {};
  MutexLock lock(mu_);
  auto it = files_.find(job_id);
  if (it == files_.end()) {
    auto loaded = load(job_id);
    if (!loaded) return loaded.error();
    it = files_.emplace(job_id, *loaded).first;
  }
  FileState& st = it->second;
  std::string data;
  int64_t number = st.last_number;
  for (const LogEntry& e : entries) {
    // A text holding newlines is several lines of the same time (a final newline ends the last).
    std::string_view t = e.text;
    if (!t.empty() && t.back() == '\n') t.remove_suffix(1);
    for (size_t start = 0;;) {
      const size_t nl = t.find('\n', start);
      std::string text(t.substr(start, nl == std::string_view::npos ? std::string_view::npos : nl - start));
      if (text.size() > options_.max_line_bytes) text = text.substr(0, options_.max_line_bytes) + " [cut]";
      data += format_line(++number, e.time_ms, text);
      if (nl == std::string_view::npos) break;
      start = nl + 1;
    }
  }
  const fs::path path = path_of(job_id);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("cannot open", path, errno);
  Status wrote = write_all(fd, data, path);
  ::close(fd);
  if (!wrote) {
    files_.erase(job_id);  // reloaded (and a torn line cut) at the next append
    return wrote;
  }
  st.last_number = number;
  st.bytes += static_cast<int64_t>(data.size());
  if (st.bytes > options_.max_bytes_per_job) return compact(job_id, st);
  return {};
}

Status JobLogStore::compact(int64_t job_id, FileState& st) {
  const fs::path path = path_of(job_id);
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open", path, errno);
  const int64_t head_bytes = options_.max_bytes_per_job / 4;
  const int64_t tail_bytes = options_.max_bytes_per_job / 2;
  std::string head;
  std::deque<std::string> tail;
  int64_t tail_size = 0;
  bool head_full = false;
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;
    line += '\n';
    if (!head_full && static_cast<int64_t>(head.size() + line.size()) <= head_bytes) {
      head += line;
      continue;
    }
    head_full = true;
    tail_size += static_cast<int64_t>(line.size());
    tail.push_back(std::move(line));
    while (tail_size > tail_bytes && tail.size() > 1) {
      tail_size -= static_cast<int64_t>(tail.front().size());
      tail.pop_front();
    }
  }
  in.close();
  const fs::path tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return io_error("cannot create", tmp, errno);
  Status wrote = write_all(fd, head, tmp);
  for (size_t i = 0; wrote && i < tail.size(); ++i) wrote = write_all(fd, tail[i], tmp);
  // Durable before the rename: a crash must leave the old file or the whole new one.
  if (wrote && ::fsync(fd) != 0) wrote = io_error("cannot sync", tmp, errno);
  ::close(fd);
  if (wrote && ::rename(tmp.c_str(), path.c_str()) != 0) wrote = io_error("cannot rename", tmp, errno);
  if (!wrote) {
    ::unlink(tmp.c_str());
    return wrote;
  }
  st.bytes = static_cast<int64_t>(head.size()) + tail_size;
  return {};
}

Expected<LogPage> JobLogStore::read(int64_t job_id, const LogQuery& q) const {
  LogPage page;
  page.next = q.after;
  std::ifstream in(path_of(job_id), std::ios::binary);
  if (!in) return page;
  std::deque<StoredLogLine> kept;
  int64_t previous = q.after;  // the number before the next kept line, for gaps
  std::string line;
  StoredLogLine l;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // a line still being written, or torn
    if (!parse_line(line, l) || l.number <= q.after) continue;
    page.next = l.number;
    if (q.since_ms > 0 && l.time_ms < q.since_ms) continue;
    if (q.tail == 0 && kept.size() >= q.max_lines) {
      page.more = true;
      page.next = kept.back().number;
      break;
    }
    if (q.tail == 0 && q.since_ms == 0) page.dropped_lines += l.number - previous - 1;
    previous = l.number;
    kept.push_back(std::move(l));
    if (q.tail > 0 && static_cast<int64_t>(kept.size()) > q.tail) kept.pop_front();
  }
  if (q.tail > 0 && kept.size() > q.max_lines) kept.erase(kept.begin(), kept.end() - static_cast<ptrdiff_t>(q.max_lines));
  page.lines.assign(std::make_move_iterator(kept.begin()), std::make_move_iterator(kept.end()));
  return page;
}

Expected<fs::path> JobLogStore::file_of(int64_t job_id) const {
  fs::path path = path_of(job_id);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    return make_error(ErrorCode::not_found, "job " + std::to_string(job_id) + " has no log");
  return path;
}

Expected<int> JobLogStore::sweep(const std::function<bool(int64_t job_id)>& expired) {
  std::vector<int64_t> ids;
  std::error_code ec;
  for (fs::directory_iterator it(dir_, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() < 5 || name.compare(name.size() - 4, 4, ".log") != 0) continue;
    int64_t id = 0;
    auto r = std::from_chars(name.data(), name.data() + name.size() - 4, id);
    if (r.ec == std::errc() && r.ptr == name.data() + name.size() - 4) ids.push_back(id);
  }
  if (ec) return make_error(ErrorCode::io, "cannot list " + dir_.string() + ": " + ec.message());
  int removed = 0;
  for (int64_t id : ids) {
    if (!expired(id)) continue;
    MutexLock lock(mu_);
    files_.erase(id);
    if (::unlink(path_of(id).c_str()) != 0 && errno != ENOENT) return io_error("cannot remove", path_of(id), errno);
    ++removed;
  }
  return removed;
}

}  // namespace jobctl::daemon::store
