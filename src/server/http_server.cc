#include "server/http_server.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/system/errc.hpp>
#include <chrono>
#include <cstdint>
#include <limits>

#include "common/json_writer.h"
#include "common/mutex.h"
#include "common/thread_name.h"

namespace sightline {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using TlsStream = beast::ssl_stream<beast::tcp_stream>;
constexpr auto kNoThrow = asio::experimental::as_tuple(asio::use_awaitable);

namespace {

// Suspends the coroutine until `start` calls its callback (from any thread),
// then resumes it on its own executor with the callback's value.
template <typename T, typename Start>
auto AwaitCallback(Start start) {
  return asio::async_initiate<const asio::use_awaitable_t<>&, void(T)>(
      [start = std::move(start)](auto handler) mutable {
        auto ex = asio::get_associated_executor(handler);
        auto h = std::make_shared<decltype(handler)>(std::move(handler));
        start([h, ex](T value) { asio::post(ex, [h, v = std::move(value)]() mutable { (*h)(std::move(v)); }); });
      },
      asio::use_awaitable);
}

// The client's IP as text ("" when the socket has no peer any more): logins
// are throttled per address.
std::string PeerAddress(const tcp::socket& socket) {
  boost::system::error_code ec;
  auto peer = socket.remote_endpoint(ec);
  return ec ? std::string() : peer.address().to_string();
}

// The TCP stream under a session's stream (itself, or under TLS): its
// timeouts, its socket.
beast::tcp_stream& Tcp(beast::tcp_stream& stream) { return stream; }
beast::tcp_stream& Tcp(TlsStream& stream) { return stream.next_layer(); }

// A server context that loads `cert_file` (PEM, the leaf first, then any
// intermediates) and `key_file` (PEM), and speaks TLS 1.2 and 1.3 only.
Result<std::shared_ptr<asio::ssl::context>> LoadTlsContext(const std::string& cert_file, const std::string& key_file) {
  auto ctx = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
  boost::system::error_code ec;
  ctx->set_options(asio::ssl::context::default_workarounds | asio::ssl::context::no_sslv2 |
                       asio::ssl::context::no_sslv3 | asio::ssl::context::no_tlsv1 | asio::ssl::context::no_tlsv1_1 |
                       asio::ssl::context::single_dh_use,
                   ec);
  if (!ec) ctx->use_certificate_chain_file(cert_file, ec);
  if (ec) return Status::InvalidArgument("cannot load the TLS certificate " + cert_file + ": " + ec.message());
  // OpenSSL also checks here that the key is the certificate's.
  ctx->use_private_key_file(key_file, asio::ssl::context::pem, ec);
  if (ec) {
    return Status::InvalidArgument("cannot use the TLS key " + key_file + " with the certificate " + cert_file + ": " +
                                   ec.message());
  }
  return ctx;
}

bool IngestPath(std::string_view path, bool api_port, Signal* signal) {
  std::string_view rest;
  if (api_port) {
    if (!path.starts_with("/api/otel/v1/")) return false;
    rest = path.substr(std::string_view("/api/otel/v1/").size());
  } else {
    if (!path.starts_with("/v1/")) return false;
    rest = path.substr(4);
  }
  if (rest == "traces") *signal = Signal::kSpans;
  else if (rest == "logs") *signal = Signal::kLogs;
  else if (rest == "metrics") *signal = Signal::kMetrics;
  else return false;
  return true;
}

std::string JsonError(const std::string& message) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("error");
  w.String(message);
  w.EndObject();
  return out;
}

// Accept errors that come from a shortage of descriptors or kernel memory.
// The connection stays queued, so accepting again at once would fail again
// at once: a spin that takes a core and starves the sessions that could free
// descriptors.
bool IsResourceShortage(const boost::system::error_code& ec) {
  namespace errc = boost::system::errc;
  return ec == errc::too_many_files_open || ec == errc::too_many_files_open_in_system || ec == errc::no_buffer_space ||
         ec == errc::not_enough_memory;
}

// The UI loads only its own scripts, styles and data, and is never framed;
// other answers (JSON, metrics) are data and may load nothing.
constexpr const char* kUiPolicy =
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
constexpr const char* kDataPolicy = "default-src 'none'; frame-ancestors 'none'";

bool HasHeader(const HttpResponse& r, std::string_view name) {
  return std::any_of(r.headers.begin(), r.headers.end(), [name](const auto& h) {
    return h.first.size() == name.size() &&
           std::equal(h.first.begin(), h.first.end(), name.begin(), [](char a, char b) {
             return std::tolower(static_cast<unsigned char>(a)) == std::tolower(static_cast<unsigned char>(b));
           });
  });
}

//! Browser protections for every answer of the API port (UI and API JSON),
//! unless the route set its own.
void AddSecurityHeaders(HttpResponse* r) {
  const bool html = r->content_type.starts_with("text/html");
  auto add = [r](const char* name, const char* value) {
    if (!HasHeader(*r, name)) r->headers.emplace_back(name, value);
  };
  add("Content-Security-Policy", html ? kUiPolicy : kDataPolicy);
  add("X-Content-Type-Options", "nosniff");
  add("Referrer-Policy", "no-referrer");
  add("X-Frame-Options", "DENY");  // frame-ancestors for browsers without CSP 2
}

//! The answer to a connection past the cap, written without waiting: the
//! socket's send buffer is empty, so it fits; if not, the close says enough.
const std::string& TooManyConnectionsResponse() {
  static const std::string response = [] {
    std::string body = JsonError("too many open connections; retry later");
    return "HTTP/1.1 503 Service Unavailable\r\nServer: sightline\r\nContent-Type: application/json\r\n"
           "Retry-After: 1\r\nConnection: close\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n" + body;
  }();
  return response;
}

// Open connections of one listener; shared with the sessions, which may
// outlive the listener during shutdown.
struct ConnectionCount {
  std::atomic<int> open{0};
  std::atomic<uint64_t> refused{0};
};

//! Holds one connection's place in its listener's count.
class ConnectionSlot {
 public:
  explicit ConnectionSlot(std::shared_ptr<ConnectionCount> count) : count_(std::move(count)) { count_->open++; }
  ConnectionSlot(ConnectionSlot&& other) noexcept = default;
  ConnectionSlot(const ConnectionSlot&) = delete;
  ConnectionSlot& operator=(const ConnectionSlot&) = delete;
  ConnectionSlot& operator=(ConnectionSlot&&) = delete;
  ~ConnectionSlot() {
    if (count_) count_->open--;
  }

