#include "bundle/code_bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "base/crc32c.h"
#include "base/relative_path.h"

namespace jobctl::bundle {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'J', 'C', 'B', 'U', 'N', 'D', 'L', '1'};
constexpr size_t kHeaderBytes = 40;
constexpr size_t kEntryHeadBytes = 16;

Error pack_error(const std::string& message) { return make_error(ErrorCode::invalid_argument, message, "workdir"); }
Error bad(const std::string& message) {
  return make_error(ErrorCode::invalid_argument, "bad code bundle: " + message, "bundle");
}

void put_u16(std::string& s, uint16_t v) {
  for (int i = 0; i < 2; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u32(std::string& s, uint32_t v) {
  for (int i = 0; i < 4; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_le(const char* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(p[i]);
  return v;
}

struct Entry {
  char type = 'f';
  bool exec = false;
  std::string path;
  std::string data;
};

// A path as the bundle stores it: base/relative_path.h's rule.
std::optional<std::string> path_problem(const std::string& path) { return relative_path_problem(path); }

// Whether `target`, a link at `link_path`, stays inside the bundle (lexically).
std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> out;
  std::stringstream parts(path);
  for (std::string part; std::getline(parts, part, '/');) out.push_back(part);
  return out;
}

// Whether the link at `link_path` stays inside the bundle as the file system would resolve it:
// its target is walked from the link's folder, and a component naming another of the bundle's
// `links` (path -> target) is replaced by that link's target, up to 40 links (as Linux allows),
// so a chain of links each lexically inside that ends outside is refused.
bool link_resolves_inside(const std::string& link_path, const std::map<std::string, std::string>& links) {
  std::vector<std::string> at = split_path(link_path);
  at.pop_back();  // the link's own name
  std::deque<std::string> rest;
  int hops = 0;
  const auto follow = [&](const std::string& target) {
    if (target.empty() || target.front() == '/' || ++hops > 40) return false;
    const auto parts = split_path(target);
    rest.insert(rest.begin(), parts.begin(), parts.end());
    return true;
  };
  if (!follow(links.at(link_path))) return false;
  while (!rest.empty()) {
    const std::string part = rest.front();
    rest.pop_front();
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (at.empty()) return false;
      at.pop_back();
      continue;
    }
    std::string joined;
    for (const auto& a : at) joined += a + "/";
    joined += part;
    if (auto link = links.find(joined); link != links.end()) {
      if (!follow(link->second)) return false;
      continue;
    }
    at.push_back(part);
  }
  return true;
}

// The first of `links` that leads out of the bundle, if any.
std::optional<std::string> link_out(const std::map<std::string, std::string>& links) {
  for (const auto& [path, target] : links)
    if (!link_resolves_inside(path, links)) return path;
  return std::nullopt;
}

Expected<std::string> read_whole(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return make_error(ErrorCode::io, "cannot read " + p.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

Expected<std::string> pack_directory(const std::string& dir, uint64_t max_input_bytes, BundleStats* stats) {
  std::error_code ec;
  const fs::path root = fs::path(dir);
  if (!fs::is_directory(fs::symlink_status(root, ec))) return pack_error("--workdir " + dir + " is not a folder");
  std::vector<Entry> entries;
  std::map<std::string, std::string> links;  // path -> target
  uint64_t input = 0;
  BundleStats st;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  if (ec) return pack_error("cannot read " + dir + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) return pack_error("cannot read " + dir + ": " + ec.message());
    const fs::path& p = it->path();
    const std::string rel = p.lexically_relative(root).generic_string();  // never through a link
    if (p.filename() == ".git") {  // the repository's history is not the job's code
      if (it->is_directory(ec) && !it->is_symlink(ec)) it.disable_recursion_pending();
      continue;
    }
    const fs::file_status s = fs::symlink_status(p, ec);
    Entry e;
    e.path = rel;
    if (fs::is_symlink(s)) {
      e.type = 'l';
      e.data = fs::read_symlink(p, ec).string();
      links[rel] = e.data;
      ++st.links;
    } else if (fs::is_directory(s)) {
      e.type = 'd';
      ++st.folders;
    } else if (fs::is_regular_file(s)) {
      e.type = 'f';
      e.exec = (s.permissions() & fs::perms::owner_exec) != fs::perms::none;
      input += static_cast<uint64_t>(fs::file_size(p, ec));
      if (input > max_input_bytes)
        return pack_error(dir + " holds more than " + std::to_string(max_input_bytes >> 20) +
                          " MiB of files (the bundle limit); leave data out of the code folder");
      auto bytes = read_whole(p);
      if (!bytes) return bytes.error();
      e.data = std::move(*bytes);
      ++st.files;
      st.file_bytes += e.data.size();
    } else {
      return pack_error(rel + " is not a file, folder or link (a device, FIFO or socket): bundles refuse it");
    }
    if (auto problem = path_problem(e.path)) return pack_error(rel + ": " + *problem);
    entries.push_back(std::move(e));
  }
  if (auto out = link_out(links))
    return pack_error(*out + " is a link out of " + dir + " (to " + links[*out] +
                      ", as its chain of links resolves); bundles carry only links inside");
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.path < b.path; });

  std::string raw;
  for (const auto& e : entries) {
    raw.push_back(e.type);
    raw.push_back(e.exec ? 1 : 0);
    put_u16(raw, static_cast<uint16_t>(e.path.size()));
    put_u32(raw, 0);
    put_u64(raw, e.data.size());
    raw += e.path;
    raw += e.data;
  }
  uLongf packed_len = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(packed_len, '\0');
  if (compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_len, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), 6) != Z_OK)
    return make_error(ErrorCode::internal, "zlib could not compress the bundle");
  packed.resize(packed_len);
  std::string out(kMagic, sizeof kMagic);
  put_u64(out, packed.size());
  put_u64(out, raw.size());
  put_u32(out, static_cast<uint32_t>(entries.size()));
  put_u32(out, crc32c::value(packed.data(), packed.size()));
  put_u64(out, 0);
  out += packed;
  st.bundle_bytes = out.size();
  if (stats) *stats = st;
  return out;
}

