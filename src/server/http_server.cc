#include "server/http_server.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include <cerrno>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <limits>

#include "common/json_writer.h"
#include "common/mutex.h"

namespace sightline {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
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
    boost::system::error_code ec;
    auto addr = asio::ip::make_address(host, ec);
    if (ec) return Status::InvalidArgument("cannot parse address '" + host + "': " + ec.message());
    auto acceptor = std::make_unique<tcp::acceptor>(*ioc_);
    tcp::endpoint ep(addr, static_cast<unsigned short>(port));
    acceptor->open(ep.protocol(), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor->bind(ep, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) return Status::IoError("cannot listen on " + host_port + ": " + ec.message());
    int bound = acceptor->local_endpoint().port();
    asio::co_spawn(*ioc_, Accept(acceptor.get(), api_port), asio::detached);
    acceptors_.push_back(std::move(acceptor));
    return bound;
  }

  void StopAccepting() {
    asio::post(*ioc_, [this] {
      for (auto& a : acceptors_) {
        boost::system::error_code ec;
        a->close(ec);
      }
    });
  }

 private:
  asio::awaitable<void> Accept(tcp::acceptor* acceptor, bool api_port) {
    for (;;) {
      auto strand = asio::make_strand(*ioc_);
      auto [ec, socket] = co_await acceptor->async_accept(strand, kNoThrow);
      if (ec) {
        if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
        spdlog::warn("accept failed: {}", ec.message());
        continue;
      }
      asio::co_spawn(strand, Session(std::move(socket), api_port), [](std::exception_ptr e) {
        if (!e) return;
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          spdlog::error("connection ended by an exception: {}", ex.what());
        }
      });
    }
  }

  asio::awaitable<void> Session(tcp::socket socket, bool api_port) {
    beast::tcp_stream stream(std::move(socket));
    beast::flat_buffer buffer;
    for (;;) {
      http::request_parser<http::string_body> parser;
      parser.header_limit(16 * 1024);
      // Body limits are set per route once the headers are known; a limit here
      // would fail the header read itself for a large Content-Length.
      parser.body_limit(std::numeric_limits<std::uint64_t>::max());
      stream.expires_after(std::chrono::milliseconds(options_.header_timeout_ms));
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
      std::string target(header.target());
      size_t q = target.find('?');
      std::string path = target.substr(0, q);
      std::string query = q == std::string::npos ? "" : target.substr(q + 1);
      Signal signal;
      HttpResponse res;
      std::unique_ptr<AdmittedExport> admitted;  // holds its admission until the response is written
      if (IngestPath(path, api_port, &signal)) {
        res = co_await Ingest(stream, buffer, parser, signal, &admitted);
      } else {
        parser.body_limit(64 * 1024);
        stream.expires_after(std::chrono::milliseconds(options_.body_timeout_ms));
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
                        PeerAddress(stream.socket())};
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
          auto r = routes_(std::string(parser.get().method_string()), path, query, api_port);
          res =
              r ? std::move(*r) : HttpResponse{404, "application/json", JsonError("no such path: " + path), {}, false};
        }
      }
      bool ok = co_await Write(stream, res, version, keep_alive && !res.close);
      if (ok && res.close && !parser.is_done()) {
        co_await DrainUnreadBody(stream);
        co_return;
      }
      if (!ok || !keep_alive || res.close) break;
    }
    boost::system::error_code ec;
    stream.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  // A login hashes a password: it runs on the LoginService's thread, never
  // on this one, so a flood of logins cannot stall the sessions that share it.
  asio::awaitable<HttpResponse> RunLogin(const ApiCall& call) {
    auto response = co_await AwaitCallback<std::shared_ptr<HttpResponse>>([&](auto done) {
      api_->Login(call, [done](HttpResponse r) { done(std::make_shared<HttpResponse>(std::move(r))); });
    });
    co_return std::move(*response);
  }

  // Runs a query call on the query pool with a leased reader. The engine query
  // is interrupted when the deadline passes or the client disconnects, and the
  // reader goes back to the pool as soon as the query returns.
  asio::awaitable<HttpResponse> RunQuery(beast::tcp_stream& stream, const ApiCall& call) {
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
    stream.socket().async_wait(tcp::socket::wait_read, DisconnectWatch{shared, &stream.socket()});

    auto response = co_await AwaitCallback<std::shared_ptr<HttpResponse>>([&](auto done) {
      asio::post(*query_pool_, [this, &call, shared, started, timeout_ms, done] {
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
    stream.socket().cancel(ec);  // ends the disconnect watch
    co_return std::move(*response);
  }

  // A response sent before the body was read (401, 413, 415, 503) is lost if
  // the socket is closed while the client is still sending: the kernel answers
  // unread data with a reset. So: stop sending, then read and discard for a
  // bounded time and size, then close (a "lingering close", as in Apache).
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

  asio::awaitable<bool> Write(beast::tcp_stream& stream, const HttpResponse& r, unsigned version, bool keep_alive) {
    http::response<http::string_body> res{static_cast<http::status>(r.status), version};
    res.set(http::field::server, "sightline");
    res.set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : r.headers) res.set(k, v);
    res.keep_alive(keep_alive);
    res.body() = r.body;
    res.prepare_payload();
    stream.expires_after(std::chrono::milliseconds(options_.body_timeout_ms));
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
  asio::awaitable<HttpResponse> Ingest(beast::tcp_stream& stream, beast::flat_buffer& buffer,
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

    const size_t max_body = ingest_->options().max_body_bytes;
    parser.body_limit(max_body);
    // The body timeout cancels the read instead of closing the socket (as
    // the stream's own expiry would), so the client still gets its 408.
    struct BodyDeadline {
      bool read_done = false;
      bool fired = false;
    };
    auto deadline = std::make_shared<BodyDeadline>();
    asio::steady_timer timer(stream.get_executor(), std::chrono::milliseconds(options_.body_timeout_ms));
    timer.async_wait([deadline, socket = &stream.socket()](boost::system::error_code tec) {
      if (tec || deadline->read_done) return;  // the strand orders this after read_done is set
      deadline->fired = true;
      boost::system::error_code ignored;
      socket->cancel(ignored);
    });
    stream.expires_never();
    auto [ec, n] = co_await http::async_read(stream, buffer, parser, kNoThrow);
    deadline->read_done = true;
    timer.cancel();
    if (deadline->fired) ec = beast::error::timeout;
    if (ec == http::error::body_limit) {
      co_return ToHttp(ingest_->Fail(**admitted, Status::PayloadTooLarge("body exceeds the limit of " +
                                                                         std::to_string(max_body) + " bytes")),
                       true);
    }
    if (ec == beast::error::timeout) {
      co_return ToHttp(
          ingest_->Fail(**admitted, Status::DeadlineExceeded("request body not received within " +
                                                             std::to_string(options_.body_timeout_ms) + " ms")),
          true);
    }
    if (ec) {
      co_return ToHttp(ingest_->Fail(**admitted, Status::InvalidArgument("cannot read request body: " + ec.message())),
                       true);
    }
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

  asio::io_context* ioc_;
  IngestService* ingest_;
  ApiService* api_;
  asio::thread_pool* query_pool_;
  SimpleRoutes routes_;
  HttpServerOptions options_;
  std::vector<std::unique_ptr<tcp::acceptor>> acceptors_;
};

HttpServer::HttpServer(asio::io_context* ioc, IngestService* ingest, ApiService* api, asio::thread_pool* query_pool,
                       SimpleRoutes routes, HttpServerOptions options)
    : impl_(std::make_unique<Impl>(ioc, ingest, api, query_pool, std::move(routes), options)) {}

HttpServer::~HttpServer() = default;

Result<int> HttpServer::Listen(const std::string& host_port, bool api_port) {
  return impl_->Listen(host_port, api_port);
}

void HttpServer::StopAccepting() { impl_->StopAccepting(); }

}  // namespace sightline
