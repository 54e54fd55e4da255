#include "client/http_client.h"

#include "client/exchange_record.h"

#include <curl/curl.h>
#include <strings.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>

namespace jobctl::client {

namespace {

void global_init_once() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// Where an answer's body goes, and how much of it may come.
struct BodySink {
  std::string* body;
  uint64_t max_bytes;  // 0: no limit
  bool too_large = false;
  CURL* curl = nullptr;
  int file_fd = -1;          // a 2xx answer's body goes here instead (FileStreams::download_fd)
  bool file_failed = false;
};

bool write_all(int fd, const char* data, size_t len) {
  while (len > 0) {
    const ssize_t n = ::write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

size_t append_body(char* data, size_t size, size_t n, void* user) {
  auto* sink = static_cast<BodySink*>(user);
  if (sink->file_fd >= 0) {
    long status = 0;
    curl_easy_getinfo(sink->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status >= 200 && status < 300) {
      if (write_all(sink->file_fd, data, size * n)) return size * n;
      sink->file_failed = true;
      return 0;
    }
  }
  if (sink->max_bytes != 0 && sink->body->size() + size * n > sink->max_bytes) {
    sink->too_large = true;
    return 0;  // less than was given aborts the transfer
  }
  sink->body->append(data, size * n);
  return size * n;
}

// A streamed upload's source (FileStreams::upload_fd).
struct FileSource {
  int fd;
  bool failed = false;
};

size_t read_body(char* buffer, size_t size, size_t n, void* user) {
  auto* src = static_cast<FileSource*>(user);
  for (;;) {
    const ssize_t got = ::read(src->fd, buffer, size * n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      src->failed = true;
      return CURL_READFUNC_ABORT;
    }
    return static_cast<size_t>(got);
  }
}

bool has_header(const std::vector<std::string>& headers, const char* name) {
  const size_t len = std::strlen(name);
  return std::any_of(headers.begin(), headers.end(), [&](const std::string& h) {
    return h.size() >= len && strncasecmp(h.c_str(), name, len) == 0;
  });
}

int check_cancel(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  const auto* flag = static_cast<const std::atomic<bool>*>(user);
  return (flag != nullptr && flag->load()) ? 1 : 0;  // non-zero aborts the transfer
}

// CURLOPT_OPENSOCKETFUNCTION: asks HttpClientOptions::allow_address before each connection.
struct AddressGate {
  const std::function<bool(const sockaddr*)>* allow = nullptr;
  bool refused = false;
};

curl_socket_t open_checked_socket(void* clientp, curlsocktype purpose, curl_sockaddr* address) {
  auto* gate = static_cast<AddressGate*>(clientp);
  if (purpose == CURLSOCKTYPE_IPCXN && !(*gate->allow)(&address->addr)) {
    gate->refused = true;
    return CURL_SOCKET_BAD;
  }
  return ::socket(address->family, address->socktype | SOCK_CLOEXEC, address->protocol);
}

struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

HttpClient::HttpClient(std::string base_url, HttpClientOptions options)
    : base_url_(std::move(base_url)), options_(std::move(options)) {
  while (!base_url_.empty() && base_url_.back() == '/') base_url_.pop_back();
  if (options_.ca_file.empty())
    if (const char* env = std::getenv("JOBCTL_CA_FILE"); env != nullptr) options_.ca_file = env;
  global_init_once();
  curl_ = curl_easy_init();
}

HttpClient::~HttpClient() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

Expected<HttpResult> HttpClient::request(std::string_view method, std::string_view path,
                                         std::string_view json_body, long timeout_ms,
                                         const std::vector<std::string>& extra_headers) {
  return perform(method, path, json_body, timeout_ms, extra_headers, nullptr);
}

Expected<HttpResult> HttpClient::get_to_file(std::string_view path, std::FILE* out, long timeout_ms) {
  if (std::fflush(out) != 0) return make_error(ErrorCode::io, "GET " + std::string(path) + ": cannot write the answer");
  FileStreams files;
  files.download_fd = fileno(out);
  return request_streaming("GET", path, files, timeout_ms);
}

Expected<HttpResult> HttpClient::request_streaming(std::string_view method, std::string_view path,
                                                   const FileStreams& files, long timeout_ms,
                                                   const std::vector<std::string>& extra_headers) {
  std::vector<std::string> headers = extra_headers;
  if (files.upload_fd >= 0 && !has_header(headers, "Content-Type:"))
    headers.emplace_back("Content-Type: application/octet-stream");
  if (files.download_fd >= 0 && !has_header(headers, "Accept:")) headers.emplace_back("Accept: */*");
  return perform(method, path, {}, timeout_ms, headers, &files);
}

Expected<HttpResult> HttpClient::perform(std::string_view method, std::string_view path, std::string_view json_body,
                                         long timeout_ms, const std::vector<std::string>& extra_headers,
                                         const FileStreams* files) {
  auto* curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) return make_error(ErrorCode::io, "could not initialise libcurl");
  curl_easy_reset(curl);  // keeps the connection cache, clears the previous request's options

  const std::string url = base_url_ + std::string(path);
  const std::string method_str(method);
  HttpResult result;
  char errbuf[CURL_ERROR_SIZE] = {0};

  curl_slist* raw_headers = nullptr;
  if (!has_header(extra_headers, "Accept:")) raw_headers = curl_slist_append(raw_headers, "Accept: application/json");
  // No "Expect: 100-continue" round trip: jobctld answers a too-large body with 413 anyway.
  raw_headers = curl_slist_append(raw_headers, "Expect:");
  // Every POST and PUT names its type (jobctld refuses one that does not: docs/security.md):
  // JSON unless the caller gives another (a bundle's application/octet-stream).
  if (!has_header(extra_headers, "Content-Type:") && (!json_body.empty() || method == "POST" || method == "PUT"))
    raw_headers = curl_slist_append(raw_headers, "Content-Type: application/json");
  std::string auth;
  if (!options_.bearer_token.empty()) {
    auth = "Authorization: Bearer " + options_.bearer_token;
    raw_headers = curl_slist_append(raw_headers, auth.c_str());
  }
  std::string worker;
  if (!options_.worker_secret.empty()) {
    worker = "X-Worker-Secret: " + options_.worker_secret;
    raw_headers = curl_slist_append(raw_headers, worker.c_str());
  }
  for (const std::string& h : extra_headers) raw_headers = curl_slist_append(raw_headers, h.c_str());
  std::unique_ptr<curl_slist, SlistDeleter> headers(raw_headers);

  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method_str.c_str());
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  if (!options_.ca_file.empty()) curl_easy_setopt(curl, CURLOPT_CAINFO, options_.ca_file.c_str());
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, options_.connect_timeout_ms);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : options_.timeout_ms);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, append_body);
  BodySink sink{&result.body, options_.max_body_bytes};
  sink.curl = curl;
  if (files != nullptr) sink.file_fd = files->download_fd;
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &sink);
  if (options_.follow_redirects) curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
  if (options_.max_body_bytes != 0)  // refused up front when the size is announced
    curl_easy_setopt(curl, CURLOPT_MAXFILESIZE_LARGE, static_cast<curl_off_t>(options_.max_body_bytes));
  FileSource source{files != nullptr ? files->upload_fd : -1};
  if (source.fd >= 0) {
    curl_easy_setopt(curl, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(curl, CURLOPT_READFUNCTION, read_body);
    curl_easy_setopt(curl, CURLOPT_READDATA, &source);
    curl_easy_setopt(curl, CURLOPT_INFILESIZE_LARGE, static_cast<curl_off_t>(files->upload_bytes));
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method_str.c_str());
  } else if (method == "POST" || method == "PUT" || !json_body.empty()) {
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, json_body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(json_body.size()));
  } else {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method_str.c_str());
  }
  AddressGate gate{&options_.allow_address};
  if (options_.allow_address) {
    curl_easy_setopt(curl, CURLOPT_OPENSOCKETFUNCTION, open_checked_socket);
    curl_easy_setopt(curl, CURLOPT_OPENSOCKETDATA, &gate);
  }
  if (options_.cancel != nullptr) {
    curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, check_cancel);
    curl_easy_setopt(curl, CURLOPT_XFERINFODATA, options_.cancel);
  }

  const CURLcode rc = curl_easy_perform(curl);
  if (source.failed) return make_error(ErrorCode::io, method_str + " " + url + ": cannot read the file to send");
  if (sink.file_failed) return make_error(ErrorCode::io, method_str + " " + url + ": cannot write the answer to its file");
  if (sink.too_large || rc == CURLE_FILESIZE_EXCEEDED)
    return make_error(ErrorCode::payload_too_large,
                      method_str + " " + url + ": the answer is larger than " + std::to_string(options_.max_body_bytes) +
                          " bytes");
  if (gate.refused && rc != CURLE_OK)
    return make_error(ErrorCode::permission_denied,
                      method_str + " " + url + ": refused to connect to a loopback, private or link-local address");
  if (rc != CURLE_OK) {
    std::string detail = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(rc);
    switch (rc) {
      case CURLE_COULDNT_CONNECT:
      case CURLE_COULDNT_RESOLVE_HOST:
      case CURLE_COULDNT_RESOLVE_PROXY:
        return make_error(ErrorCode::unavailable, "cannot connect to " + base_url_ + ": " + detail);
      case CURLE_OPERATION_TIMEDOUT:
        return make_error(ErrorCode::timeout, method_str + " " + url + " timed out: " + detail);
      case CURLE_ABORTED_BY_CALLBACK:
        return make_error(ErrorCode::cancelled, method_str + " " + url + " was cancelled");
      case CURLE_URL_MALFORMAT:
      case CURLE_UNSUPPORTED_PROTOCOL:
        return make_error(ErrorCode::invalid_argument, "bad server URL '" + base_url_ + "': " + detail,
                          "server");
      default:
        return make_error(ErrorCode::io, method_str + " " + url + " failed: " + detail);
    }
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &result.status);
  char* ct = nullptr;
  if (curl_easy_getinfo(curl, CURLINFO_CONTENT_TYPE, &ct) == CURLE_OK && ct != nullptr)
    result.content_type = ct;
  // Only JSON requests: an upload's bytes (a bundle, a checkpoint) are not the API's JSON.
  if (files == nullptr && !has_header(extra_headers, "Content-Type:"))
    record_exchange(method, path, json_body, result.status, result.content_type, result.body);
  return result;
}

