#pragma once

// The load client: C worker threads, each with one persistent keep-alive
// Boost.Beast connection, POSTing the pool's payloads in request order.
// Closed loop by default (each connection sends its next request when the
// previous one is answered, i.e. "as fast as acknowledged"); with a rate,
// request i is due at start + i / rate and waits for its time (open loop,
// latency measured from the actual send). Loopback only: the benchmark must
// not become a load generator for someone else's host.

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "bench/payload_pool.h"
#include "common/status.h"

namespace sightline::bench {

//! http://HOST:PORT with HOST a loopback address (127.0.0.0/8, ::1, localhost).
struct HttpEndpoint {
  std::string host;
  int port = 0;
};
Result<HttpEndpoint> ParseLoopbackUrl(const std::string& url);

struct HttpLoadOptions {
  HttpEndpoint endpoint;
  std::string token;
  int connections = 4;
  uint64_t requests = 0;          // stop after this many requests (0: duration bounds the run)
  double duration_s = 10;         // stop sending after this long (when requests is 0)
  double rate = 0;                // target requests/s over all connections; 0 = closed loop
  double request_timeout_s = 60;  // an unanswered request fails (status 0) after this
  std::string content_type;
  std::string content_encoding;  // "" = none
  //! OTLP/gRPC to `endpoint` instead: one channel (one HTTP/2 connection)
  //! per worker, the pool's bodies as the request messages (uncompressed;
  //! `grpc_gzip` has gRPC compress them). A status is counted as its HTTP
  //! equivalent (OK 200, UNAVAILABLE 503, ...; 0 when no answer came).
  bool grpc = false;
  bool grpc_gzip = false;
  //! After a 429 or 503 a worker waits before its next request, as an OTLP
  //! exporter does: the answer's Retry-After (gRPC: its RetryInfo), else a
  //! backoff that doubles from kFirstBackoffS to kMaxBackoffS while refusals
  //! continue; never past the run's end. False: it sends the next one at once
  //! (hammers the admission gate).
  bool honor_retry_after = true;
  static constexpr double kFirstBackoffS = 0.5;
  static constexpr double kMaxBackoffS = 8;
};

//! Per signal. Latencies are of 2xx responses only, in milliseconds.
struct SignalLoadResult {
  uint64_t requests = 0;     // sent (including failed)
  uint64_t ok_requests = 0;  // answered 2xx
  uint64_t items_sent = 0;
  uint64_t items_accepted = 0;  // items in 2xx responses: the only ones that count
  uint64_t wire_bytes_sent = 0;
  std::map<int, uint64_t> status_counts;  // HTTP status; 0 = connection error / no response
  double retry_wait_s = 0;                // workers' time spent waiting after a 429 / 503
  std::vector<float> latencies_ms;
};

struct HttpLoadResult {
  double elapsed_s = 0;  // first send to last response
  std::array<SignalLoadResult, kSignalCount> signals;
  uint64_t payloads_built_during_run = 0;
  double build_cpu_during_run_s = 0;  // generator CPU spent inside the timed window
  double client_cpu_s = 0;            // this process, over the timed window
};

//! Runs the load; an error only when no connection could be made at all.
Result<HttpLoadResult> RunHttpLoad(const HttpLoadOptions& options, const PayloadPool& pool);

//! One GET (new connection each time; for health probes and API calls, which
//! pass a bearer token). Returns the status and fills *body.
Result<int> HttpGet(const HttpEndpoint& endpoint, const std::string& target, std::string* body, int timeout_ms = 5000,
                    const std::string& token = "");

//! One POST of `body` (new connection), with Content-Encoding when
//! `content_encoding` is set. Returns the status and fills *response.
Result<int> HttpPost(const HttpEndpoint& endpoint, const std::string& target, std::string body, std::string* response,
                     int timeout_ms, const std::string& content_encoding = "");

}  // namespace sightline::bench
