// The one translation unit that includes Boost.Beast (compile time: see server.h).
#include "net/server.h"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#if JOBCTL_NET_TLS
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#endif

#include "base/log_line.h"
#include "base/mutex.h"
#include "net/browser_guard.h"
#include "net/json_body.h"

namespace jobctl::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;

class SessionBase;

// What a new connection was given: a slot of its own, one of the reserved slots (its requests
// are served only when may_use_reserve holds), or none (refused).
enum class Slot { none, ordinary, reserved };

namespace {

// The network a client address counts under for max_connections_per_client: its /24 (IPv4, an
// IPv4-mapped IPv6 address included) or its /64 (IPv6).
std::string client_network(const asio::ip::address& address) {
  if (address.is_v6() && address.to_v6().is_v4_mapped())
    return client_network(asio::ip::make_address_v4(asio::ip::v4_mapped, address.to_v6()));
  if (address.is_v4()) {
    auto b = address.to_v4().to_bytes();
    return std::to_string(b[0]) + "." + std::to_string(b[1]) + "." + std::to_string(b[2]) + ".0/24";
  }
  auto b = address.to_v6().to_bytes();
  std::fill(b.begin() + 8, b.end(), 0);
  return asio::ip::address_v6(b).to_string() + "/64";
}

}  // namespace

struct HttpServer::Impl {
  Impl(ServerOptions o, const Router& r)
      : options(std::move(o)),
        router(r),
        iocs(make_contexts(std::max(1, options.io_threads))),
        acceptor(asio::make_strand(*iocs.front())),
        accept_timer(acceptor.get_executor()),
        handlers(static_cast<size_t>(std::max(1, options.handler_threads))) {
    for (auto& ioc : iocs) work.push_back(asio::make_work_guard(*ioc));
  }

  // One io_context per I/O thread, connections dealt to them in turn: a connection's reads,
  // writes and completions stay on one thread, and no thread hands its ready sockets to another
  // (with one context shared by N threads, Asio's scheduler wakes a second thread for almost
  // every event, which on 2 cores costs more than the work; bench/RESULTS.md).
  static std::vector<std::unique_ptr<asio::io_context>> make_contexts(int n) {
    std::vector<std::unique_ptr<asio::io_context>> out;
    for (int i = 0; i < n; ++i) out.push_back(std::make_unique<asio::io_context>(1));
    return out;
  }
  asio::io_context& next_context() { return *iocs[next_ioc++ % iocs.size()]; }

  ServerOptions options;
  const Router& router;

  // Declared before the io_contexts: sessions destroyed with them still give back their counts.
  Mutex sessions_mu;
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions JOBCTL_GUARDED_BY(sessions_mu);
  std::unordered_map<std::string, int> connections_of JOBCTL_GUARDED_BY(sessions_mu);  // per client network
  int connections JOBCTL_GUARDED_BY(sessions_mu) = 0;
  int reserved_in_use JOBCTL_GUARDED_BY(sessions_mu) = 0;  // of `connections`
  std::optional<BrowserGuard> guard;  // made by start(), once the port is known
  // Set when the server speaks TLS (ServerOptions::tls_cert_file); every connection then
  // handshakes before its first read.
#if JOBCTL_NET_TLS
  std::optional<asio::ssl::context> tls;
#endif

  std::atomic<bool> shutting_down{false};
  std::atomic<int> in_flight{0};
  std::atomic<int> uploads{0};
  std::atomic<uint64_t> next_upload{0};
  Mutex idle_mu;  // idle_cv's; in_flight is atomic, the mutex only orders its last decrement and the wait
  CondVar idle_cv;

  std::vector<std::unique_ptr<asio::io_context>> iocs;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
  size_t next_ioc = 0;  // used on the acceptor's strand only
  tcp::acceptor acceptor;
  asio::steady_timer accept_timer;  // the back-off after a failed accept (acceptor's strand)
  int accept_backoff_ms = 0;        // 0: the last accept succeeded (acceptor's strand)
  asio::thread_pool handlers;
  std::vector<std::thread> threads;
  bool started = false;
  bool stopped = false;

