#include "daemon/jobs/bundle_service.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>

#include "base/log_line.h"

namespace jobctl::daemon::jobs {

namespace {

// Bundles live in their store's one folder (the store's folders are per job; bundles belong to
// no job: folder 0).
constexpr int64_t kBundleFolder = 0;
constexpr char kBundleMagic[8] = {'J', 'C', 'B', 'U', 'N', 'D', 'L', '1'};
constexpr std::string_view kSuffix = ".bundle";

std::string blob_name(std::string_view sha) { return std::string(sha) + std::string(kSuffix); }

bool is_sha256_hex(std::string_view s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

// Whether the file starts with a bundle's magic.
bool has_bundle_magic(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char head[sizeof kBundleMagic] = {};
  size_t got = 0;
  while (got < sizeof head) {
    const ssize_t n = ::read(fd, head + got, sizeof head - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  return got == sizeof head && std::memcmp(head, kBundleMagic, sizeof head) == 0;
}

int64_t sweep_period_ms(int64_t retention_ms) { return std::clamp<int64_t>(retention_ms / 10, 1000, 600'000); }

}  // namespace

BundleService::BundleService(store::Store& store, const store::BlobStore& blobs, const Clock& clock,
                             BundleOptions options)
    : store_(store), blobs_(blobs), clock_(clock), options_(options) {}

Expected<int> BundleService::reconcile() {
  MutexLock lock(mu_);
  if (auto st = blobs_.prepare(); !st) return st.error();
  std::set<std::string> on_disk;
  for (const std::string& name : blobs_.names(kBundleFolder)) {
    if (name.size() != 64 + kSuffix.size() || !name.ends_with(kSuffix)) continue;
    const std::string sha = name.substr(0, 64);
    if (is_sha256_hex(sha)) on_disk.insert(sha);
  }
  const int64_t now = clock_.now_ms();
  int changed = 0;
  Status st = store_.write([&](store::WriteTxn& txn) -> Status {
    changed = 0;
    auto rows = txn.bundle_shas();
    if (!rows) return rows.error();
    const std::set<std::string> known(rows->begin(), rows->end());
    for (const std::string& sha : known)
      if (!on_disk.contains(sha)) {
        if (auto s = txn.delete_bundle(sha); !s) return s;
        ++changed;
      }
    for (const std::string& sha : on_disk)
      if (!known.contains(sha)) {
        std::error_code ec;
        const auto bytes = std::filesystem::file_size(blobs_.path_of(kBundleFolder, blob_name(sha)), ec);
        auto added = txn.put_bundle(store::BundleRow{sha, "", ec ? 0 : static_cast<int64_t>(bytes), now});
        if (!added) return added.error();
        ++changed;
      }
    return {};
  });
  if (!st) return st.error();
  return changed;
}

Expected<StoredBundle> BundleService::store(const std::string& user, const std::string& staged_file,
                                            const std::string& sha256) {
  store::StagedFile staged(staged_file);
  if (!has_bundle_magic(staged_file))
    return make_error(ErrorCode::invalid_argument, "not a jobctl code bundle (no JCBUNDL1 header)", "body");
  std::error_code ec;
  const auto size = std::filesystem::file_size(staged_file, ec);
  if (ec) return make_error(ErrorCode::io, "cannot read the uploaded bundle: " + ec.message());
  if (!is_sha256_hex(sha256)) return make_error(ErrorCode::internal, "a bundle's SHA-256 must be 64 hex digits");
  const StoredBundle stored{sha256, static_cast<int64_t>(size)};

  MutexLock lock(mu_);
  bool added = false;
  const int64_t quota = options_.quota_bytes_per_user;
  Status st = store_.write([&](store::WriteTxn& txn) -> Status {
    auto put = txn.put_bundle(store::BundleRow{stored.sha256, user, stored.bytes, clock_.now_ms()});
    if (!put) return put.error();
    added = *put;
    if (!added) return {};  // this user stored these bytes before: counted already
    auto used = txn.bundle_bytes_of(user);
    if (!used) return used.error();
    if (*used > quota)
      return make_error(ErrorCode::limit_exceeded,
                        "storing this bundle (" + std::to_string(stored.bytes) + " bytes) would take " +
                            (user.empty() ? std::string("the local user") : "user '" + user + "'") + " to " +
                            std::to_string(*used) + " bytes of bundles, over the quota of " + std::to_string(quota) +
                            " (bundles.quota_bytes_per_user); bundles no job uses are deleted after " +
                            std::to_string(options_.retention_ms / 1000) + " s",
                        "bundles.quota_bytes_per_user");
    return {};
  });
  if (!st) return st.error();
  const std::string final_path = blobs_.path_of(kBundleFolder, blob_name(stored.sha256));
  if (std::filesystem::exists(final_path, ec)) return stored;  // the same bytes, stored before
  if (auto adopted = blobs_.adopt(kBundleFolder, blob_name(stored.sha256), staged_file); !adopted) {
    if (added)
      (void)store_.write([&](store::WriteTxn& txn) { return txn.delete_bundle(stored.sha256, user); });
    return adopted.error();
  }
  staged.keep();
  return stored;
}

Expected<std::string> BundleService::path_of(const std::string& sha256) const {
  if (!is_sha256_hex(sha256))
    return make_error(ErrorCode::invalid_argument, "a bundle is named by 64 lowercase hex digits (its SHA-256)",
                      "sha256");
  std::string path = blobs_.path_of(kBundleFolder, blob_name(sha256));
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return make_error(ErrorCode::not_found, "no code bundle " + sha256, "bundle");
  return path;
}

Expected<int> BundleService::sweep() {
  MutexLock lock(mu_);
  const int64_t cutoff = clock_.now_ms() - options_.retention_ms;
  std::vector<std::string> gone;
  Status st = store_.write([&](store::WriteTxn& txn) -> Status {
    auto stale = txn.bundles_unused_since(cutoff);
    if (!stale) return stale.error();
    for (const std::string& sha : *stale)
      if (auto s = txn.delete_bundle(sha); !s) return s;
    gone = std::move(*stale);
    return {};
  });
  if (!st) return st.error();
  // The rows are gone: a crash from here on leaves files reconcile() adopts at the next start.
  Status removed;
  for (const std::string& sha : gone)
    if (auto s = blobs_.remove(kBundleFolder, blob_name(sha)); !s && removed) removed = s;
  if (!removed) return removed.error();
  return static_cast<int>(gone.size());
}

void BundleService::tick() {
  {
    MutexLock lock(mu_);
    const int64_t now = clock_.now_ms();
    if (now < next_sweep_ms_) return;
    next_sweep_ms_ = now + sweep_period_ms(options_.retention_ms);
  }
  if (auto swept = sweep(); !swept)  // retried at the next period
    LogLine() << "jobctld: bundle retention pass: " << swept.error().message;
}

}  // namespace jobctl::daemon::jobs
