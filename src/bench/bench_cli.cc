#include "bench/bench_cli.h"

#include <signal.h>

#include <memory>

#include "bench/ingest_run.h"
#include "bench/load_generator.h"
#include "bench/oltp.h"
#include "bench/probe.h"
#include "bench/ramp.h"
#include "bench/report.h"

namespace sightline {

void AddBenchCommands(CLI::App* app) {
  auto* bench = app->add_subcommand("bench", "Benchmarks (bench/README.md, docs/BENCHMARKS.md)");
  bench->require_subcommand(1);

  auto o = std::make_shared<bench::IngestBenchOptions>();
  auto* ingest = bench->add_subcommand(
      "ingest", "OTLP/HTTP ingest throughput: send generated telemetry, count what is acknowledged (2xx)");
  ingest->add_option("--endpoint", o->endpoint, "OTLP/HTTP base URL of the server (loopback only)")
      ->capture_default_str();
  ingest->add_option("--api", o->api, "API base URL for deep health (rows, commits, RSS), e.g. http://127.0.0.1:8080");
  ingest->add_option("--token", o->token, "Ingest token (default: $SIGHTLINE_INGEST_TOKEN; --spawn makes one)");
  ingest->add_option("--signal", o->signal, "spans, logs, metrics, or all (mixed, interleaved)")
      ->check(CLI::IsMember({"spans", "traces", "logs", "metrics", "all"}))
      ->capture_default_str();
  ingest->add_option("--batch", o->batch, "Items per request (spans, log records, metric points)")
      ->check(CLI::Range(size_t{1}, bench::kMaxGeneratorBatch))
      ->capture_default_str();
  ingest->add_option("--requests", o->requests, "Stop after N requests (overrides --duration)");
  ingest->add_option("--duration", o->duration_s, "Seconds to send for")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  ingest->add_option("--warmup", o->warmup_s, "Untimed seconds of load before each run (0 = none)")
      ->check(CLI::Range(0.0, 600.0))
      ->capture_default_str();
  ingest->add_option("--connections", o->connections, "Concurrent keep-alive connections (one thread each)")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  ingest->add_option("--rate", o->rate, "Target requests/s over all connections (0 = as fast as acknowledged)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  ingest->add_option("--protocol", o->protocol, "http (OTLP/HTTP) or grpc (OTLP/gRPC; --format proto)")
      ->check(CLI::IsMember({"http", "grpc"}))
      ->capture_default_str();
  ingest->add_option("--grpc-endpoint", o->grpc_endpoint, "OTLP/gRPC address of the server with --protocol grpc")
      ->capture_default_str();
  ingest->add_option("--format", o->format, "proto or json")
      ->check(CLI::IsMember({"proto", "json"}))
      ->capture_default_str();
  ingest->add_option("--gzip-level", o->gzip_level, "gzip level of the bodies (0 = send uncompressed)")
      ->check(CLI::Range(0, 12))
      ->capture_default_str();
  ingest->add_option("--seed", o->seed, "Random seed of the generated data")->capture_default_str();
  ingest->add_option("--json-out", o->json_out, "Write machine-readable results here");
  ingest->add_option("--spawn", o->spawn, "Start a fresh `sightline serve` with this engine for each run")
      ->check(CLI::IsMember({"duckdb", "sqlite", "clickhouse"}));
  ingest->add_option("--clickhouse-url", o->clickhouse_url,
                     "With --spawn clickhouse: a running ClickHouse server or cluster node to use, in a database of "
                     "the run's own (default: start a clickhouse-server per run)");
  ingest->add_option("--server-arg", o->server_args,
                     "Extra argument for the spawned server (repeatable), e.g. --server-arg=--duckdb-threads=2");
  ingest->add_flag("--raw", o->raw,
                   "Also time the bare engine appending the same rows to plain tables (no Sightline code)");
  ingest->add_option("--repeat", o->repeat, "Independent runs; medians with min/max are reported")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  ingest->add_option("--work-dir", o->work_dir, "Parent of the temporary data directories (default $TMPDIR or /tmp)");
  ingest->add_flag("--keep-data", o->keep_data, "Keep the temporary data directories");
  ingest->add_option("--expect-rate", o->expect_rate,
                     "Items/s per signal to prebuild payloads for in --duration mode (default: generous per signal)");
  ingest->add_option("--pool-mb", o->pool_mb, "Most memory the prebuilt payloads may take")->capture_default_str();
  ingest->add_option("--request-timeout", o->request_timeout_s, "Seconds before an unanswered request fails")
      ->capture_default_str();
  ingest->add_flag("--ignore-retry-after", o->ignore_retry_after,
                   "After a 429 or 503 send the next request at once (hammer the admission gate) instead of "
                   "waiting out its Retry-After, as an OTLP exporter does");
  ingest->callback([o] {
    // A server that closes a connection mid-write must not kill the benchmark.
    ::signal(SIGPIPE, SIG_IGN);
    int code = bench::RunIngestBench(*o);
    if (code != 0) throw CLI::RuntimeError(code);
  });
  bench::AddRampCommand(bench);
  bench::AddOltpCommand(bench);
  bench::AddReportCommand(bench);
  bench::AddProbeCommand(bench);
}

}  // namespace sightline
