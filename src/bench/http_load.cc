#include "bench/http_load.h"

#include <sys/socket.h>

#include <google/protobuf/unknown_field_set.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>
#include <algorithm>
#include <atomic>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace sightline::bench {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

Result<HttpEndpoint> ParseLoopbackUrl(const std::string& url) {
  std::string rest = url;
  if (rest.starts_with("http://")) rest = rest.substr(7);
  else if (rest.find("://") != std::string::npos) {
    return Status::InvalidArgument("endpoint '" + url + "': only http:// is supported");
  }
  while (!rest.empty() && rest.back() == '/') rest.pop_back();
  if (rest.find('/') != std::string::npos) {
    return Status::InvalidArgument("endpoint '" + url + "': give the base URL (http://HOST:PORT), not a path");
  }
  HttpEndpoint ep;
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon + 1 >= rest.size()) {
    return Status::InvalidArgument("endpoint '" + url + "' has no port (want http://127.0.0.1:4318)");
  }
  ep.host = rest.substr(0, colon);
  if (ep.host.size() >= 2 && ep.host.front() == '[' && ep.host.back() == ']')
    ep.host = ep.host.substr(1, ep.host.size() - 2);
  try {
    size_t used = 0;
    ep.port = std::stoi(rest.substr(colon + 1), &used);
    if (used != rest.size() - colon - 1 || ep.port <= 0 || ep.port > 65535) throw std::out_of_range("port");
  } catch (const std::exception&) {
    return Status::InvalidArgument("endpoint '" + url + "' has no valid port");
  }
  if (ep.host == "localhost") ep.host = "127.0.0.1";
  boost::system::error_code ec;
  auto addr = asio::ip::make_address(ep.host, ec);
  if (ec || !addr.is_loopback()) {
    return Status::InvalidArgument("endpoint '" + url +
                                   "': the benchmark only sends to loopback addresses (127.0.0.1, ::1)");
  }
  return ep;
}

namespace {

tcp::endpoint ToTcp(const HttpEndpoint& ep) {
  return tcp::endpoint(asio::ip::make_address(ep.host), static_cast<unsigned short>(ep.port));
}

//! A Retry-After of delay-seconds; -1 when absent or an HTTP date (which
//! this server never sends).
int RetryAfterSeconds(std::string_view value) {
  int seconds = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  return value.empty() || ec != std::errc() || end != value.data() + value.size() || seconds < 0 ? -1 : seconds;
}

//! The first field `number` of `set` of that wire type, or nullptr.
const google::protobuf::UnknownField* FieldOf(const google::protobuf::UnknownFieldSet& set, int number,
                                              google::protobuf::UnknownField::Type type) {
  for (int i = 0; i < set.field_count(); ++i) {
    if (set.field(i).number() == number && set.field(i).type() == type) return &set.field(i);
  }
  return nullptr;
}

//! The seconds of the google.rpc.RetryInfo among a gRPC status's details, or
//! -1. The wire path: Status.details (3) is an Any, whose type_url (1) names
//! RetryInfo and whose value (2) holds retry_delay (1), a Duration, whose
//! seconds are field 1.
int RetryInfoSeconds(const std::string& details) {
  using google::protobuf::UnknownField;
  using google::protobuf::UnknownFieldSet;
  UnknownFieldSet status;
  if (details.empty() || !status.ParseFromString(details)) return -1;
  for (int i = 0; i < status.field_count(); ++i) {
    const UnknownField& detail = status.field(i);
    UnknownFieldSet any, info, delay;
    if (detail.number() != 3 || detail.type() != UnknownField::TYPE_LENGTH_DELIMITED ||
        !any.ParseFromString(detail.length_delimited())) {
      continue;
    }
    const UnknownField* type = FieldOf(any, 1, UnknownField::TYPE_LENGTH_DELIMITED);
    const UnknownField* value = FieldOf(any, 2, UnknownField::TYPE_LENGTH_DELIMITED);
    if (type == nullptr || type->length_delimited() != "type.googleapis.com/google.rpc.RetryInfo" || value == nullptr ||
        !info.ParseFromString(value->length_delimited())) {
      continue;
    }
    const UnknownField* retry_delay = FieldOf(info, 1, UnknownField::TYPE_LENGTH_DELIMITED);
    if (retry_delay == nullptr || !delay.ParseFromString(retry_delay->length_delimited())) return -1;
    const UnknownField* seconds = FieldOf(delay, 1, UnknownField::TYPE_VARINT);
    return seconds == nullptr ? 0 : static_cast<int>(std::min<uint64_t>(seconds->varint(), INT32_MAX));
  }
  return -1;
}

//! One worker's connection; reconnects after an error or a `Connection: close`.
class Connection {
 public:
  Connection(asio::io_context* ioc, const HttpEndpoint& ep) : socket_(*ioc), endpoint_(ToTcp(ep)) {}

