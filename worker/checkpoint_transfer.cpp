#include "worker/checkpoint_transfer.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <mutex>

#include <nlohmann/json.hpp>

#include "base/crc32c.h"
#include "client/api_client.h"

namespace jobctl::worker {

using nlohmann::json;

namespace {

size_t append_body(char* data, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

std::string hex8(uint32_t v) {
  char buf[9];
  std::snprintf(buf, sizeof buf, "%08x", v);
  return buf;
}


}  // namespace

Expected<std::string> read_descriptor(int fd, const std::string& shown) {
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(out.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return make_error(ErrorCode::io, "cannot read " + shown + ": " + std::strerror(errno));
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

Expected<std::string> read_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  // Always io, never not_found: a caller reads not_found as the daemon's answer that the job is
  // gone (the lease is lost), while a local file can vanish for reasons of its own.
  if (fd < 0) return make_error(ErrorCode::io, "cannot open " + path + ": " + std::strerror(errno));
  auto out = read_descriptor(fd, path);
  ::close(fd);
  return out;
}

Expected<uint32_t> file_crc32c(const std::string& path, int64_t* size) {
  auto bytes = read_file(path);
  if (!bytes) return bytes.error();
  if (size) *size = static_cast<int64_t>(bytes->size());
  return crc32c::value(bytes->data(), bytes->size());
}

CheckpointTransfer::CheckpointTransfer(TransferOptions options, RetryWait wait)
    : options_(std::move(options)), wait_(std::move(wait)) {
  while (!options_.server.empty() && options_.server.back() == '/') options_.server.pop_back();
  static std::once_flag once;  // curl_global_init is not thread-safe in every libcurl
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  curl_ = curl_easy_init();
}

CheckpointTransfer::~CheckpointTransfer() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

Expected<CheckpointTransfer::Answer> CheckpointTransfer::send(const std::string& method, const std::string& path,
                                                              const std::string* body) {
  auto* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) return make_error(ErrorCode::io, "could not initialise libcurl");
  curl_easy_reset(curl);
  const std::string url = options_.server + path;
  Answer answer;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_slist* raw = nullptr;
  raw = curl_slist_append(raw, "Expect:");
  if (body != nullptr) raw = curl_slist_append(raw, "Content-Type: application/octet-stream");
  std::string auth;
  if (!options_.bearer_token.empty()) {
    auth = "Authorization: Bearer " + options_.bearer_token;
    raw = curl_slist_append(raw, auth.c_str());
  }
  std::string worker;
  if (!options_.worker_secret.empty()) {
    worker = "X-Worker-Secret: " + options_.worker_secret;
    raw = curl_slist_append(raw, worker.c_str());
  }
  std::unique_ptr<curl_slist, SlistDeleter> headers(raw);
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, options_.timeout_ms);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer.body);
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (body != nullptr) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body->data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  const CURLcode rc = curl_easy_perform(curl);
  if (rc != CURLE_OK) {
    const std::string detail = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
    if (rc == CURLE_COULDNT_CONNECT) return make_error(ErrorCode::unavailable, "cannot connect to " + options_.server + ": " + detail);
    if (rc == CURLE_OPERATION_TIMEDOUT) return make_error(ErrorCode::timeout, method + " " + url + " timed out: " + detail);
    return make_error(ErrorCode::io, method + " " + url + " failed: " + detail);
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &answer.status);
  return answer;
}

Expected<CheckpointTransfer::Answer> CheckpointTransfer::send_retrying(const std::string& method,
                                                                       const std::string& path,
                                                                       const std::string* body) {
  auto r = retry(options_.retry, wait_, [&] { return send(method, path, body); },
                 [](const Expected<Answer>& a) { return !a || a->status >= 500; });
  return std::move(r.result);
}

Status CheckpointTransfer::upload(int64_t job_id, int64_t step, int64_t worker_id, int64_t epoch,
                                  int fd) {
  auto bytes = read_descriptor(fd, "the checkpoint at step " + std::to_string(step));
  if (!bytes) return bytes.error();
  const uint32_t crc = crc32c::value(bytes->data(), bytes->size());
  const std::string target = "/v1/jobs/" + std::to_string(job_id) + "/checkpoints/" + std::to_string(step) +
                             "?worker_id=" + std::to_string(worker_id) + "&epoch=" + std::to_string(epoch) +
                             "&crc32c=" + hex8(crc);
  auto r = send_retrying("PUT", target, &*bytes);
  if (!r) return r.error();
  if (r->status != 201) return client::error_from_answer(r->status, r->body);
  return {};
}

Status CheckpointTransfer::upload(int64_t job_id, int64_t step, int64_t worker_id, int64_t epoch,
                                  const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return make_error(ErrorCode::io, "cannot open " + path + ": " + std::strerror(errno));
  auto st = upload(job_id, step, worker_id, epoch, fd);
  ::close(fd);
  return st;
}

Expected<std::vector<StoredCheckpoint>> CheckpointTransfer::list(int64_t job_id) {
  auto r = send_retrying("GET", "/v1/jobs/" + std::to_string(job_id) + "/checkpoints", nullptr);
  if (!r) return r.error();
  if (r->status != 200) return client::error_from_answer(r->status, r->body);
  json j = json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("checkpoints") || !j["checkpoints"].is_array())
    return make_error(ErrorCode::io, "the checkpoint list of job " + std::to_string(job_id) + " is not what docs/api.md says");
  std::vector<StoredCheckpoint> out;
  for (const auto& c : j["checkpoints"]) {
    auto s = protocol::resume_point_from_json(c);
    if (!s) return make_error(ErrorCode::io, "the checkpoint list of job " + std::to_string(job_id) + ": " + s.error().message);
    out.push_back(*s);
  }
  return out;
}

Expected<std::string> CheckpointTransfer::download_bundle(const std::string& sha256) {
  auto r = send_retrying("GET", "/v1/bundles/" + sha256, nullptr);
  if (!r) return r.error();
  if (r->status != 200) return client::error_from_answer(r->status, r->body);
  return std::move(r->body);
}

Status CheckpointTransfer::download(int64_t job_id, const StoredCheckpoint& expected, const std::string& dest) {
  auto r = send_retrying("GET", "/v1/jobs/" + std::to_string(job_id) + "/checkpoints/" + std::to_string(expected.step),
                         nullptr);
  if (!r) return r.error();
  if (r->status != 200) return client::error_from_answer(r->status, r->body);
  const uint32_t crc = crc32c::value(r->body.data(), r->body.size());
  if (crc != expected.crc32c || static_cast<int64_t>(r->body.size()) != expected.bytes)
    return make_error(ErrorCode::corrupt_checkpoint, "the stored checkpoint of job " + std::to_string(job_id) + " at step " +
                                     std::to_string(expected.step) + " is corrupt: " +
                                     std::to_string(r->body.size()) + " bytes with crc32c " + hex8(crc) +
                                     ", expected " + std::to_string(expected.bytes) + " bytes with crc32c " +
                                     hex8(expected.crc32c));
  const std::string tmp = dest + ".tmp";
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(dest).parent_path(), ec);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(ErrorCode::io, "cannot create " + tmp + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < r->body.size()) {
    const ssize_t n = ::write(fd, r->body.data() + done, r->body.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      return make_error(ErrorCode::io, "cannot write " + tmp + ": " + std::strerror(e));
    }
    done += static_cast<size_t>(n);
  }
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), dest.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    return make_error(ErrorCode::io, "cannot store " + dest + ": " + std::strerror(e));
  }
  return {};
}

}  // namespace jobctl::worker
