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
#include <optional>
#include <string>
#include <vector>

#include "bench/http_load.h"
#include "common/status.h"

namespace sightline::bench {

//! The ClickHouse database of `--spawn clickhouse`, which the spawned
//! `sightline serve` (ServerProcess::Start starts it first) and the raw
//! engine both use: a user's server or cluster
//! (`url`), in a database of the run's own that is dropped at the end unless
//! kept; or, with no url, a fresh clickhouse-server child (Debian's
//! /usr/sbin/clickhouse-server; $SIGHTLINE_CLICKHOUSE_SERVER overrides it)
//! on free loopback ports, its data and logs under <work_dir>/clickhouse,
//! stopped at the end.
class BenchClickHouse {
 public:
  //! `cluster`: the spawned server's --clickhouse-cluster, if any, so the
  //! run's database is dropped on every shard.
  static Result<std::unique_ptr<BenchClickHouse>> Open(const std::string& url, const std::string& work_dir,
                                                       bool keep_data, const std::string& cluster = "");
  ~BenchClickHouse();
  const HttpEndpoint& http() const { return http_; }
  std::string url() const { return "http://" + http_.host + ":" + std::to_string(http_.port); }
  const std::string& database() const { return database_; }
  //! --storage clickhouse and where, for the spawned server.
  std::vector<std::string> ServeArgs() const;
  pid_t pid() const { return pid_; }  // -1 for a user's server

 private:
  BenchClickHouse() = default;
  pid_t pid_ = -1;
  HttpEndpoint http_;
  std::string database_ = "sightline";
  std::string cluster_;
  bool drop_ = false;
};

struct SpawnOptions {
  std::string engine = "duckdb";
  std::string work_dir;  // holds data/ and server.log; must exist
  std::string token;
  std::vector<std::string> extra_args;  // appended to `serve ...`
  double ready_timeout_s = 60;
  bool grpc = false;  // also listen for OTLP/gRPC (grpc()), else --otlp-grpc ""
  // engine "clickhouse": the database (BenchClickHouse::Open's arguments).
  std::string clickhouse_url;
  bool keep_data = false;
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

  //! A token of the default project, minted by `sightline token create
  //! --scope <scope>` on this server's data directory: "read" for the API
  //! (the ingest token cannot read it), "ingest" for a server started on a
  //! kept directory (SpawnOptions::token only applies on a first start).
  Result<std::string> CreateToken(const std::string& scope) const;

  //! SIGTERM, wait up to timeout_s, then SIGKILL. OK when it exited 0. The
  //! engine's database (clickhouse()) keeps running until destruction.
  Status Stop(double timeout_s, double* shutdown_seconds);
  //! The ClickHouse the server writes to (engine "clickhouse"), else null.
  const BenchClickHouse* clickhouse() const { return clickhouse_.get(); }

 private:
  ServerProcess() = default;
  std::unique_ptr<BenchClickHouse> clickhouse_;  // destroyed after the server is stopped
  pid_t pid_ = -1;
  HttpEndpoint otlp_, api_, grpc_;
  std::string data_dir_;
  std::string log_path_;
};

//! One statement over ClickHouse's HTTP interface; with `data`, the
//! statement goes in the URL and the data (gzip-compressed by the caller
//! when `gzip`) in the body. The answer's body; the server's message as the
//! error otherwise.
Result<std::string> ClickHouseQuery(const HttpEndpoint& server, const std::string& database, const std::string& sql,
                                    std::string data = "", bool gzip = false);

//! user + system CPU seconds of a process (utime + stime in /proc/PID/stat); -1 if unknown.
double ProcessCpuSecondsOf(pid_t pid);
//! VmHWM (peak resident set) of a live process, bytes; 0 if unknown.
uint64_t PeakRssBytesOf(pid_t pid);
//! Whether a process is running: false once it exited (a zombie not yet
//! reaped counts as exited) or was killed, as by the kernel's OOM killer.
bool ProcessIsRunning(pid_t pid);
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
  //! engine.signals.*: a signal's bytes on disk and the rows they hold
  //! (nullopt where the engine cannot say).
  std::optional<uint64_t> signal_bytes[kSignalCount];
  std::optional<uint64_t> signal_stored_rows[kSignalCount];
};
//! `fresh`: ask for the signals' bytes measured now (?fresh=1), not cached.
Result<DeepHealth> FetchDeepHealth(const HttpEndpoint& api, bool fresh = false);

//! Finds the number at a path of object keys in JSON text we produced
//! ({"a":{"b":12}} with {"a","b"}); false when absent. Keys are matched in
//! order, each after the previous one, which is enough for deep health.
bool FindJsonNumber(const std::string& json, std::initializer_list<const char*> path, uint64_t* out);

}  // namespace sightline::bench
