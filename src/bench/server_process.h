#pragma once

// A `sightline serve` child for one benchmark run (--spawn): this binary
// (/proc/self/exe) on free loopback ports, a fresh data directory and a known
// ingest token. Start() returns once /readyz answers 200; Stop() sends SIGTERM
// and waits for the graceful drain (SIGKILL after the timeout). The child's
// output goes to <work_dir>/server.log.
//
// Also: what the benchmark reads about a server — CPU time from
// /proc/PID/stat, peak RSS from /proc/PID/status, and the deep-health JSON.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/http_load.h"
#include "common/status.h"

namespace sightline::bench {

struct SpawnOptions {
  std::string engine = "duckdb";
  std::string work_dir;  // holds data/ and server.log; must exist
  std::string token;
  std::vector<std::string> extra_args;  // appended to `serve ...`
  double ready_timeout_s = 60;
  bool grpc = false;  // also listen for OTLP/gRPC (grpc()), else --otlp-grpc ""
};

//! Not thread-safe; the destructor stops a running child.
class ServerProcess {
 public:
  static Result<std::unique_ptr<ServerProcess>> Start(const SpawnOptions& options);
  ~ServerProcess();

  pid_t pid() const { return pid_; }
  const HttpEndpoint& otlp() const { return otlp_; }
  const HttpEndpoint& api() const { return api_; }
  const HttpEndpoint& grpc() const { return grpc_; }  // port 0 unless SpawnOptions::grpc
  const std::string& log_path() const { return log_path_; }

  //! A read token of the default project, minted by `sightline token create
  //! --scope read` on this server's data directory (the ingest token cannot
  //! read the API).
  Result<std::string> CreateReadToken() const;

  //! SIGTERM, wait up to timeout_s, then SIGKILL. OK when it exited 0.
  Status Stop(double timeout_s, double* shutdown_seconds);

 private:
  ServerProcess() = default;
  pid_t pid_ = -1;
  HttpEndpoint otlp_, api_, grpc_;
  std::string data_dir_;
  std::string log_path_;
};

//! user + system CPU seconds of a process (utime + stime in /proc/PID/stat); -1 if unknown.
double ProcessCpuSecondsOf(pid_t pid);
//! VmHWM (peak resident set) of a live process, bytes; 0 if unknown.
uint64_t PeakRssBytesOf(pid_t pid);
//! VmRSS (current resident set) of a live process, bytes; 0 if unknown. A
//! sampler's peak over one step, unlike VmHWM, the peak of the whole life.
uint64_t CurrentRssBytesOf(pid_t pid);

//! The numbers the benchmark takes from GET /api/health/deep.
struct DeepHealth {
  uint64_t rows[kSignalCount] = {0, 0, 0};
  uint64_t commits[kSignalCount] = {0, 0, 0};
  uint64_t rss_bytes = 0;
  uint64_t database_bytes = 0;
  uint64_t wal_bytes = 0;
  uint64_t gate_rejections = 0;
};
Result<DeepHealth> FetchDeepHealth(const HttpEndpoint& api);

//! Finds the number at a path of object keys in JSON text we produced
//! ({"a":{"b":12}} with {"a","b"}); false when absent. Keys are matched in
//! order, each after the previous one, which is enough for deep health.
bool FindJsonNumber(const std::string& json, std::initializer_list<const char*> path, uint64_t* out);

}  // namespace sightline::bench
