#include "storage/clickhouse/http_client.h"

#include <libdeflate.h>
#include <poll.h>
#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>

namespace sightline::clickhouse {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

namespace {

//! ClickHouse closes an idle keep-alive connection after keep_alive_timeout
//! (3 s by default); one idle for longer than this is replaced before use.
constexpr auto kMaxIdle = std::chrono::milliseconds(2000);
//! The largest answer read (a dashboard result or `sightline sql` output).
constexpr uint64_t kMaxResponseBytes = 1ull << 30;

bool Contains(std::string_view s, std::string_view what) { return s.find(what) != std::string_view::npos; }

}  // namespace

struct Connection::Socket {
  asio::io_context io;
  beast::tcp_stream stream{io};
  beast::flat_buffer buffer;
  asio::ip::tcp::socket& socket() { return stream.socket(); }
};

namespace {

//! Sets the deadline of the stream's next operations: tcp_stream closes the
//! socket when it passes, and they fail with beast::error::timeout.
void SetDeadline(beast::tcp_stream& stream, std::chrono::milliseconds timeout) {
  if (timeout.count() > 0) stream.expires_after(timeout);
  else stream.expires_never();
}

//! Runs one asynchronous operation to completion on the io_context.
template <typename Start>
boost::system::error_code Run(asio::io_context& io, Start start) {
  boost::system::error_code result;
  start([&result](boost::system::error_code ec, auto&&...) { result = ec; });
  io.restart();
  io.run();
  return result;
}

std::string Describe(const boost::system::error_code& ec, std::chrono::milliseconds timeout) {
  if (ec == beast::error::timeout) return "no answer within " + std::to_string(timeout.count()) + " ms";
  return ec.message();
}

}  // namespace

Result<Endpoint> ParseUrl(std::string_view url) {
  Endpoint e;
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) {
    return Status::InvalidArgument("clickhouse url must start with http:// (https is not supported yet): " +
                                   std::string(url));
  }
  std::string_view rest = url.substr(kScheme.size());
  while (rest.ends_with('/')) rest.remove_suffix(1);
  if (rest.empty() || Contains(rest, "/") || Contains(rest, "@") || Contains(rest, "?")) {
    return Status::InvalidArgument("clickhouse url must be http://host[:port]: " + std::string(url));
  }
  size_t colon = rest.rfind(':');
  if (rest.starts_with('[')) {  // [::1]:8123
    size_t close = rest.find(']');
    if (close == std::string_view::npos) return Status::InvalidArgument("bad clickhouse url: " + std::string(url));
    e.host = std::string(rest.substr(1, close - 1));
    colon = close + 1 < rest.size() && rest[close + 1] == ':' ? close + 1 : std::string_view::npos;
  } else {
    e.host = std::string(rest.substr(0, colon));
  }
  if (colon != std::string_view::npos) {
    std::string_view port = rest.substr(colon + 1);
    int n = 0;
    auto r = std::from_chars(port.data(), port.data() + port.size(), n);
    if (r.ec != std::errc() || r.ptr != port.data() + port.size() || n <= 0 || n > 65535) {
      return Status::InvalidArgument("bad port in clickhouse url: " + std::string(url));
    }
    e.port = std::string(port);
  }
  if (e.host.empty()) return Status::InvalidArgument("no host in clickhouse url: " + std::string(url));
  return e;
}

std::string UrlEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size() * 3 / 2);
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
        c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

std::string Gzip(std::string_view in) {
  libdeflate_compressor* c = libdeflate_alloc_compressor(1);
  if (c == nullptr) return std::string();
  std::string out(libdeflate_gzip_compress_bound(c, in.size()), '\0');
  size_t n = libdeflate_gzip_compress(c, in.data(), in.size(), out.data(), out.size());
  libdeflate_free_compressor(c);
  out.resize(n);
  return out;
}