Expected<BundleStats> unpack_bundle(const std::string& bundle, const std::string& dest, uint64_t max_unpacked_bytes) {
  if (bundle.size() < kHeaderBytes || std::memcmp(bundle.data(), kMagic, sizeof kMagic) != 0)
    return bad("not a jobctl code bundle (no JCBUNDL1 header)");
  const uint64_t packed_bytes = get_le(bundle.data() + 8, 8);
  const uint64_t unpacked_bytes = get_le(bundle.data() + 16, 8);
  const uint64_t count = get_le(bundle.data() + 24, 4);
  const uint32_t crc = static_cast<uint32_t>(get_le(bundle.data() + 28, 4));
  if (packed_bytes != bundle.size() - kHeaderBytes)
    return bad("the header announces " + std::to_string(packed_bytes) + " payload bytes, the file has " +
               std::to_string(bundle.size() - kHeaderBytes));
  if (crc32c::value(bundle.data() + kHeaderBytes, packed_bytes) != crc) return bad("checksum mismatch (corrupt or truncated)");
  if (unpacked_bytes > max_unpacked_bytes)
    return bad("it unpacks to " + std::to_string(unpacked_bytes) + " bytes, more than the limit of " +
               std::to_string(max_unpacked_bytes) + " (a decompression bomb?)");

  // Inflate, never past what the header announced (a payload that inflates further is a bomb).
  std::string raw(unpacked_bytes, '\0');
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return make_error(ErrorCode::internal, "zlib inflateInit failed");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bundle.data() + kHeaderBytes));
  z.avail_in = static_cast<uInt>(packed_bytes);
  z.next_out = reinterpret_cast<Bytef*>(raw.data());
  z.avail_out = static_cast<uInt>(raw.size());
  int zr = inflate(&z, Z_FINISH);
  const uint64_t produced = z.total_out;
  unsigned char probe = 0;
  if (zr == Z_BUF_ERROR && z.avail_out == 0) {  // full: does the stream go on?
    z.next_out = &probe;
    z.avail_out = 1;
    zr = inflate(&z, Z_FINISH);
    if (z.avail_out == 0) {
      inflateEnd(&z);
      return bad("the payload inflates to more than the " + std::to_string(unpacked_bytes) +
                 " bytes its header announces (a decompression bomb?)");
    }
  }
  inflateEnd(&z);
  if (zr != Z_STREAM_END) return bad("the payload is not a complete zlib stream");
  if (produced != unpacked_bytes) return bad("the payload inflates to fewer bytes than its header announces");

  // Parse and check every entry before writing any.
  std::vector<Entry> entries;
  std::map<std::string, std::string> links;
  std::set<std::string> seen;
  size_t pos = 0;
  for (uint64_t i = 0; i < count; ++i) {
    if (raw.size() - pos < kEntryHeadBytes) return bad("truncated entry " + std::to_string(i));
    Entry e;
    e.type = raw[pos];
    e.exec = raw[pos + 1] != 0;
    const uint64_t path_len = get_le(raw.data() + pos + 2, 2);
    const uint64_t data_len = get_le(raw.data() + pos + 8, 8);
    pos += kEntryHeadBytes;
    if (raw.size() - pos < path_len || raw.size() - pos - path_len < data_len)
      return bad("truncated entry " + std::to_string(i));
    e.path.assign(raw, pos, path_len);
    pos += path_len;
    e.data.assign(raw, pos, data_len);
    pos += data_len;
    if (auto problem = path_problem(e.path)) return bad("entry " + std::to_string(i) + " has " + *problem);
    if (e.type != 'f' && e.type != 'd' && e.type != 'l')
      return bad(e.path + " is neither a file, a folder nor a link (device files and other special files are refused)");
    if (!seen.insert(e.path).second) return bad(e.path + " appears twice");
    for (size_t slash = e.path.find('/'); slash != std::string::npos; slash = e.path.find('/', slash + 1))
      if (links.count(e.path.substr(0, slash))) return bad(e.path + " lies under the link " + e.path.substr(0, slash));
    if (e.type == 'l') {
      links[e.path] = e.data;
    } else if (e.type == 'd' && !e.data.empty()) {
      return bad(e.path + ": a folder entry with data");
    }
    entries.push_back(std::move(e));
  }
  if (pos != raw.size()) return bad("bytes after the last entry");
  if (auto out = link_out(links)) return bad(*out + " is a link out of the bundle (to " + links[*out] + ", as its chain of links resolves)");
  // A link must not be a prefix of an entry written before it either.
  for (const auto& e : entries)
    for (size_t slash = e.path.find('/'); slash != std::string::npos; slash = e.path.find('/', slash + 1))
      if (links.count(e.path.substr(0, slash))) return bad(e.path + " lies under the link " + e.path.substr(0, slash));

  std::error_code ec;
  fs::create_directories(dest, ec);
  if (ec) return make_error(ErrorCode::io, "cannot create " + dest + ": " + ec.message());
  BundleStats st;
  st.bundle_bytes = bundle.size();
  const fs::path root(dest);
  for (const auto& e : entries) {
    const fs::path p = root / e.path;
    if (fs::exists(fs::symlink_status(p, ec))) return bad(e.path + " exists already in " + dest);
    if (e.type == 'd') {
      fs::create_directories(p, ec);
      if (ec) return make_error(ErrorCode::io, "cannot create " + p.string() + ": " + ec.message());
      ++st.folders;
    } else if (e.type == 'l') {
      fs::create_directories(p.parent_path(), ec);
      fs::create_symlink(e.data, p, ec);
      if (ec) return make_error(ErrorCode::io, "cannot create the link " + p.string() + ": " + ec.message());
      ++st.links;
    } else {
      fs::create_directories(p.parent_path(), ec);
      // O_EXCL | O_NOFOLLOW: never through a link, never over something there.
      const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, e.exec ? 0755 : 0644);
      if (fd < 0) return make_error(ErrorCode::io, "cannot create " + p.string() + ": " + std::strerror(errno));
      size_t done = 0;
      while (done < e.data.size()) {
        const ssize_t n = ::write(fd, e.data.data() + done, e.data.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          const int err = errno;
          ::close(fd);
          return make_error(ErrorCode::io, "cannot write " + p.string() + ": " + std::strerror(err));
        }
        done += static_cast<size_t>(n);
      }
      ::close(fd);
      ++st.files;
      st.file_bytes += e.data.size();
    }
  }
  return st;
}

}  // namespace jobctl::bundle