  void do_accept();
  void on_accept_error(const beast::error_code& ec);
  // Counts a new connection from the client network `client`: the slot it gets (none when a cap
  // is reached: the caller refuses it). Ordinary slots go first; the reserved ones once the
  // ordinary ones are taken.
  Slot take_connection(const std::string& client) JOBCTL_EXCLUDES(sessions_mu) {
    MutexLock lock(sessions_mu);
    int& mine = connections_of[client];
    if (connections >= options.max_connections || mine >= options.max_connections_per_client) {
      if (mine == 0) connections_of.erase(client);
      return Slot::none;
    }
    const int reserved = std::clamp(options.reserved_connections, 0, options.max_connections);
    const bool ordinary = connections - reserved_in_use < options.max_connections - reserved;
    ++mine;
    ++connections;
    if (ordinary) return Slot::ordinary;
    ++reserved_in_use;
    return Slot::reserved;
  }
  void give_back_connection(const std::string& client, Slot slot) JOBCTL_EXCLUDES(sessions_mu) {
    MutexLock lock(sessions_mu);
    --connections;
    if (slot == Slot::reserved) --reserved_in_use;
    if (auto it = connections_of.find(client); it != connections_of.end() && --it->second <= 0)
      connections_of.erase(it);
  }
  // Reads the certificate chain and key named by the options (nothing when tls_cert_file is empty).
  Status load_tls() {
    if (options.tls_cert_file.empty() && options.tls_key_file.empty()) return {};
    if (options.tls_cert_file.empty() || options.tls_key_file.empty())
      return make_error(ErrorCode::invalid_argument, "TLS needs both a certificate and a key file",
                        options.tls_cert_file.empty() ? "tls.cert_file" : "tls.key_file");
#if !JOBCTL_NET_TLS
    return make_error(ErrorCode::invalid_argument, "this server was built without TLS", "tls.cert_file");
#else
    asio::ssl::context ctx(asio::ssl::context::tls_server);
    // TLS 1.2 and later only.
    ctx.set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                    asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 |
                    asio::ssl::context::no_tlsv1_1 | asio::ssl::context::single_dh_use);
    beast::error_code ec;
    ctx.use_certificate_chain_file(options.tls_cert_file, ec);
    if (ec)
      return make_error(ErrorCode::invalid_argument, "cannot use the certificate file " + options.tls_cert_file + ": " +
                                                ec.message(), "tls.cert_file");
    ctx.use_private_key_file(options.tls_key_file, asio::ssl::context::pem, ec);
    if (ec)
      return make_error(ErrorCode::invalid_argument, "cannot use the key file " + options.tls_key_file + ": " + ec.message(),
                        "tls.key_file");
    tls.emplace(std::move(ctx));
    return {};
#endif
  }
  void request_done() {
    if (in_flight.fetch_sub(1) == 1) {
      MutexLock lock(idle_mu);
      idle_cv.signal_all();
    }
  }
};

namespace {

using HeaderParser = bhttp::request_parser<bhttp::empty_body>;
using StringParser = bhttp::request_parser<bhttp::string_body>;
using FileParser = bhttp::request_parser<bhttp::file_body>;

// The request as far as its headers go (the body comes later, or goes to a file).
HttpRequest header_request(const bhttp::request<bhttp::empty_body>& r) {
  HttpRequest out;
  out.method = std::string(r.method_string());
  out.target = std::string(r.target());
  if (auto it = r.find(bhttp::field::content_type); it != r.end()) out.content_type = std::string(it->value());
  for (const auto& field : r) out.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
  return out;
}

std::string lower_trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// What is wrong with the request's framing headers, if anything. A request body's length comes
// from a final "chunked" coding or from Content-Length (RFC 9112, 6.3); any other
// Transfer-Encoding leaves a server and a proxy in front of it free to disagree on where the
// request ends, so it is refused rather than guessed at.
std::optional<Error> framing_error(const bhttp::request<bhttp::empty_body>& r) {
  std::vector<std::string> codings;
  for (const auto& f : r) {
    if (f.name() != bhttp::field::transfer_encoding) continue;
    std::string_view v = f.value();
    while (!v.empty()) {
      const size_t comma = v.find(',');
      codings.push_back(lower_trimmed(v.substr(0, comma)));
      v = comma == std::string_view::npos ? std::string_view{} : v.substr(comma + 1);
    }
  }
  if (codings.empty()) return std::nullopt;
  if (codings.back() != "chunked" || std::count(codings.begin(), codings.end(), "chunked") != 1)
    return make_error(ErrorCode::invalid_argument,
                      "Transfer-Encoding must end with chunked, once (other codings are not accepted)",
                      "Transfer-Encoding");
  if (r.find(bhttp::field::content_length) != r.end())
    return make_error(ErrorCode::invalid_argument, "Transfer-Encoding and Content-Length must not both be sent",
                      "Transfer-Encoding");
  return std::nullopt;
}

// A failure of the disk an upload streams to, as opposed to the connection's.
bool is_storage_error(const beast::error_code& ec) {
  if (ec.category() != boost::system::system_category() && ec.category() != boost::system::generic_category())
    return false;
  switch (ec.value()) {
    case ENOSPC:
    case EFBIG:
    case EDQUOT:
    case EROFS:
    case EIO:
      return true;
    default:
      return false;
  }
}

// The error that says the store's disk refused an upload (disk full, read-only, over a quota).
Error storage_error(const beast::error_code& ec) {
  return make_error(ErrorCode::storage_unavailable, "the upload could not be stored: " + ec.message());
}

}  // namespace