 private:
  std::shared_ptr<ConnectionCount> count_;
};

}  // namespace

Status ParseHostPort(const std::string& s, std::string* host, int* port) {
  size_t colon = s.rfind(':');
  if (colon == std::string::npos) return Status::InvalidArgument("address '" + s + "' is not HOST:PORT");
  std::string h = s.substr(0, colon);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  try {
    size_t used = 0;
    int p = std::stoi(s.substr(colon + 1), &used);
    if (used != s.size() - colon - 1 || p < 0 || p > 65535) throw std::out_of_range("port");
    *port = p;
  } catch (const std::exception&) {
    return Status::InvalidArgument("address '" + s + "' has no valid port");
  }
  *host = h.empty() ? "0.0.0.0" : h;
  return Status::Ok();
}

class HttpServer::Impl {
 public:
  Impl(asio::io_context* ioc, IngestService* ingest, ApiService* api, asio::thread_pool* query_pool,
       SimpleRoutes routes, HttpServerOptions options)
      : ioc_(ioc), ingest_(ingest), api_(api), query_pool_(query_pool), routes_(std::move(routes)), options_(options) {}

  Result<int> Listen(const std::string& host_port, bool api_port) {
    std::string host;
    int port = 0;
    SL_RETURN_IF_ERROR(ParseHostPort(host_port, &host, &port));
    if (!options_.tls_cert_file.empty() && !tls_) {
      SL_ASSIGN_OR_RETURN(tls_, LoadTlsContext(options_.tls_cert_file, options_.tls_key_file));
    }
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(host, ec);
    if (ec) return Status::InvalidArgument("cannot parse address '" + host + "': " + ec.message());
    auto listener = std::make_unique<Listener>(*ioc_, api_port);
    tcp::acceptor& acceptor = listener->acceptor;
    tcp::endpoint ep(addr, static_cast<unsigned short>(port));
    acceptor.open(ep.protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(ep, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return Status::IoError("cannot listen on " + host_port + ": " + ec.message());
    int bound = acceptor.local_endpoint().port();
    asio::co_spawn(listener->strand, Accept(listener.get()), asio::detached);
    listeners_.push_back(std::move(listener));
    return bound;
  }

  void StopAccepting() {
    for (auto& l : listeners_) {
      asio::post(l->strand, [listener = l.get()] {
        boost::system::error_code ec;
        listener->acceptor.close(ec);
        listener->backoff.cancel();
      });
    }
  }

  std::vector<ListenerStats> GetListenerStats() const {
    std::vector<ListenerStats> out;
    for (const auto& l : listeners_) {
      out.push_back(ListenerStats{l->api_port, l->count->open.load(), l->count->refused.load()});
    }
    return out;
  }

 private:
  // A listening socket and its accept loop, which runs on `strand` (as does
  // StopAccepting's close).
  struct Listener {
    Listener(asio::io_context& ioc, bool api)
        : strand(asio::make_strand(ioc)), acceptor(strand), backoff(strand), api_port(api) {}
    asio::strand<asio::io_context::executor_type> strand;
    tcp::acceptor acceptor;
    asio::steady_timer backoff;
    const bool api_port;
    std::shared_ptr<ConnectionCount> count = std::make_shared<ConnectionCount>();
  };

  static const char* ListenerName(const Listener& l) { return l.api_port ? "API" : "OTLP"; }

  asio::awaitable<void> Accept(Listener* listener) {
    tcp::acceptor& acceptor = listener->acceptor;
    constexpr auto kFirstBackoff = std::chrono::milliseconds(10);
    constexpr auto kMaxBackoff = std::chrono::milliseconds(1000);
    std::chrono::milliseconds backoff{0};  // > 0 while accept fails for a shortage
    uint64_t refused_in_burst = 0;         // > 0 while at the connection cap
    for (;;) {
      auto strand = asio::make_strand(*ioc_);
      auto [ec, socket] = co_await acceptor.async_accept(strand, kNoThrow);
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
        if (!IsResourceShortage(ec)) {
          spdlog::warn("accept failed on the {} port: {}", ListenerName(*listener), ec.message());
          continue;
        }
        if (backoff.count() == 0) {
          spdlog::error(
              "accept failed on the {} port: {}; pausing new connections (backoff up to {} ms) until "
              "descriptors are free: raise the open-file limit (ulimit -n) or lower --max-connections",
              ListenerName(*listener), ec.message(), kMaxBackoff.count());
        }
        backoff = std::clamp(backoff * 2, kFirstBackoff, kMaxBackoff);
        listener->backoff.expires_after(backoff);
        co_await listener->backoff.async_wait(kNoThrow);  // cancelled by StopAccepting
        if (!acceptor.is_open()) co_return;
        continue;
      }
      if (backoff.count() > 0) {
        spdlog::info("the {} port accepts connections again", ListenerName(*listener));
        backoff = std::chrono::milliseconds(0);
      }
      if (listener->count->open.load() >= options_.max_connections) {
        if (refused_in_burst++ == 0) {
          spdlog::warn("the {} port holds its cap of {} open connections (--max-connections): refusing new ones",
                       ListenerName(*listener), options_.max_connections);
        }
        listener->count->refused++;
        if (!tls_) {  // under TLS the answer would need a handshake first: the close says enough
          const std::string& answer = TooManyConnectionsResponse();
          (void)::send(socket.native_handle(), answer.data(), answer.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
        }
        boost::system::error_code ignored;
        socket.close(ignored);
        continue;
      }
      if (refused_in_burst > 0) {
        spdlog::info("the {} port accepts connections again after refusing {} at its cap", ListenerName(*listener),
                     refused_in_burst);
        refused_in_burst = 0;
      }
      ConnectionSlot slot(listener->count);
      auto on_end = [](std::exception_ptr e) {
        if (!e) return;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          spdlog::error("connection ended by an exception: {}", ex.what());
        }
      };
      if (tls_) {
        asio::co_spawn(strand, TlsSession(std::move(socket), listener->api_port, std::move(slot)), on_end);
      } else {
        asio::co_spawn(strand, PlainSession(std::move(socket), listener->api_port, std::move(slot)), on_end);
      }
    }
  }

  // `slot` holds the connection's place in its listener's count until the
  // session ends.
  asio::awaitable<void> PlainSession(tcp::socket socket, bool api_port, ConnectionSlot slot) {
    beast::tcp_stream stream(std::move(socket));
    co_await Session(stream, api_port);
  }

  // The handshake has the header timeout: a client that connects and sends
  // nothing holds its slot no longer than one that sends no headers. A
  // failed handshake (plain HTTP on this port, an untrusted certificate)
  // closes the connection; there is no HTTP to answer it in.
  asio::awaitable<void> TlsSession(tcp::socket socket, bool api_port, ConnectionSlot slot) {
    TlsStream stream(beast::tcp_stream(std::move(socket)), *tls_);
    Tcp(stream).expires_after(std::chrono::milliseconds(options_.header_timeout_ms));
    auto [ec] = co_await stream.async_handshake(asio::ssl::stream_base::server, kNoThrow);
    if (ec) {
      spdlog::debug("TLS handshake failed: {}", ec.message());
      co_return;
    }
    co_await Session(stream, api_port);
  }

  template <typename Stream>
  asio::awaitable<void> Session(Stream& stream, bool api_port) {
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(16 * 1024);
      // Body limits are set per route once the headers are known; a limit here
      // would fail the header read itself for a large Content-Length.
      parser.body_limit(std::numeric_limits<std::uint64_t>::max());
      Tcp(stream).expires_after(std::chrono::milliseconds(options_.header_timeout_ms));
      auto [ec, n] = co_await http::async_read_header(stream, buffer, parser, kNoThrow);
      if (ec) {
        if (ec == http::error::header_limit || ec == http::error::bad_target || ec == http::error::bad_method ||
            ec == http::error::bad_version || ec == http::error::bad_field) {
          HttpResponse bad{400, "application/json", JsonError("malformed HTTP request: " + ec.message()), {}, true};
          co_await Write(stream, bad, 11, false);
        }
        break;
      }
      const auto& header = parser.get();
      unsigned version = header.version();
      bool keep_alive = header.keep_alive();
      const bool head = header.method() == http::verb::head;
      std::string target(header.target());
      size_t q = target.find('?');
      std::string path = target.substr(0, q);
      std::string query = q == std::string::npos ? "" : target.substr(q + 1);
      Signal signal;
      HttpResponse res;
      std::unique_ptr<AdmittedExport> admitted;  // holds its admission until the response is written
      if (IngestPath(path, api_port, &signal)) {
        const CorsRequest cors{header.method_string(), header[http::field::origin],
                               header[http::field::access_control_request_method]};
        if (options_.cors.IsPreflight(cors)) {
          res = options_.cors.Preflight(cors);
          res.close = !parser.is_done();
        } else {
          const std::string origin(cors.origin);
          res = co_await Ingest(stream, buffer, parser, signal, &admitted);
          options_.cors.AddResponseHeaders(origin, &res);
        }
      } else {
        parser.body_limit(64 * 1024);
        Tcp(stream).expires_after(std::chrono::milliseconds(options_.body_timeout_ms));
        auto [ec2, n2] = co_await http::async_read(stream, buffer, parser, kNoThrow);
        if (ec2) {
          if (ec2 == http::error::body_limit) {
            res = HttpResponse{413, "application/json", JsonError("request body too large"), {}, true};
          } else {
            break;
          }
        } else if (api_port && api_ != nullptr && path.starts_with("/api/v1/")) {
          const auto& req = parser.get();
          ApiRequest ar{std::string(req.method_string()),
                        path,
                        query,
                        std::string(req[http::field::cookie]),
                        std::string(req[http::field::authorization]),
                        req.body(),
                        PeerAddress(Tcp(stream).socket())};
          ApiCall call = api_->Prepare(ar);
          // Not a ?: expression: g++ 12 destroys temporaries twice around a
          // co_await inside a conditional operator.
          if (call.immediate) {
            res = std::move(*call.immediate);
          } else if (call.login) {
            res = co_await RunLogin(call);
          } else {
            res = co_await RunQuery(stream, call);
          }
        } else {
          const auto& req = parser.get();
          RouteRequest route{req.method_string(),
                             path,
                             query,
                             req[http::field::cookie],
                             req[http::field::authorization],
                             req[http::field::accept],
                             req[http::field::accept_encoding],
                             api_port};
          auto r = routes_(route);
          if (!r) {
            res = HttpResponse{404, "application/json", JsonError("no such path: " + path), {}, false};
          } else if (auto* now = std::get_if<HttpResponse>(&*r)) {
            res = std::move(*now);
          } else {
            res = co_await RunBlocking(std::move(std::get<BlockingRoute>(*r)));
          }
        }
      }
      if (api_port) AddSecurityHeaders(&res);
      bool ok = co_await Write(stream, res, version, keep_alive && !res.close, head);
      if (ok && res.close && !parser.is_done()) {
        co_await DrainUnreadBody(Tcp(stream));
        co_return;
      }
      if (!ok || !keep_alive || res.close) break;
    }
    boost::system::error_code ec;
    Tcp(stream).socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  // A login hashes a password: it runs on the LoginService's thread, never
  // on this one, so a flood of logins cannot stall the sessions that share it.
  asio::awaitable<HttpResponse> RunLogin(const ApiCall& call) {
    auto response = co_await AwaitCallback<std::shared_ptr<HttpResponse>>([&](auto done) {
      api_->Login(call, [done](HttpResponse r) { done(std::make_shared<HttpResponse>(std::move(r))); });
    });
    co_return std::move(*response);
  }

  // A route's blocking work, on the query pool.
  asio::awaitable<HttpResponse> RunBlocking(BlockingRoute work) {
    auto response = co_await AwaitCallback<std::shared_ptr<HttpResponse>>([&](auto done) {
      asio::post(*query_pool_, [work = std::move(work), done] {
        NameThisThread("sl-query");
        done(std::make_shared<HttpResponse>(work()));
      });
    });
    co_return std::move(*response);
  }

  // Runs a query call on the query pool with a leased reader. The engine query
  // is interrupted when the deadline passes or the client disconnects, and the
  // reader goes back to the pool as soon as the query returns.
  template <typename Stream>
  asio::awaitable<HttpResponse> RunQuery(Stream& stream, const ApiCall& call) {
    struct Shared {
      Mutex mu;
      TelemetryReader* reader GUARDED_BY(mu) = nullptr;  // set while a query runs
      bool cancelled GUARDED_BY(mu) = false;
      bool done GUARDED_BY(mu) = false;
      void Cancel() EXCLUDES(mu) {
        MutexLock lock(&mu);
        if (done) return;
        cancelled = true;
        if (reader) reader->Interrupt();
      }
    };
    auto shared = std::make_shared<Shared>();
    const int64_t timeout_ms = api_->options().query_timeout_ms;
    auto started = std::chrono::steady_clock::now();

    // Deadline: interrupt, and keep interrupting every 50 ms in case the
    // first one landed between two statements of the call.
    auto timer = std::make_shared<asio::steady_timer>(stream.get_executor(), std::chrono::milliseconds(timeout_ms));
    struct Rearm {
      std::shared_ptr<Shared> shared;
      std::shared_ptr<asio::steady_timer> timer;
      void operator()(boost::system::error_code ec) const {
        if (ec) return;
        shared->Cancel();
        {
          MutexLock lock(&shared->mu);
          if (shared->done) return;
        }
        timer->expires_after(std::chrono::milliseconds(50));
        timer->async_wait(*this);
      }
    };
    timer->async_wait(Rearm{shared, timer});
    // Disconnect: the client sends nothing while it waits, so a read of 0
    // bytes (EOF) or a reset means it went away. Readiness alone proves
    // nothing (Asio's reactor can report a stale edge), so peek before
    // cancelling and wait again when there is nothing to read.
    struct DisconnectWatch {
      std::shared_ptr<Shared> shared;
      tcp::socket* socket;
      void operator()(boost::system::error_code ec) const {
        if (ec) return;
        {
          MutexLock lock(&shared->mu);
          if (shared->done) return;
        }
        char c;
        ssize_t n = ::recv(socket->native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n > 0) return;  // the client sent more (pipelining): not a disconnect
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
          socket->async_wait(tcp::socket::wait_read, *this);
          return;
        }
        shared->Cancel();
      }
    };
    Tcp(stream).socket().async_wait(tcp::socket::wait_read, DisconnectWatch{shared, &Tcp(stream).socket()});

    auto response = co_await AwaitCallback<std::shared_ptr<HttpResponse>>([&](auto done) {
      asio::post(*query_pool_, [this, &call, shared, started, timeout_ms, done] {
        NameThisThread("sl-query");
        auto elapsed =
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started);
        auto reader = api_->store()->AcquireReader(std::max<int64_t>(0, timeout_ms - elapsed.count()));
        if (!reader.ok()) {
          done(std::make_shared<HttpResponse>(ApiService::JsonError(503, reader.status().message())));
          return;
        }
        {
          MutexLock lock(&shared->mu);
          if (shared->cancelled) {
            done(std::make_shared<HttpResponse>(ApiService::JsonError(504, "query passed its deadline while queued")));
            return;
          }
          shared->reader = reader->get();
        }
        HttpResponse r = api_->Execute(call, reader->get());
        {
          MutexLock lock(&shared->mu);
          shared->reader = nullptr;
          shared->done = true;
        }
        reader->reset();  // back in the pool before the response is even written
        done(std::make_shared<HttpResponse>(std::move(r)));
      });
    });
    {
      MutexLock lock(&shared->mu);
      shared->done = true;
    }
    timer->cancel();
    boost::system::error_code ec;
    Tcp(stream).socket().cancel(ec);  // ends the disconnect watch
    api_->RecordQuery(call, response->status,
                      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    co_return std::move(*response);
  }

