#pragma once

// `sightline bench ramp`: the published throughput ramp, per signal. Three
// phases, each a sequence of open-loop steps of --step-duration seconds:
//   batch  batch sizes rising at a fixed request rate;
//   rate   request rates rising at the batch phase's winning batch size,
//          then a bisection between the last passing and first failing rate;
//   fleet  batch 100 at rising high rates ("an SDK fleet").
// A step passes below 5% errors with >= 70% of its target rate achieved
// (ramp_logic.h); a phase stops at its first failing step. One spawned
// server per signal (or an external one). bench/README.md has the method
// and the JSON schema.

#include <cstdint>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace sightline::bench {

struct RampBenchOptions {
  std::string endpoint = "http://127.0.0.1:4318";
  std::string api;               // API base URL for RSS readings of an external server ("" = none)
  std::string token;             // "" = $SIGHTLINE_INGEST_TOKEN; spawned servers get a fresh one
  std::string signal = "spans";  // spans | logs | metrics | all (each in turn)
  std::string spawn;             // "" | duckdb | sqlite | clickhouse
  std::string clickhouse_url;    // --spawn clickhouse: a running server ("" = start one; BenchClickHouse)
  std::vector<std::string> server_args;
  std::vector<std::string> phases = {"batch", "rate", "fleet"};
  std::vector<double> batches = {100, 1000, 4096, 16384};
  double batch_rate = 2;
  std::vector<double> rates = {1, 2, 3, 5, 8, 12, 17, 25};
  int bisect_steps = 3;
  double fleet_batch = 100;
  std::vector<double> fleet_rates = {50, 100, 200, 400, 800, 1600, 3200};
  double step_duration_s = 5;
  double warmup_s = 2;  // at the start of each phase, at its first step's load
  int connections = 8;  // batch and rate phases; the fleet's follow its rate
  std::string format = "proto";
  int gzip_level = 1;
  uint64_t seed = 1;
  double request_timeout_s = 30;
  uint64_t pool_mb = 2048;
  std::string json_out;
  std::string work_dir;
  bool keep_data = false;
};

//! Runs the ramp, prints progress and a summary, writes the JSON; returns
//! the exit code (0 ok, 1 setup failure, 2 no item accepted at all).
int RunRampBench(const RampBenchOptions& options);

//! Registers `ramp` on the `bench` subcommand; its callback runs
//! RunRampBench and throws CLI::RuntimeError(code) on failure.
void AddRampCommand(CLI::App* bench);

}  // namespace sightline::bench