// What the server needs of a connection whatever its stream (plain TCP or TLS).
class SessionBase {
 public:
  virtual ~SessionBase() = default;
  // On the server's shutdown: a connection waiting for its next request is closed now; one with
  // a request in flight closes after answering it.
  virtual void close_if_idle() = 0;
  virtual void force_close() = 0;
};

// One connection. Stream: beast::tcp_stream, or beast::ssl_stream<beast::tcp_stream> for TLS
// (the handshake comes first, under the read timeout). Timeouts and the socket are the lowest
// layer's in both.
template <class Stream>
class Session : public SessionBase, public std::enable_shared_from_this<Session<Stream>> {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  // `address`: the client's; `network`: what the connection was counted under, and `slot` what
  // it was given (take_connection).
  template <class... StreamArgs>
  Session(HttpServer::Impl& srv, std::string address, std::string network, Slot slot, StreamArgs&&... args)
      : srv_(srv),
        address_(std::move(address)),
        network_(std::move(network)),
        slot_(slot),
        stream_(std::forward<StreamArgs>(args)...) {}
  ~Session() override {
    finish_request();
    srv_.give_back_connection(network_, slot_);
  }

  void run() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
#if JOBCTL_NET_TLS
      if constexpr (kTls) {
        self->lowest().expires_after(std::chrono::milliseconds(self->first_request_timeout_ms()));
        self->waiting_for_request_ = true;
        self->stream_.async_handshake(asio::ssl::stream_base::server, [self](beast::error_code ec) {
          self->waiting_for_request_ = false;
          if (ec) return self->do_close();  // not TLS, a bad certificate, a timeout
          self->do_read();
        });
      } else {
        self->do_read();
      }
#else
      self->do_read();
#endif
    });
  }

  void close_if_idle() override {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
      if (self->waiting_for_request_) {
        beast::error_code ec;
        self->lowest().socket().cancel(ec);
      }
    });
  }

  void force_close() override {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] { self->do_close(); });
  }

 private:
  // ---- step one: the headers

  void do_read() {
    if (srv_.shutting_down.load()) return do_close();
    header_parser_.emplace();
    header_parser_->header_limit(static_cast<std::uint32_t>(srv_.options.max_header_bytes));
    // Beast compares Content-Length with the body limit as soon as it reads it; the limit that
    // applies depends on the route, decided once the request is admitted (on_admitted).
    header_parser_->body_limit(boost::none);
    // A connection that has sent nothing yet gets the short header timeout: an idle one must
    // not hold its slot for long.
    const int timeout_ms = requests_ == 0 ? first_request_timeout_ms() : srv_.options.idle_timeout_ms;
    lowest().expires_after(std::chrono::milliseconds(timeout_ms));
    waiting_for_request_ = true;
    bhttp::async_read_header(stream_, buffer_, *header_parser_,
                             beast::bind_front_handler(&Session<Stream>::on_header, this->shared_from_this()));
  }

  void on_header(beast::error_code ec, std::size_t) {
    waiting_for_request_ = false;
    if (ec == bhttp::error::end_of_stream || ec == asio::error::operation_aborted) return do_close();
    if (ec == bhttp::error::header_limit)
      return send_error(make_error(ErrorCode::header_too_large,
                                   "the request headers are larger than the limit of " +
                                       std::to_string(srv_.options.max_header_bytes) + " bytes"));
    if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category() &&
        ec != bhttp::error::partial_message)
      return send_error(make_error(ErrorCode::invalid_argument, "malformed HTTP request: " + ec.message()));
    if (ec) return do_close();  // timeout, reset, a client gone mid-request

    ++requests_;
    close_after_answer_ = false;
    srv_.in_flight.fetch_add(1);
    request_in_flight_ = true;
    const auto& h = header_parser_->get();
    keep_alive_ = h.keep_alive();
    version_ = h.version();
    has_body_ = !header_parser_->is_done();
    if (auto bad = framing_error(h)) return send_error(*bad);
    request_ = header_request(h);
    request_.remote_address = address_;
    if (auto st = parse_target(request_.target, request_); !st) return send_error(st.error(), has_body_);
    route_ = srv_.router.match(request_.method, request_.path);
    const bool upload_route = route_.body().kind == RequestBody::Kind::file;
    if (auto refused = srv_.guard->check(request_, has_body_, upload_route)) return send_error(*refused, has_body_);
    upload_ = has_body_ && upload_route;
    lowest().expires_never();  // nothing is read while the gate runs

    // The gate runs where the handler would (it may read the store): on the I/O thread for
    // Dispatch::io routes, else on a handler thread. A request without a body is admitted and
    // handled in one go.
    if (route_.dispatch() == Dispatch::io) return on_admitted(admit());
    asio::post(srv_.handlers, [self = this->shared_from_this()] {
      auto refusal = self->admit();
      if (!refusal && !self->has_body_) return self->run_handler();
      asio::post(self->stream_.get_executor(),
                 [self, refusal = std::move(refusal)]() mutable { self->on_admitted(std::move(refusal)); });
    });
  }

  // The gate, and on a reserved slot the check that the request may use it.
  std::optional<HttpResponse> admit() {
    auto refusal = srv_.router.admit(request_, route_);
    if (refusal || slot_ != Slot::reserved) return refusal;
    if (srv_.options.may_use_reserve && srv_.options.may_use_reserve(request_)) return std::nullopt;
    HttpResponse busy = error_response(make_error(
        ErrorCode::unavailable, "the server is at its connection limit; the connections left are kept for "
                                "workers and authenticated clients; retry shortly"));
    busy.headers.emplace_back("Retry-After", "1");
    close_after_answer_ = true;
    return busy;
  }

  void on_admitted(std::optional<HttpResponse> refusal) {
    // A refused request's body is never read: the answer goes out and the connection closes.
    if (refusal) return send(std::move(*refusal), /*close_after=*/has_body_ || close_after_answer_);
    if (!has_body_) return run_handler();
    // No route takes this body (a 404, a static file): answer without reading it.
    if (!route_.matched()) {
      close_after_answer_ = true;
      return run_handler();
    }
    const size_t limit = body_limit();
    if (auto length = header_parser_->content_length(); length && *length > limit)
      return send_error(too_large(limit));
    if (upload_) {
      if (srv_.uploads.fetch_add(1) >= srv_.options.max_concurrent_uploads) {
        srv_.uploads.fetch_sub(1);
        HttpResponse busy = error_response(make_error(
            ErrorCode::unavailable, "too many uploads at once (the limit is " +
                                        std::to_string(srv_.options.max_concurrent_uploads) + "); retry shortly"));
        busy.headers.emplace_back("Retry-After", "1");
        return send(std::move(busy), /*close_after=*/true);
      }
      holds_upload_slot_ = true;
      const std::string path = (std::filesystem::path(srv_.options.upload_dir) /
                                ("upload-" + std::to_string(::getpid()) + "-" +
                                 std::to_string(srv_.next_upload.fetch_add(1)) + ".part"))
                                   .string();
      file_parser_.emplace(std::move(*header_parser_));
      file_parser_->body_limit(limit);
      beast::error_code ec;
      file_parser_->get().body().open(path.c_str(), beast::file_mode::write_new, ec);
      if (ec) return send_error(make_error(ErrorCode::storage_unavailable, "cannot create an upload file: " + ec.message()));
      body_file_ = std::make_shared<BodyFile>(path);
    } else {
      string_parser_.emplace(std::move(*header_parser_));
      string_parser_->body_limit(limit);
    }
    header_parser_.reset();
    // A client that asked to be told before sending the body (Expect: 100-continue) is told now.
    const auto& h = upload_ ? file_parser_->get().base() : string_parser_->get().base();
    if (auto it = h.find(bhttp::field::expect); it != h.end() && lower_trimmed(it->value()) == "100-continue") {
      auto cont = std::make_shared<bhttp::response<bhttp::empty_body>>(bhttp::status::continue_, version_);
      lowest().expires_after(std::chrono::milliseconds(srv_.options.write_timeout_ms));
      return bhttp::async_write(stream_, *cont, [self = this->shared_from_this(), cont](beast::error_code ec, std::size_t) {
        if (ec) return self->do_close();
        self->read_body();
      });
    }
    read_body();
  }

  // ---- step two: the body, a piece at a time (each piece under the read timeout, so a large
  // upload may take as long as it keeps moving)

  void read_body() {
    lowest().expires_after(std::chrono::milliseconds(srv_.options.read_timeout_ms));
    auto next = beast::bind_front_handler(&Session<Stream>::on_body, this->shared_from_this());
    if (upload_)
      bhttp::async_read_some(stream_, buffer_, *file_parser_, std::move(next));
    else
      bhttp::async_read_some(stream_, buffer_, *string_parser_, std::move(next));
  }

  void on_body(beast::error_code ec, std::size_t) {
    if (ec == bhttp::error::body_limit)
      return send_error(too_large(body_limit()));
    if (ec && upload_ && is_storage_error(ec)) return send_error(storage_error(ec));
    if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category() &&
        ec != bhttp::error::partial_message)
      return send_error(make_error(ErrorCode::invalid_argument, "malformed HTTP request body: " + ec.message(), "body"));
    if (ec) return do_close();  // timeout, reset, a client gone mid-body
    const bool done = upload_ ? file_parser_->is_done() : string_parser_->is_done();
    if (!done) return read_body();
    if (upload_) {
      file_parser_->get().body().close();
      std::error_code size_ec;
      const auto size = std::filesystem::file_size(body_file_->path(), size_ec);
      if (size_ec) return send_error(storage_error(beast::error_code(size_ec.value(), boost::system::system_category())));
      body_file_->set_size(size);
      request_.body_file = std::move(body_file_);
      file_parser_.reset();
    } else {
      request_.body = std::move(string_parser_->get().body());
      string_parser_.reset();
    }
    lowest().expires_never();  // a long-poll may take a while; the handler answers in time
    if (route_.dispatch() == Dispatch::io) return run_handler();
    asio::post(srv_.handlers, [self = this->shared_from_this()] { self->run_handler(); });
  }

  // Runs the admitted request's handler on the calling thread; its answer is posted back to the
  // connection's strand.
  void run_handler() {
    HttpRequest request = std::move(request_);
    srv_.router.handle(request, route_, [self = this->shared_from_this()](HttpResponse r) {
      asio::post(self->stream_.get_executor(), [self, r = std::move(r)]() mutable {
        self->send(std::move(r), /*close_after=*/self->close_after_answer_);
      });
    });
  }

  // The most bytes the admitted request's body may have: its route's limit, else the server's.
  size_t body_limit() const {
    const size_t server = upload_ ? srv_.options.max_upload_bytes : srv_.options.max_body_bytes;
    const RequestBody body = route_.body();
    return body.max_bytes > 0 ? std::min(body.max_bytes, server) : server;
  }

  // The 413 names the route's own setting when that is the limit.
  Error too_large(size_t limit) const {
    const RequestBody body = route_.body();
    const bool route_limit = body.max_bytes > 0 && body.max_bytes == limit && !body.limit_field.empty();
    return make_error(ErrorCode::payload_too_large,
                      "the request body is larger than the limit of " + std::to_string(limit) + " bytes" +
                          (route_limit ? " (" + body.limit_field + ")" : std::string()),
                      route_limit ? body.limit_field : "body");
  }

  // ---- answers

  // An answer to a request that could not be read whole: the connection closes after it.
  void send_error(const Error& e, bool close_after = true) {
    if (version_ == 0) version_ = 11;
    send(error_response(e), close_after);
  }

  void send(HttpResponse r, bool close_after) {
    if (!r.body_path.empty()) return send_file(std::move(r), close_after);
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(
        static_cast<bhttp::status>(r.status), version_);
    res->set(bhttp::field::server, srv_.options.server_name);
    if (!r.content_type.empty()) res->set(bhttp::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    res->body() = std::move(r.body);
    const bool keep = keep_alive_ && !close_after && !srv_.shutting_down.load();
    res->keep_alive(keep);
    if (r.status == 204 || r.status == 304)
      res->erase(bhttp::field::content_length);  // no body, and no Content-Length either
    else
      res->prepare_payload();
    lowest().expires_after(std::chrono::milliseconds(srv_.options.write_timeout_ms));
    bhttp::async_write(stream_, *res,
                       [self = this->shared_from_this(), res, keep, close_after](beast::error_code ec, std::size_t) {
                         self->on_write(ec, keep, close_after);
                       });
  }

  // An answer whose body is a file: written piece by piece (file_body reads a small buffer at a
  // time), the write timeout restarted for each piece so that a large body may take as long as
  // it keeps moving.
  void send_file(HttpResponse r, bool close_after) {
    auto res = std::make_shared<bhttp::response<bhttp::file_body>>(static_cast<bhttp::status>(r.status), version_);
    beast::error_code ec;
    res->body().open(r.body_path.c_str(), beast::file_mode::scan, ec);
    if (ec) {
      HttpResponse gone = error_response(make_error(ErrorCode::not_found, "the file to send is gone"));
      return send(std::move(gone), close_after);
    }
    res->set(bhttp::field::server, srv_.options.server_name);
    if (!r.content_type.empty()) res->set(bhttp::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res->set(k, v);
    const bool keep = keep_alive_ && !close_after && !srv_.shutting_down.load();
    res->keep_alive(keep);
    res->prepare_payload();
    auto serializer = std::make_shared<bhttp::response_serializer<bhttp::file_body>>(*res);
    write_file_piece(std::move(res), std::move(serializer), std::move(r.held), keep, close_after);
  }
  void write_file_piece(std::shared_ptr<bhttp::response<bhttp::file_body>> res,
                        std::shared_ptr<bhttp::response_serializer<bhttp::file_body>> serializer,
                        std::shared_ptr<const void> held, bool keep, bool close_after) {
    lowest().expires_after(std::chrono::milliseconds(srv_.options.write_timeout_ms));
    auto& sr = *serializer;
    bhttp::async_write_some(
        stream_, sr,
        [self = this->shared_from_this(), res = std::move(res), serializer = std::move(serializer),
         held = std::move(held), keep, close_after](beast::error_code ec, std::size_t) mutable {
          if (ec || serializer->is_done()) {
            held.reset();
            return self->on_write(ec, keep, close_after);
          }
          self->write_file_piece(std::move(res), std::move(serializer), std::move(held), keep, close_after);
        });
  }

  void on_write(beast::error_code ec, bool keep, bool after_bad_request) {
    finish_request();
    if (ec) return do_close();
    if (after_bad_request) return lingering_close();
    if (!keep) return do_close();
    do_read();
  }

  // The request is over (answered, or its connection gone): it no longer counts as in flight,
  // its upload slot is free and an upload file nobody took is removed.
  void finish_request() {
    if (holds_upload_slot_) {
      holds_upload_slot_ = false;
      srv_.uploads.fetch_sub(1);
    }
    file_parser_.reset();
    body_file_.reset();
    if (request_in_flight_) {
      request_in_flight_ = false;
      srv_.request_done();
    }
  }

  // After refusing a request whose body we did not read, close politely: stop sending, read and
  // drop what the client is still sending (briefly), then close, so the client sees our answer
  // rather than a connection reset.
  void lingering_close() {
    beast::error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_send, ec);
    lowest().expires_after(std::chrono::seconds(2));
    drain_ = std::make_shared<std::array<char, 65536>>();
    drain();
  }
  void drain() {
    stream_.async_read_some(asio::buffer(*drain_), [self = this->shared_from_this()](beast::error_code ec, std::size_t) {
      if (ec) return self->do_close();
      self->drain();
    });
  }

  void do_close() {
    beast::error_code ec;
    lowest().socket().shutdown(tcp::socket::shutdown_both, ec);
    lowest().socket().close(ec);
    finish_request();
    MutexLock lock(srv_.sessions_mu);
    srv_.sessions.erase(this);
  }

  auto& lowest() { return beast::get_lowest_layer(stream_); }
  int first_request_timeout_ms() const {
    return std::min(srv_.options.header_timeout_ms, srv_.options.read_timeout_ms);
  }

  HttpServer::Impl& srv_;
  const std::string address_;
  const std::string network_;
  const Slot slot_;
  Stream stream_;
  beast::flat_buffer buffer_;
  // One request at a time: its headers, then its body as a string or into a file.
  std::optional<HeaderParser> header_parser_;
  std::optional<StringParser> string_parser_;
  std::optional<FileParser> file_parser_;
  HttpRequest request_;
  Router::Match route_;
  std::shared_ptr<BodyFile> body_file_;  // the upload's file until the handler gets it
  std::shared_ptr<std::array<char, 65536>> drain_;
  bool keep_alive_ = true;
  unsigned version_ = 11;
  uint64_t requests_ = 0;
  bool has_body_ = false;
  bool upload_ = false;
  bool holds_upload_slot_ = false;
  bool close_after_answer_ = false;  // the body was not read: close once answered
  bool waiting_for_request_ = false;
  bool request_in_flight_ = false;
};