  // A response sent before the body was read (401, 413, 415, 503) is lost if
  // the socket is closed while the client is still sending: the kernel answers
  // unread data with a reset. So: stop sending, then read and discard for a
  // bounded time and size, then close (a "lingering close", as in Apache).
  // Under TLS the discarded bytes are records, read below the TLS layer.
  asio::awaitable<void> DrainUnreadBody(beast::tcp_stream& stream) {
    boost::system::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
    std::vector<char> scratch(64 * 1024);
    size_t drained = 0;
    const size_t limit = ingest_->options().max_body_bytes;
    stream.expires_after(std::chrono::milliseconds(kLingerMs));
    while (drained < limit) {
      auto [rec, n] = co_await stream.async_read_some(asio::buffer(scratch), kNoThrow);
      if (rec) break;
      drained += n;
    }
    stream.socket().close(ec);
  }

  static constexpr int kLingerMs = 2000;

  // `head`: the answer to a HEAD request, whose headers (Content-Length
  // included) are those of the GET but which carries no body; one sent anyway
  // would be read by a keep-alive client as its next response.
  template <typename Stream>
  asio::awaitable<bool> Write(Stream& stream, const HttpResponse& r, unsigned version, bool keep_alive,
                              bool head = false) {
    http::response<http::string_body> res{static_cast<http::status>(r.status), version};
    res.set(http::field::server, "sightline");
    if (!r.content_type.empty()) res.set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res.set(k, v);
    res.keep_alive(keep_alive);
    res.body() = r.body;
    res.prepare_payload();
    if (head) res.body().clear();
    Tcp(stream).expires_after(std::chrono::milliseconds(options_.body_timeout_ms));
    auto [ec, n] = co_await http::async_write(stream, res, kNoThrow);
    co_return !ec;
  }

