// The one translation unit that includes Boost.Beast (compile time: see server.h).
#include "net/server.h"

#include "base/log_line.h"

#include <array>
#include <atomic>
#include <chrono>
#include <iostream>
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
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#if JOBCTL_NET_TLS
#include <boost/asio/ssl.hpp>
#include <boost/beast/ssl.hpp>
#endif

#include "base/mutex.h"
#include "net/json_body.h"

namespace jobctl::net {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using tcp = boost::asio::ip::tcp;

class SessionBase;

struct HttpServer::Impl {
  Impl(ServerOptions o, const Router& r)
      : options(std::move(o)),
        router(r),
        iocs(make_contexts(std::max(1, options.io_threads))),
        acceptor(asio::make_strand(*iocs.front())),
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

  Mutex sessions_mu;
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions JOBCTL_GUARDED_BY(sessions_mu);
  // Set when the server speaks TLS (ServerOptions::tls_cert_file); every connection then
  // handshakes before its first read.
#if JOBCTL_NET_TLS
  std::optional<asio::ssl::context> tls;
#endif

  std::atomic<bool> shutting_down{false};
  std::atomic<int> in_flight{0};
  Mutex idle_mu;  // idle_cv's; in_flight is atomic, the mutex only orders its last decrement and the wait
  CondVar idle_cv;

  std::vector<std::unique_ptr<asio::io_context>> iocs;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
  size_t next_ioc = 0;  // used on the acceptor's strand only
  tcp::acceptor acceptor;
  asio::thread_pool handlers;
  std::vector<std::thread> threads;
  bool started = false;
  bool stopped = false;