  bool Connect() {
    boost::system::error_code ec;
    socket_.close(ec);
    buffer_.clear();
    socket_.connect(endpoint_, ec);
    if (ec) return false;
    socket_.set_option(tcp::no_delay(true), ec);
    return true;
  }
  bool connected() const { return socket_.is_open(); }
  //! The OS handle, for the watchdog's shutdown(2) (-1 when closed).
  int native_handle() { return socket_.is_open() ? socket_.native_handle() : -1; }

  //! Sends one request and reads its response; 0 on a transport error.
  //! *retry_after_s: the response's Retry-After in seconds, -1 for none.
  int Exchange(http::request<http::span_body<const char>>& req, bool* keep_alive, int* retry_after_s) {
    boost::system::error_code ec;
    http::write(socket_, req, ec);
    if (ec) return Fail();
    http::response_parser<http::string_body> parser;
    parser.body_limit(1 << 20);
    http::read(socket_, buffer_, parser, ec);
    if (ec) return Fail();
    *keep_alive = parser.get().keep_alive();
    *retry_after_s = RetryAfterSeconds(parser.get()[http::field::retry_after]);
    return static_cast<int>(parser.get().result_int());
  }

 private:
  int Fail() {
    boost::system::error_code ignored;
    socket_.close(ignored);
    return 0;
  }

  tcp::socket socket_;
  tcp::endpoint endpoint_;
  beast::flat_buffer buffer_;
};

//! One worker's OTLP/gRPC channel: its own HTTP/2 connection (a local
//! subchannel pool, so workers do not share one), unary Export calls.
class GrpcConnection {
 public:
  GrpcConnection(const HttpLoadOptions& options) : timeout_s_(options.request_timeout_s) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
    args.SetMaxReceiveMessageSize(-1);
    if (options.grpc_gzip) args.SetCompressionAlgorithm(GRPC_COMPRESS_GZIP);
    channel_ = grpc::CreateCustomChannel(options.endpoint.host + ":" + std::to_string(options.endpoint.port),
                                         grpc::InsecureChannelCredentials(), args);
    stub_ = std::make_unique<grpc::GenericStub>(channel_);
    if (!options.token.empty()) authorization_ = "Bearer " + options.token;
  }

  bool Connect() { return channel_->WaitForConnected(std::chrono::system_clock::now() + std::chrono::seconds(5)); }

  //! One Export call; the HTTP status its outcome maps to (0: no answer).
  //! *retry_after_s: the seconds of its RetryInfo, -1 for none.
  int Exchange(Signal signal, const std::string& body, int* retry_after_s) {
    grpc::ClientContext ctx;
    if (!authorization_.empty()) ctx.AddMetadata("authorization", authorization_);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                                            std::chrono::duration<double>(timeout_s_)));
    // No copy: the pool's bodies outlive the run.
    grpc::Slice slice(body.data(), body.size(), grpc::Slice::STATIC_SLICE);
    grpc::ByteBuffer request(&slice, 1);
    grpc::ByteBuffer response;
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    grpc::Status status;
    stub_->UnaryCall(&ctx, ExportMethod(signal), grpc::StubOptions(), &request, &response, [&](grpc::Status s) {
      std::lock_guard<std::mutex> lock(mu);
      status = std::move(s);
      done = true;
      cv.notify_one();
    });
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
    *retry_after_s = RetryInfoSeconds(status.error_details());
    return HttpStatusOf(status.error_code());
  }

 private:
  static const char* ExportMethod(Signal signal) {
    switch (signal) {
      case Signal::kSpans: return "/opentelemetry.proto.collector.trace.v1.TraceService/Export";
      case Signal::kLogs: return "/opentelemetry.proto.collector.logs.v1.LogsService/Export";
      case Signal::kMetrics: return "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";
    }
    return "";
  }
  static int HttpStatusOf(grpc::StatusCode code) {
    switch (code) {
      case grpc::StatusCode::OK: return 200;
      case grpc::StatusCode::INVALID_ARGUMENT: return 400;
      case grpc::StatusCode::UNAUTHENTICATED: return 401;
      case grpc::StatusCode::PERMISSION_DENIED: return 403;
      case grpc::StatusCode::RESOURCE_EXHAUSTED: return 413;
      case grpc::StatusCode::UNAVAILABLE: return 503;
      case grpc::StatusCode::DEADLINE_EXCEEDED: return 0;
      default: return 500;
    }
  }

  double timeout_s_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<grpc::GenericStub> stub_;
  std::string authorization_;
};

//! What the watchdog sees of a worker: its socket and since when its
//! current request has been waiting (0 = idle).
struct InFlight {
  std::atomic<int> fd{-1};
  std::atomic<int64_t> since_ns{0};
};

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