Expected<HttpResult> fetch_url(const std::string& url, long timeout_ms, uint64_t max_bytes) {
  HttpClientOptions options;
  options.timeout_ms = timeout_ms;
  options.follow_redirects = true;
  options.max_body_bytes = max_bytes;
  HttpClient client(url, options);
  return client.request("GET", "", {}, 0, {"Accept: */*"});
}

namespace {

bool is_public_ipv4(uint32_t a) {  // host byte order
  const auto in = [a](uint32_t net, int bits) { return (a >> (32 - bits)) == (net >> (32 - bits)); };
  return !(in(0x00000000, 8) || in(0x0A000000, 8) || in(0x64400000, 10) || in(0x7F000000, 8) ||
           in(0xA9FE0000, 16) || in(0xAC100000, 12) || in(0xC0A80000, 16) || in(0xE0000000, 4) ||
           in(0xF0000000, 4));
}

}  // namespace

bool is_public_address(const ::sockaddr* address) {
  if (address == nullptr) return false;
  if (address->sa_family == AF_INET) {
    sockaddr_in v4{};
    std::memcpy(&v4, address, sizeof v4);
    return is_public_ipv4(ntohl(v4.sin_addr.s_addr));
  }
  if (address->sa_family != AF_INET6) return false;
  sockaddr_in6 v6{};
  std::memcpy(&v6, address, sizeof v6);
  const uint8_t* b = v6.sin6_addr.s6_addr;
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(b, kMapped, 12) == 0)
    return is_public_ipv4((uint32_t{b[12]} << 24) | (uint32_t{b[13]} << 16) | (uint32_t{b[14]} << 8) | b[15]);
  static constexpr uint8_t kZero[15] = {};
  if (std::memcmp(b, kZero, 15) == 0) return false;  // :: and ::1
  if ((b[0] & 0xfe) == 0xfc) return false;           // fc00::/7 unique local
  if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80) return false;  // fe80::/10 link-local
  if (b[0] == 0xff) return false;                    // multicast
  return true;
}