namespace {

// A connection over a cap: a short 503 written without waiting (a fresh socket's send buffer is
// empty), then closed. (On a TLS port it is only closed: a plain answer would be noise there.)
void refuse_connection(tcp::socket& socket, const std::string& why, bool tls) {
  const std::string body = "{\"error\":{\"code\":\"unavailable\",\"message\":\"" + why + "\",\"field\":null}}\n";
  const std::string answer = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
                             "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  beast::error_code ec;
  socket.non_blocking(true, ec);
  if (!tls) socket.write_some(asio::buffer(answer), ec);
  socket.shutdown(tcp::socket::shutdown_both, ec);
  socket.close(ec);
}

}  // namespace

void HttpServer::Impl::do_accept() {
  acceptor.async_accept(asio::make_strand(next_context()), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (ec) return on_accept_error(ec);
    accept_backoff_ms = 0;
    if (shutting_down.load()) return do_accept();
    beast::error_code addr_ec;
    const auto remote = socket.remote_endpoint(addr_ec);
    const std::string address = addr_ec ? std::string("?") : remote.address().to_string();
    const std::string network = addr_ec ? address : client_network(remote.address());
    const Slot slot = take_connection(network);
    if (slot == Slot::none) {
#if JOBCTL_NET_TLS
      const bool over_tls = tls.has_value();
#else
      const bool over_tls = false;
#endif
      refuse_connection(socket, "too many connections (at most " + std::to_string(options.max_connections) +
                                    ", " + std::to_string(options.max_connections_per_client) +
                                    " per client network)",
                        over_tls);
      return do_accept();
    }
    auto start_session = [this](auto s) {
      {
        MutexLock lock(sessions_mu);
        sessions[s.get()] = s;
      }
      s->run();
    };
#if JOBCTL_NET_TLS
    if (tls) {
      start_session(std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(*this, address, network, slot,
                                                                                    std::move(socket), *tls));
      return do_accept();
    }
#endif
    start_session(std::make_shared<Session<beast::tcp_stream>>(*this, address, network, slot, std::move(socket)));
    do_accept();
  });
}