struct WorkerResult {
  std::array<SignalLoadResult, kSignalCount> signals;
  uint64_t built = 0;
  double build_cpu = 0;
};

}  // namespace

Result<HttpLoadResult> RunHttpLoad(const HttpLoadOptions& options, const PayloadPool& pool) {
  const int workers_n = std::max(1, options.connections);
  std::vector<WorkerResult> results(static_cast<size_t>(workers_n));
  std::vector<InFlight> inflight(static_cast<size_t>(workers_n));
  std::atomic<int> finished{0};
  std::atomic<uint64_t> next{0};
  std::atomic<int> connected{0}, failed_to_connect{0};
  std::atomic<bool> go{false};
  Clock::time_point start;  // written before go, read after
  Clock::time_point deadline;
  const bool by_requests = options.requests > 0;

  auto worker = [&](int w) {
    WorkerResult& out = results[static_cast<size_t>(w)];
    InFlight& watch = inflight[static_cast<size_t>(w)];
    asio::io_context ioc;
    Connection conn(&ioc, options.endpoint);
    std::unique_ptr<GrpcConnection> grpc_conn;
    if (options.grpc) grpc_conn = std::make_unique<GrpcConnection>(options);
    if (grpc_conn ? grpc_conn->Connect() : conn.Connect()) connected++;
    else failed_to_connect++;
    while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
    if (!grpc_conn && !conn.connected()) {
      finished++;
      return;
    }

    Payload scratch;
    http::request<http::span_body<const char>> req;
    req.version(11);
    req.method(http::verb::post);
    req.set(http::field::host, options.endpoint.host + ":" + std::to_string(options.endpoint.port));
    req.set(http::field::user_agent, "sightline-bench");
    req.set(http::field::content_type, options.content_type);
    if (!options.content_encoding.empty()) req.set(http::field::content_encoding, options.content_encoding);
    if (!options.token.empty()) req.set(http::field::authorization, "Bearer " + options.token);
    req.keep_alive(true);

    // After a 429 or 503: HttpLoadOptions::honor_retry_after.
    double backoff_s = HttpLoadOptions::kFirstBackoffS;
    auto wait_after = [&](SignalLoadResult& r, int status, int retry_after_s) {
      if (status >= 200 && status < 300) backoff_s = HttpLoadOptions::kFirstBackoffS;
      if ((status != 429 && status != 503) || !options.honor_retry_after) return;
      double wait_s = backoff_s;
      if (retry_after_s >= 0) wait_s = retry_after_s;
      else backoff_s = std::min(2 * backoff_s, HttpLoadOptions::kMaxBackoffS);
      const Clock::time_point from = Clock::now();
      Clock::time_point until = from + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::min(wait_s, options.request_timeout_s)));
      if (!by_requests) until = std::min(until, deadline);
      std::this_thread::sleep_until(until);
      r.retry_wait_s += std::chrono::duration<double>(Clock::now() - from).count();
    };

    for (;;) {
      uint64_t i = next.fetch_add(1);
      if (by_requests && i >= options.requests) break;
      if (options.rate > 0) {
        auto due = start + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(static_cast<double>(i) / options.rate));
        if (!by_requests && (due >= deadline || Clock::now() >= deadline)) break;  // late ones are dropped, not sent
        std::this_thread::sleep_until(due);
      } else if (!by_requests && Clock::now() >= deadline) {
        break;
      }
      const Payload& p = pool.Get(i, &scratch, &out.build_cpu);
      if (&p == &scratch) out.built++;
      SignalLoadResult& r = out.signals[static_cast<int>(p.signal)];
      req.target(OtlpPath(p.signal));
      req.body() = boost::span<const char>(p.body.data(), p.body.size());
      req.prepare_payload();
      r.requests++;
      r.items_sent += p.items;
      r.wire_bytes_sent += p.body.size();
      if (grpc_conn) {
        auto sent = Clock::now();
        int retry_after_s = -1;
        int status = grpc_conn->Exchange(p.signal, p.body, &retry_after_s);
        auto done = Clock::now();
        r.status_counts[status]++;
        if (status == 200) {
          r.ok_requests++;
          r.items_accepted += p.items;
          r.latencies_ms.push_back(std::chrono::duration<float, std::milli>(done - sent).count());
        }
        wait_after(r, status, retry_after_s);
        continue;
      }
      if (!conn.connected() && !conn.Connect()) {
        r.status_counts[0]++;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      bool keep_alive = true;
      auto sent = Clock::now();
      watch.fd.store(conn.native_handle());
      watch.since_ns.store(NowNs());
      int retry_after_s = -1;
      int status = conn.Exchange(req, &keep_alive, &retry_after_s);
      watch.since_ns.store(0);
      watch.fd.store(-1);
      auto done = Clock::now();
      r.status_counts[status]++;
      if (status >= 200 && status < 300) {
        r.ok_requests++;
        r.items_accepted += p.items;
        r.latencies_ms.push_back(std::chrono::duration<float, std::milli>(done - sent).count());
      }
      if (status != 0 && !keep_alive) conn.Connect();
      wait_after(r, status, retry_after_s);
    }
    finished++;
  };

  std::vector<std::thread> threads;
  for (int w = 0; w < workers_n; ++w) threads.emplace_back(worker, w);
  while (connected.load() + failed_to_connect.load() < workers_n) std::this_thread::yield();
  if (connected.load() == 0) {
    go = true;
    for (auto& t : threads) t.join();
    return Status::Unavailable("cannot connect to " + options.endpoint.host + ":" +
                               std::to_string(options.endpoint.port));
  }
  double cpu0 = ProcessCpuSeconds();
  start = Clock::now();
  deadline = start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.duration_s));
  go.store(true, std::memory_order_release);
  // Watchdog: a request unanswered after request_timeout_s has its socket
  // shut down, which fails it (status 0) and bounds the run.
  const int64_t timeout_ns = static_cast<int64_t>(options.request_timeout_s * 1e9);
  while (finished.load() < workers_n) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    int64_t now = NowNs();
    for (InFlight& f : inflight) {
      int64_t since = f.since_ns.load();
      int fd = f.fd.load();
      if (since != 0 && fd >= 0 && now - since > timeout_ns) ::shutdown(fd, SHUT_RDWR);
    }
  }
  for (auto& t : threads) t.join();
  HttpLoadResult out;
  out.elapsed_s = std::chrono::duration<double>(Clock::now() - start).count();
  out.client_cpu_s = ProcessCpuSeconds() - cpu0;
  for (auto& w : results) {
    out.payloads_built_during_run += w.built;
    out.build_cpu_during_run_s += w.build_cpu;
    for (int s = 0; s < kSignalCount; ++s) {
      SignalLoadResult& a = out.signals[s];
      SignalLoadResult& b = w.signals[s];
      a.requests += b.requests;
      a.ok_requests += b.ok_requests;
      a.items_sent += b.items_sent;
      a.items_accepted += b.items_accepted;
      a.wire_bytes_sent += b.wire_bytes_sent;
      for (auto [code, n] : b.status_counts) a.status_counts[code] += n;
      a.retry_wait_s += b.retry_wait_s;
      a.latencies_ms.insert(a.latencies_ms.end(), b.latencies_ms.begin(), b.latencies_ms.end());
    }
  }
  return out;
}