Expected<HttpUrl> parse_http_url(const std::string& url, const std::string& field) {
  const auto bad = [&](const std::string& why) {
    return make_error(ErrorCode::invalid_argument, field + " must be an http:// or https:// URL: " + why, field);
  };
  std::unique_ptr<CURLU, void (*)(CURLU*)> u(curl_url(), curl_url_cleanup);
  if (!u) return make_error(ErrorCode::internal, "could not initialise libcurl's URL parser");
  if (url.empty()) return bad("it is empty");
  if (curl_url_set(u.get(), CURLUPART_URL, url.c_str(), 0) != CURLUE_OK) return bad("'" + url + "' is not a URL");
  const auto part = [&](CURLUPart which) -> std::optional<std::string> {
    char* text = nullptr;
    if (curl_url_get(u.get(), which, &text, 0) != CURLUE_OK || text == nullptr) return std::nullopt;
    std::string out(text);
    curl_free(text);
    return out;
  };
  HttpUrl out;
  out.scheme = part(CURLUPART_SCHEME).value_or("");
  if (out.scheme != "http" && out.scheme != "https") return bad("the scheme is '" + out.scheme + "'");
  out.host = part(CURLUPART_HOST).value_or("");
  if (out.host.empty()) return bad("it names no host");
  if (part(CURLUPART_USER) || part(CURLUPART_PASSWORD)) return bad("credentials do not belong in it");
  return out;
}

std::string url_encode(std::string_view value) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : value) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace jobctl::client