  //! An ingest response as HTTP: the status code from the one mapping
  //! (HttpStatusFor), Retry-After when retryable.
  static HttpResponse ToHttp(const ExportResponse& e, bool close) {
    HttpResponse r;
    r.status = HttpStatusFor(e.status.code());
    r.content_type = e.content_type();
    r.body = e.body;
    if (e.retry_after_seconds > 0) r.headers.emplace_back("Retry-After", std::to_string(e.retry_after_seconds));
    r.close = close;
    return r;
  }

  // Moves an OTLP request's bytes through the ingest pipeline: headers to
  // Admit, the body to Export, the answer back. Everything refused before
  // the body is read closes the connection (the unread body is drained).
  template <typename Stream>
  asio::awaitable<HttpResponse> Ingest(Stream& stream, beast::flat_buffer& buffer,
                                       http::request_parser<http::string_body>& parser, Signal signal,
                                       std::unique_ptr<AdmittedExport>* admitted) {
    const auto& header = parser.get();
    ExportHeaders h;
    h.signal = signal;
    h.authorization = header[http::field::authorization];
    h.content_type = header[http::field::content_type];
    h.content_encoding = header[http::field::content_encoding];
    if (auto length = parser.content_length()) h.content_length = *length;
    if (header.method() != http::verb::post) {
      HttpResponse r = ToHttp(ingest_->Refuse(h, Status::InvalidArgument("use POST for OTLP export")), true);
      r.status = 405;
      r.headers.emplace_back("Allow", "POST");
      co_return r;
    }
    Admission admission = ingest_->Admit(h);
    if (!admission.admitted) co_return ToHttp(admission.refusal, true);
    *admitted = std::move(admission.admitted);

    parser.body_limit(ingest_->options().max_body_bytes);
    Status read = co_await ReadBody(stream, buffer, parser, admitted->get());
    if (!read.ok()) co_return ToHttp(ingest_->Fail(**admitted, read), true);
    AdmittedExport* a = admitted->get();
    auto response = co_await AwaitCallback<std::shared_ptr<ExportResponse>>([&](auto done) {
      ingest_->Export(a, std::move(parser.get().body()),
                      [done](ExportResponse r) { done(std::make_shared<ExportResponse>(std::move(r))); });
    });
    // Overload and oversize answers close the connection, so a client under
    // pressure backs off; a malformed body or a failed commit keeps it.
    const StatusCode code = response->status.code();
    bool close = !response->ok() && (response->status.retryable() || code == StatusCode::kPayloadTooLarge);
    co_return ToHttp(*response, close);
  }

