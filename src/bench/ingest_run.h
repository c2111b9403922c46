#pragma once

// `sightline bench ingest`: drives OTLP/HTTP load at a Sightline server and
// reports what it accepted. One run = optionally spawn a fresh server, warm it
// up, build the payloads (untimed), send for a bounded time or request count,
// read the server's own counters, stop the server, optionally measure the raw
// engine on the same rows. --repeat N does N independent runs (fresh server and data
// each time) and reports medians with min/max. bench/README.md has the method.

#include <cstdint>
#include <string>
#include <vector>

namespace sightline::bench {

struct IngestBenchOptions {
  std::string endpoint = "http://127.0.0.1:4318";
  std::string api;               // http://HOST:PORT of the API port, for deep health ("" = none unless spawned)
  std::string token;             // ingest token ("" = $SIGHTLINE_INGEST_TOKEN; spawned servers get a fresh one)
  std::string signal = "spans";  // spans | logs | metrics | all
  size_t batch = 16384;
  uint64_t requests = 0;  // 0 = bounded by duration
  double duration_s = 10;
  double warmup_s = 2;  // untimed load before each run (also sizes the payload pool)
  int connections = 4;
  double rate = 0;                // requests/s; 0 = as fast as acknowledged
  std::string format = "proto";   // proto | json
  std::string protocol = "http";  // http | grpc (OTLP/gRPC needs proto; gzip is gRPC's message compression)
  std::string grpc_endpoint = "http://127.0.0.1:4317";  // the server's OTLP/gRPC address, unless spawned
  int gzip_level = 1;  // 0 = no Content-Encoding (1: cheap to build; inflate costs the same)
  uint64_t seed = 1;
  std::string json_out;
  std::string spawn;  // "" | duckdb | sqlite | clickhouse
  //! --spawn clickhouse: a running server or cluster to use ("" = start a
  //! clickhouse-server per run; server_process.h, BenchClickHouse).
  std::string clickhouse_url;
  std::vector<std::string> server_args;
  bool raw = false;
  int repeat = 1;
  std::string work_dir;  // temp data lives under it ("" = $TMPDIR or /tmp)
  bool keep_data = false;
  double expect_rate = 0;  // items/s used to size the prebuilt pool in duration mode (0 = default)
  uint64_t pool_mb = 2048;
  double request_timeout_s = 60;
  bool ignore_retry_after = false;  // HttpLoadOptions::honor_retry_after off
};

//! Runs the benchmark, prints the table, writes the JSON; returns the exit code
//! (0 ok, 1 setup failure, 2 no request accepted).
int RunIngestBench(const IngestBenchOptions& options);

}  // namespace sightline::bench