// A failed accept is retried after a pause, never at once: when the process is out of file
// descriptors (or the system out of buffers) the pending connection stays in the backlog and an
// immediate retry fails again at once, a busy loop that would starve every other connection.
// The pause doubles up to a second while the failures last.
void HttpServer::Impl::on_accept_error(const beast::error_code& ec) {
  const bool exhausted = ec == asio::error::no_descriptors || ec == asio::error::no_buffer_space ||
                         ec == asio::error::no_memory ||
                         ec == beast::error_code(ENFILE, boost::system::system_category());
  if (exhausted) {
    if (accept_backoff_ms == 0)
      LogLine() << options.server_name << ": cannot accept connections: " << ec.message()
                << "; pausing accepts until descriptors free up";
    accept_backoff_ms = accept_backoff_ms == 0 ? 10 : std::min(accept_backoff_ms * 2, 1000);
  } else {
    accept_backoff_ms = 1;  // a connection reset before it was accepted, and the like
  }
  accept_timer.expires_after(std::chrono::milliseconds(accept_backoff_ms));
  accept_timer.async_wait([this](beast::error_code wait_ec) {
    if (wait_ec || !acceptor.is_open()) return;
    do_accept();
  });
}

HttpServer::HttpServer(ServerOptions options, const Router& router)
    : impl_(std::make_unique<Impl>(std::move(options), router)) {}