  // Reads an OTLP body, charging the admission gate as it arrives
  // (IngestService::ChargeBody) and holding it to the body timeout and the
  // minimum rate. A timer cancels the read instead of closing the socket (as
  // the stream's own expiry would), so the client still gets its answer: a
  // retryable 503 past the timeout or below the rate, 413 past the limit.
  template <typename Stream>
  asio::awaitable<Status> ReadBody(Stream& stream, beast::flat_buffer& buffer,
                                   http::request_parser<http::string_body>& parser, AdmittedExport* admitted) {
    using Clock = std::chrono::steady_clock;
    const auto started = Clock::now();
    const auto timeout_at = started + std::chrono::milliseconds(options_.body_timeout_ms);
    const int64_t min_rate = options_.min_body_bytes_per_second;
    uint64_t received = 0;  // bytes consumed past the headers, chunk framing included
    struct ReadWait {
      bool done = false;
      bool fired = false;
    };
    asio::steady_timer timer(stream.get_executor());
    Tcp(stream).expires_never();
    while (!parser.is_done()) {
      // The rate as a deadline (Apache's mod_reqtimeout MinRate): after the
      // grace, each byte received buys 1/rate s more.
      auto deadline = timeout_at;
      bool rate_deadline = false;
      if (min_rate > 0) {
        auto by_rate = started + std::chrono::milliseconds(options_.body_rate_grace_ms) +
                       std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                           static_cast<double>(received) / static_cast<double>(min_rate)));
        if (by_rate < deadline) {
          deadline = by_rate;
          rate_deadline = true;
        }
      }
      auto wait = std::make_shared<ReadWait>();
      timer.expires_at(deadline);
      timer.async_wait([wait, socket = &Tcp(stream).socket()](boost::system::error_code ec) {
        if (ec || wait->done) return;  // the strand orders this after done is set
        wait->fired = true;
        boost::system::error_code ignored;
        socket->cancel(ignored);
      });
      auto [ec, n] = co_await http::async_read_some(stream, buffer, parser, kNoThrow);
      wait->done = true;
      timer.cancel();
      received += n;
      if (wait->fired) {
        if (rate_deadline) {
          co_return Status::Unavailable("request body arrived slower than " + std::to_string(min_rate) +
                                        " bytes/s (--min-body-bytes-per-second); retry later");
        }
        // Retryable: OTLP clients drop data on 408.
        co_return Status::Unavailable("request body not received within " + std::to_string(options_.body_timeout_ms) +
                                      " ms (--body-timeout-ms); retry later");
      }
      if (ec == http::error::body_limit) {
        co_return Status::PayloadTooLarge("body exceeds the limit of " +
                                          std::to_string(ingest_->options().max_body_bytes) + " bytes");
      }
      if (ec) co_return Status::InvalidArgument("cannot read request body: " + ec.message());
      Status charged = ingest_->ChargeBody(admitted, parser.get().body().size());
      if (!charged.ok()) co_return charged;
    }
    co_return Status::Ok();
  }

  asio::io_context* ioc_;
  IngestService* ingest_;
  ApiService* api_;
  asio::thread_pool* query_pool_;
  SimpleRoutes routes_;
  HttpServerOptions options_;
  std::shared_ptr<asio::ssl::context> tls_;           // set by the first Listen() when TLS is on
  std::vector<std::unique_ptr<Listener>> listeners_;  // filled before the io threads run
};

HttpServer::HttpServer(asio::io_context* ioc, IngestService* ingest, ApiService* api, asio::thread_pool* query_pool,
                       SimpleRoutes routes, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(ioc, ingest, api, query_pool, std::move(routes), options)) {}

HttpServer::~HttpServer() = default;

Result<int> HttpServer::Listen(const std::string& host_port, bool api_port) {
  return impl_->Listen(host_port, api_port);
}

void HttpServer::StopAccepting() { impl_->StopAccepting(); }

std::vector<ListenerStats> HttpServer::GetListenerStats() const { return impl_->GetListenerStats(); }

}  // namespace sightline
