#pragma once

// OTLP/HTTP and the API port on Boost.Beast, one coroutine per connection.
//
// For ingest the session only moves bytes through the transport-neutral
// pipeline (ingest/ingest_service.h): read headers (header timeout) →
// IngestService::Admit → read the body (body timeout, minimum rate, body
// limit; charged to the gate as it arrives) → IngestService::Export → write
// its response. Everything refused before the body is read is answered with
// `Connection: close`, so an unread body is never parsed as the next request.
// With a CORS allow-list (server/cors.h) the ingest paths, and only they,
// answer preflights and mark every answer for an allowed origin.

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/thread_pool.hpp>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/status.h"
#include "ingest/ingest_service.h"
#include "server/api_service.h"
#include "server/cors.h"
#include "server/http_server_types.h"

namespace sightline {

//! What a non-ingest route sees of a request (valid during the call).
struct RouteRequest {
  std::string_view method;
  std::string_view path;
  std::string_view query;
  std::string_view cookie;
  std::string_view authorization;
  std::string_view accept;           // the Accept header ("" when absent)
  std::string_view accept_encoding;  // the Accept-Encoding header
  bool api_port = false;
};

//! Work a route cannot do on an IO thread (it may take seconds): the
//! server runs it on the query pool and sends what it returns.
using BlockingRoute = std::function<HttpResponse()>;
using RouteResponse = std::variant<HttpResponse, BlockingRoute>;

//! A non-ingest route: request → response, or nullopt for 404. A HEAD
//! request is routed as itself; the server sends only the headers of the
//! answer.
using SimpleRoutes = std::function<std::optional<RouteResponse>(const RouteRequest& request)>;

struct HttpServerOptions {
  int header_timeout_ms = 30000;  // also the keep-alive idle timeout
  int body_timeout_ms = 30000;    // a body must arrive within this
  //! Open connections per listener; past it a new connection gets a 503 and
  //! is closed at once.
  int max_connections = 1024;
  //! An OTLP body must arrive at this average rate once the grace has passed
  //! (each byte buys 1/rate s more), else it is cut with a retryable 503. 0 = off.
  int64_t min_body_bytes_per_second = 4096;
  int body_rate_grace_ms = 5000;
  //! TLS on every listener when set (both PEM files; the certificate file
  //! may carry intermediates after the leaf): TLS 1.2 and 1.3 only. Read
  //! once, by the first Listen(); a new certificate takes a restart.
  std::string tls_cert_file;
  std::string tls_key_file;
  //! CORS on the ingest paths (/v1/* here, /api/otel/v1/* on the API port)
  //! for the origins it allows; never on any other path. Off by default.
  CorsPolicy cors;
};

//! One listener's connections, for /metrics and the deep health check.
struct ListenerStats {
  bool api_port = false;
  int open_connections = 0;
  uint64_t refused_connections = 0;  // refused at the max_connections cap
};

//! Lifecycle: Listen() for each endpoint, then the io_context runs the
//! sessions; StopAccepting() closes the listeners (in-flight requests finish).
//!
//! The accept loop survives a shortage of descriptors (EMFILE, ENFILE) or
//! kernel memory by backing off (10 ms doubling to 1 s) instead of retrying
//! at once, and logs each shortage or cap burst once, not per connection.
class HttpServer {
 public:
  //! `api` may be null (no query API); query calls run on `query_pool`.
  HttpServer(boost::asio::io_context* ioc, IngestService* ingest, ApiService* api, boost::asio::thread_pool* query_pool,
             SimpleRoutes routes, HttpServerOptions options);
  ~HttpServer();

  //! Binds host:port ("0.0.0.0:4318", "[::1]:0"); returns the bound port.
  //! Fails when the TLS certificate or key cannot be loaded.
  //! api_port selects the route table: OTLP only, or OTLP under /api/otel plus the API.
  Result<int> Listen(const std::string& host_port, bool api_port);
  void StopAccepting();
  //! Thread-safe; one entry per Listen(), in order.
  std::vector<ListenerStats> GetListenerStats() const;

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

//! Splits "host:port" / "[v6]:port".
Status ParseHostPort(const std::string& s, std::string* host, int* port);

}  // namespace sightline