  void do_accept();
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

HttpRequest to_request(const bhttp::request<bhttp::string_body>& r) {
  HttpRequest out;
  out.method = std::string(r.method_string());
  out.target = std::string(r.target());
  if (auto it = r.find(bhttp::field::content_type); it != r.end()) out.content_type = std::string(it->value());
  if (auto it = r.find(bhttp::field::authorization); it != r.end()) out.authorization = std::string(it->value());
  if (auto it = r.find("Idempotency-Key"); it != r.end()) out.idempotency_key = std::string(it->value());
  if (auto it = r.find(bhttp::field::if_none_match); it != r.end()) out.if_none_match = std::string(it->value());
  out.body = r.body();
  return out;
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

  template <class... StreamArgs>
  Session(HttpServer::Impl& srv, StreamArgs&&... args) : srv_(srv), stream_(std::forward<StreamArgs>(args)...) {}

  void run() {
    asio::dispatch(stream_.get_executor(), [self = this->shared_from_this()] {
#if JOBCTL_NET_TLS
      if constexpr (kTls) {
        self->lowest().expires_after(std::chrono::milliseconds(self->srv_.options.read_timeout_ms));
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
  void do_read() {
    if (srv_.shutting_down.load()) return do_close();
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(srv_.options.max_header_bytes));
    parser_->body_limit(std::max(srv_.options.max_body_bytes, srv_.options.max_upload_bytes));
    lowest().expires_after(std::chrono::milliseconds(srv_.options.read_timeout_ms));
    waiting_for_request_ = true;
    // Headers first: the body limit depends on the route (uploads may be larger).
    bhttp::async_read_header(stream_, buffer_, *parser_,
                             beast::bind_front_handler(&Session<Stream>::on_header, this->shared_from_this()));
  }

  void on_header(beast::error_code ec, std::size_t n) {
    if (ec) return on_read(ec, n);
    const auto& h = parser_->get();
    const bool upload = srv_.options.is_upload &&
                        srv_.options.is_upload(std::string_view(h.method_string()), std::string_view(h.target()));
    const size_t limit = upload ? srv_.options.max_upload_bytes : srv_.options.max_body_bytes;
    if (auto length = parser_->content_length(); length && *length > limit) {
      waiting_for_request_ = false;
      version_ = h.version();
      return send_error(make_error(ErrorCode::payload_too_large,
                                   "the request body is larger than the limit of " +
                                       std::to_string(limit) + " bytes",
                                   "body"));
    }
    parser_->body_limit(limit);
    bhttp::async_read(stream_, buffer_, *parser_,
                      beast::bind_front_handler(&Session<Stream>::on_read, this->shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    waiting_for_request_ = false;
    if (ec == bhttp::error::end_of_stream || ec == asio::error::operation_aborted) return do_close();
    if (ec == bhttp::error::body_limit)
      return send_error(make_error(ErrorCode::payload_too_large,
                                   "the request body is larger than the limit of " +
                                       std::to_string(srv_.options.max_body_bytes) + " bytes",
                                   "body"));
    if (ec == bhttp::error::header_limit)
      return send_error(make_error(ErrorCode::header_too_large,
                                   "the request headers are larger than the limit of " +
                                       std::to_string(srv_.options.max_header_bytes) + " bytes"));
    if (ec && ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category() &&
        ec != bhttp::error::partial_message)
      return send_error(make_error(ErrorCode::invalid_argument, "malformed HTTP request: " + ec.message()));
    if (ec) return do_close();  // timeout, reset, a client gone mid-request

    const auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    version_ = req.version();
    HttpRequest request = to_request(req);
    if (auto st = parse_target(request.target, request); !st) return send_error(st.error(), false);

    lowest().expires_never();  // a long-poll may take a while; the handler answers in time
    srv_.in_flight.fetch_add(1);
    request_in_flight_ = true;
    // Non-blocking routes run here on the connection's strand; the others on a handler thread.
    Router::Match route = srv_.router.match(request.method, request.path);
    const Dispatch where = route.dispatch();
    auto run = [self = this->shared_from_this(), request = std::move(request), route = std::move(route)] {
      self->srv_.router.handle(request, route, [self](HttpResponse r) {
        asio::post(self->stream_.get_executor(), [self, r = std::move(r)]() mutable {
          self->send(std::move(r), /*close_after=*/false);
        });
      });
    };
    if (where == Dispatch::io)
      run();
    else
      asio::post(srv_.handlers, std::move(run));
  }

  // An answer to a request that could not be read whole: the connection closes after it.
  void send_error(const Error& e, bool close_after = true) {
    if (version_ == 0) version_ = 11;
    send(error_response(e), close_after);
  }

  void send(HttpResponse r, bool close_after) {
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

  void on_write(beast::error_code ec, bool keep, bool after_bad_request) {
    if (request_in_flight_) {
      request_in_flight_ = false;
      srv_.request_done();
    }
    if (ec) return do_close();
    if (after_bad_request) return lingering_close();
    if (!keep) return do_close();
    do_read();
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
    MutexLock lock(srv_.sessions_mu);
    srv_.sessions.erase(this);
  }

  auto& lowest() { return beast::get_lowest_layer(stream_); }

  HttpServer::Impl& srv_;
  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::shared_ptr<std::array<char, 65536>> drain_;
  bool keep_alive_ = true;
  unsigned version_ = 11;
  bool waiting_for_request_ = false;
  bool request_in_flight_ = false;
};

void HttpServer::Impl::do_accept() {
  acceptor.async_accept(asio::make_strand(next_context()), [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) return;
    if (!ec && !shutting_down.load()) {
      auto start_session = [this](auto s) {
        {
          MutexLock lock(sessions_mu);
          sessions[s.get()] = s;
        }
        s->run();
      };
#if JOBCTL_NET_TLS
      if (tls) {
        start_session(std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(*this, std::move(socket), *tls));
        return do_accept();
      }
#endif
      start_session(std::make_shared<Session<beast::tcp_stream>>(*this, std::move(socket)));
    }
    do_accept();
  });
}

HttpServer::HttpServer(ServerOptions options, const Router& router)
    : impl_(std::make_unique<Impl>(std::move(options), router)) {}

HttpServer::~HttpServer() { stop(); }

Expected<uint16_t> HttpServer::start() {
  Impl& s = *impl_;
  if (auto st = s.load_tls(); !st) return st.error();
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

void HttpServer::stop() {
  Impl& s = *impl_;
  if (s.stopped) return;
  s.stopped = true;
  if (s.started) {
    begin_shutdown();
    if (!wait_idle(s.options.shutdown_grace_ms))
      LogLine() << "jobctld: " << s.in_flight.load()
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