Status ErrorStatus(int http_status, std::string_view body) {
  int code = 0;
  size_t at = body.find("Code: ");
  if (at != std::string_view::npos) {
    std::string_view digits = body.substr(at + 6);
    std::from_chars(digits.data(), digits.data() + digits.size(), code);
  }
  std::string message = "clickhouse: " + std::string(body.substr(0, 2000));
  while (!message.empty() && (message.back() == '\n' || message.back() == ' ')) message.pop_back();
  switch (code) {
    case 394: return Status::Cancelled(message);  // QUERY_WAS_CANCELLED
    case 202:                                     // TOO_MANY_SIMULTANEOUS_QUERIES
    case 252:                                     // TOO_MANY_PARTS
    case 241:                                     // MEMORY_LIMIT_EXCEEDED
    case 209:                                     // SOCKET_TIMEOUT
    case 210:                                     // NETWORK_ERROR
    case 159:                                     // TIMEOUT_EXCEEDED
    case 319:                                     // UNKNOWN_STATUS_OF_INSERT
    case 999:                                     // KEEPER_EXCEPTION
    // A cluster's shard or replica that cannot be reached, or has lost
    // ZooKeeper: the insert or read may succeed once it is back.
    case 32:                                           // ATTEMPT_TO_READ_AFTER_EOF
    case 198:                                          // DNS_ERROR
    case 225:                                          // NO_ZOOKEEPER
    case 242:                                          // TABLE_IS_READ_ONLY
    case 279:                                          // ALL_CONNECTION_TRIES_FAILED
    case 285:                                          // TOO_FEW_LIVE_REPLICAS
    case 286:                                          // UNSATISFIED_QUORUM_FOR_PREVIOUS_WRITE
    case 369: return Status::Unavailable(message);     // ALL_REPLICAS_ARE_STALE
    case 62:                                           // SYNTAX_ERROR
    case 47:                                           // UNKNOWN_IDENTIFIER
    case 46:                                           // UNKNOWN_FUNCTION
    case 60:                                           // UNKNOWN_TABLE
    case 81:                                           // UNKNOWN_DATABASE
    case 16:                                           // NO_SUCH_COLUMN_IN_TABLE
    case 43:                                           // ILLEGAL_TYPE_OF_ARGUMENT
    case 42:                                           // NUMBER_OF_ARGUMENTS_DOESNT_MATCH
    case 53:                                           // TYPE_MISMATCH
    case 36:                                           // BAD_ARGUMENTS
    case 48:                                           // NOT_IMPLEMENTED
    case 27:                                           // CANNOT_PARSE_INPUT_ASSERTION_FAILED
    case 6:                                            // CANNOT_PARSE_TEXT
    case 184:                                          // ILLEGAL_AGGREGATION
    case 215:                                          // NOT_AN_AGGREGATE
    case 57: return Status::InvalidArgument(message);  // TABLE_ALREADY_EXISTS
    default: break;
  }
  if (http_status == 503) return Status::Unavailable(message);
  return Status::IoError(message);
}

Connection::Connection(Endpoint endpoint) : endpoint_(std::move(endpoint)) {}

Connection::~Connection() { DropSocket(); }

void Connection::DropSocket() {
  {
    MutexLock lock(&mu_);
    fd_ = -1;  // before the descriptor is closed and its number reused
  }
  socket_.reset();
}

bool Connection::ClosedByPeer() {
  // Idle, a kept-alive socket has nothing to read; readable means the
  // server's FIN (or stray bytes), either way not a socket to send on.
  pollfd p{socket_->socket().native_handle(), POLLIN, 0};
  return ::poll(&p, 1, 0) != 0;
}

void Connection::ClearAbort() {
  MutexLock lock(&mu_);
  aborted_ = false;
}

void Connection::Abort() {
  MutexLock lock(&mu_);
  aborted_ = true;
  if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
}

Result<std::string> Connection::Execute(const Request& request) {
  {
    MutexLock lock(&mu_);
    if (aborted_) return Status::Cancelled("clickhouse: the query was interrupted");
  }
  const auto now = std::chrono::steady_clock::now();
  if (socket_ != nullptr && (now - last_used_ > kMaxIdle || ClosedByPeer())) DropSocket();
  const bool reused = socket_ != nullptr;
  transport_failed_ = false;
  Result<std::string> r = ExecuteOnce(request);
  bool aborted;
  {
    MutexLock lock(&mu_);
    aborted = aborted_;
  }
  // A reused connection the server closed first (a keep_alive_timeout below
  // our idle limit) fails on send or on the first read. A statement without
  // data is sent again on a fresh connection; an insert is not (it may have
  // been stored: Insert() decides, by its deduplication token).
  if (!r.ok() && reused && transport_failed_ && request.body.empty() && !aborted) r = ExecuteOnce(request);
  last_used_ = std::chrono::steady_clock::now();
  if (aborted) {
    DropSocket();
    if (r.ok() || r.status().code() != StatusCode::kCancelled) {
      return Status::Cancelled("clickhouse: the query was interrupted");
    }
  }
  return r;
}