namespace {

//! One request on a fresh connection, on a private io_context: tcp_stream's
//! timeout applies to its asynchronous operations, so a wedged server cannot
//! hang the caller.
template <typename Body>
Result<int> OneRequest(const HttpEndpoint& endpoint, http::request<Body>* req, std::string* response, int timeout_ms) {
  asio::io_context ioc;
  beast::tcp_stream stream(ioc);
  beast::flat_buffer buffer;
  req->set(http::field::host, endpoint.host);
  req->keep_alive(false);
  req->prepare_payload();
  http::response_parser<http::string_body> parser;
  parser.body_limit(1ull << 30);
  boost::system::error_code error;
  stream.expires_after(std::chrono::milliseconds(timeout_ms));
  stream.async_connect(ToTcp(endpoint), [&](boost::system::error_code ec) {
    if (ec) {
      error = ec;
      return;
    }
    http::async_write(stream, *req, [&](boost::system::error_code ec2, size_t) {
      if (ec2) {
        error = ec2;
        return;
      }
      http::async_read(stream, buffer, parser, [&](boost::system::error_code ec3, size_t) { error = ec3; });
    });
  });
  ioc.run();
  if (error) {
    return Status::Unavailable(std::string(req->method_string()) + " " + std::string(req->target()) + ": " +
                               error.message());
  }
  *response = std::move(parser.get().body());
  return static_cast<int>(parser.get().result_int());
}

}  // namespace

Result<int> HttpGet(const HttpEndpoint& endpoint, const std::string& target, std::string* body, int timeout_ms,
                    const std::string& token) {
  http::request<http::empty_body> req{http::verb::get, target, 11};
  if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
  return OneRequest(endpoint, &req, body, timeout_ms);
}

Result<int> HttpPost(const HttpEndpoint& endpoint, const std::string& target, std::string body, std::string* response,
                     int timeout_ms, const std::string& content_encoding) {
  http::request<http::string_body> req{http::verb::post, target, 11};
  if (!content_encoding.empty()) req.set(http::field::content_encoding, content_encoding);
  req.body() = std::move(body);
  return OneRequest(endpoint, &req, response, timeout_ms);
}

}  // namespace sightline::bench