HttpServer::~HttpServer() { stop(); }

Expected<uint16_t> HttpServer::start() {
  Impl& s = *impl_;
  if (auto st = s.load_tls(); !st) return st.error();
  const auto routes = s.router.routes();
  const bool uploads = std::any_of(routes.begin(), routes.end(),
                                   [](const RouteSpec* r) { return r->body.kind == RequestBody::Kind::file; });
  if (uploads && s.options.upload_dir.empty())
    return make_error(ErrorCode::invalid_argument, "uploads need an upload folder", "upload_dir");
  beast::error_code ec;
  auto address = asio::ip::make_address(s.options.host, ec);
  if (ec) return make_error(ErrorCode::invalid_argument, "bad listen address '" + s.options.host + "': " + ec.message(), "listen");
  tcp::endpoint endpoint(address, s.options.port);
  s.acceptor.open(endpoint.protocol(), ec);
  if (!ec) s.acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) s.acceptor.bind(endpoint, ec);
  if (!ec) s.acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec)
    return make_error(ErrorCode::unavailable, "cannot listen on " + s.options.host + ":" +
                                         std::to_string(s.options.port) + ": " + ec.message(), "listen");
  const uint16_t port = s.acceptor.local_endpoint().port();
#if JOBCTL_NET_TLS
  const bool tls = s.tls.has_value();