Result<std::string> Connection::ExecuteOnce(const Request& request) {
  try {
    if (socket_ == nullptr) {
      auto s = std::make_unique<Socket>();
      asio::ip::tcp::resolver resolver(s->io);
      boost::system::error_code ec;
      auto endpoints = resolver.resolve(endpoint_.host, endpoint_.port, ec);
      if (ec) return Status::Unavailable("clickhouse: cannot resolve " + endpoint_.host + ": " + ec.message());
      SetDeadline(s->stream, endpoint_.timeout);
      ec = Run(s->io, [&](auto done) { s->stream.async_connect(endpoints, std::move(done)); });
      if (ec) {
        return Status::Unavailable("clickhouse: cannot connect to " + endpoint_.host + ":" + endpoint_.port + ": " +
                                   Describe(ec, endpoint_.timeout));
      }
      s->socket().set_option(asio::ip::tcp::no_delay(true));
      socket_ = std::move(s);
      MutexLock lock(&mu_);
      fd_ = socket_->socket().native_handle();
      if (aborted_) ::shutdown(fd_, SHUT_RDWR);
    }
    std::string target = "/?";
    auto param = [&](std::string_view name, std::string_view value) {
      if (target.size() > 2) target += '&';
      target.append(name);
      target += '=';
      target += UrlEncode(value);
    };
    if (request.use_database) param("database", endpoint_.database);
    if (!request.query_id.empty()) param("query_id", request.query_id);
    for (const auto& [name, value] : request.settings) param(name, value);
    const bool data = !request.body.empty();
    if (data) param("query", request.query);
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, endpoint_.host);
    req.set(http::field::connection, "keep-alive");
    if (!endpoint_.user.empty()) req.set("X-ClickHouse-User", endpoint_.user);
    if (!endpoint_.password.empty()) req.set("X-ClickHouse-Key", endpoint_.password);
    if (data) {
      if (request.gzip) {
        req.set(http::field::content_encoding, "gzip");
        req.body() = Gzip(request.body);
      } else {
        req.body() = request.body;
      }
    } else {
      req.body() = request.query;
    }
    req.prepare_payload();
    // One timeout for the write and the whole answer: the server answers
    // a statement once it has run (wait_end_of_query), so a hung server or
    // network is noticed at the timeout, not never.
    Socket& sock = *socket_;
    SetDeadline(sock.stream, endpoint_.timeout);
    boost::system::error_code ec =
        Run(sock.io, [&](auto done) { http::async_write(sock.stream, req, std::move(done)); });
    if (ec) {
      DropSocket();
      transport_failed_ = true;
      return Status::Unavailable("clickhouse: sending to " + endpoint_.host + ":" + endpoint_.port + ": " +
                                 Describe(ec, endpoint_.timeout));
    }
    http::response_parser<http::string_body> parser;
    parser.body_limit(kMaxResponseBytes);
    ec = Run(sock.io, [&](auto done) { http::async_read(sock.stream, sock.buffer, parser, std::move(done)); });
    if (ec) {
      DropSocket();
      transport_failed_ = true;
      return Status::Unavailable("clickhouse: reading from " + endpoint_.host + ":" + endpoint_.port + ": " +
                                 Describe(ec, endpoint_.timeout));
    }
    http::response<http::string_body> res = parser.release();
    const bool keep = res.keep_alive();
    std::string body = std::move(res.body());
    const int status = static_cast<int>(res.result_int());
    if (!keep) DropSocket();
    if (status != 200) {
      // An error during a streamed answer may come after a 200 header too;
      // ClickHouse then ends the body with the exception text, which the
      // caller's parser rejects.
      return ErrorStatus(status, body);
    }
    return body;
  } catch (const std::exception& e) {
    DropSocket();
    transport_failed_ = true;
    return Status::Unavailable(std::string("clickhouse: ") + e.what());
  }
}

}  // namespace sightline::clickhouse
