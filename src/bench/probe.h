#pragma once

// `sightline bench probe`: the read probe ladder (bench/README.md). Per
// signal (or all three at once with --mixed): fill a server to each level of
// accepted rows with generated OTLP spread over a 24 h window, wait until the
// engine has digested it (deep health's database and WAL sizes stable), then
// time that signal's three dashboard calls, three times each. A level passes
// when every call's median is within the limit and no call timed out; the
// last passing level before the first failing one is the signal's read
// cliff. --check diffs every answer against ground truth (probe_truth.h).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace CLI {
class App;
}

namespace sightline::bench {

struct ProbeBenchOptions {
  std::string endpoint = "http://127.0.0.1:4318";
  std::string api = "http://127.0.0.1:8080";
  std::string token;           // "" = $SIGHTLINE_INGEST_TOKEN; spawned servers get a fresh one
  std::string read_token;      // for the API; spawned servers get a fresh one
  std::string spawn;           // "" | duckdb | sqlite | clickhouse
  std::string clickhouse_url;  // --spawn clickhouse: a running server ("" = start one; BenchClickHouse)
  std::vector<std::string> server_args;
  std::string signal = "all";  // spans | logs | metrics | all
  bool mixed = false;          // fill all signals at once (interleaved) on one server
  std::string levels = "1M,10M,100M";
  size_t batch = 16384;
  int connections = 4;
  int probes = 3;
  double timeout_s = 6;      // client timeout of one call; also the spawned server's --query-timeout-ms
  double pass_median_s = 5;  // a call's median must be at most this
  double digest_timeout_s = 300;
  double digest_interval_s = 1;
  int digest_polls = 3;     // equal consecutive deep-health readings that count as digested
  double under_ingest = 0;  // background items/s while probing (0 = none)
  size_t under_ingest_batch = 100;
  int repeat = 1;
  bool check = false;
  //! With --check: entry spans (metric points) up to which every duration is
  //! kept so percentiles are compared too (ProbeTruthOptions).
  size_t exact_percentile_rows = 100000;
  uint64_t seed = 1;
  //! Metrics of the fill: bounded double gauges (GeneratorOptions::bounded_gauges).
  bool bounded_gauges = false;
  std::string json_out;
  std::string work_dir;
  bool keep_data = false;
  //! A directory a --keep-data ladder left (its probe_state.json): continue
  //! that ladder there (probe_state.h). One ladder, spawned, embedded engine.
  std::string resume;
  //! With --resume: probe the kept ladder's largest probed level again
  //! (nothing more is filled), e.g. with --under-ingest beside the first run.
  bool reprobe = false;
  uint64_t stop_after = 0;  // stop (resumably) once the level with this many rows is probed; 0 = never
  uint64_t pool_mb = 1024;
};

//! "10000,50000", "1M,10M", "2.5k": positive, strictly increasing row counts.
Result<std::vector<uint64_t>> ParseLevels(const std::string& text);

//! One dashboard call's probes at one level.
struct CallSamples {
  std::vector<double> samples_ms;
  std::vector<int> http_status;  // 0 = no answer (client timeout or connection error)
  int timeouts = 0;              // HTTP 504 or no answer within the client timeout
};

//! The pass rule: every call answered 200 each time, none timed out, and each
//! median is at most max_median_ms. On failure *reason names the first culprit.
bool LevelPasses(const std::vector<std::string>& names, const std::vector<CallSamples>& calls, double max_median_ms,
                 std::string* reason);

//! The read cliff of a ladder: the last passing level before the first
//! failing one (levels after a failure are not probed); nullopt when the
//! first level fails or none was run.
std::optional<uint64_t> ReadCliff(const std::vector<uint64_t>& levels, const std::vector<bool>& passed);

//! Registers `probe` under the `bench` subcommand.
void AddProbeCommand(CLI::App* bench);

//! Runs the ladder(s), prints progress and the table, writes the JSON;
//! returns the exit code (0 ok, 1 setup failure, 3 a --check mismatch, 130
//! stopped by SIGINT/SIGTERM: the state is saved for --resume).
int RunProbeBench(const ProbeBenchOptions& options);

}  // namespace sightline::bench