#else
  const bool tls = false;
#endif
  s.guard.emplace(s.options.host, port, tls, s.options.allowed_hosts);
  s.do_accept();
  for (auto& ioc : s.iocs) s.threads.emplace_back([&ctx = *ioc] { ctx.run(); });
  s.started = true;
  return port;
}

void HttpServer::begin_shutdown() {
  Impl& s = *impl_;
  if (s.shutting_down.exchange(true)) return;
  asio::dispatch(s.acceptor.get_executor(), [&s] {
    beast::error_code ec;
    s.acceptor.close(ec);
    s.accept_timer.cancel();
  });
  std::vector<std::shared_ptr<SessionBase>> live;
  {
    MutexLock lock(s.sessions_mu);
    for (auto& [p, w] : s.sessions)
      if (auto sp = w.lock()) live.push_back(std::move(sp));
  }
  for (auto& sp : live) sp->close_if_idle();
}

bool HttpServer::wait_idle(int timeout_ms) {
  Impl& s = *impl_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  MutexLock lock(s.idle_mu);
  while (s.in_flight.load() != 0) {
    if (!s.idle_cv.wait_until(s.idle_mu, deadline)) return s.in_flight.load() == 0;
  }
  return true;
}

int HttpServer::in_flight() const { return impl_->in_flight.load(); }

int HttpServer::connections() const {
  MutexLock lock(impl_->sessions_mu);
  return impl_->connections;
}

void HttpServer::stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  if (s.started) {
    begin_shutdown();
    if (!wait_idle(s.options.shutdown_grace_ms))
      LogLine() << s.options.server_name << ": " << s.in_flight.load()
                << " request(s) still in flight after the shutdown grace period; closing them";
    std::vector<std::shared_ptr<SessionBase>> live;
    {
      MutexLock lock(s.sessions_mu);
      for (auto& [p, w] : s.sessions)
        if (auto sp = w.lock()) live.push_back(std::move(sp));
    }
    for (auto& sp : live) sp->force_close();
    live.clear();
  }
  for (auto& w : s.work) w.reset();
  s.handlers.join();
  for (auto& ioc : s.iocs) ioc->stop();
  for (auto& t : s.threads) t.join();
  s.threads.clear();
}

}  // namespace jobctl::net
