// sightline: the one binary. `serve` runs the backend; the other commands are
// tools for operators and tests.

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <tuple>
#include <vector>

#include "bench/bench_cli.h"
#include "cli/project_commands.h"
#include "cli/serve_config.h"
#include "cli/state_option.h"
#include "cli/token_commands.h"
#include "common/json_writer.h"
#include "common/thread_name.h"
#include "common/units.h"
#include "server/cors.h"
#include "server/process_metrics.h"
#include "server/server.h"
#include "state/postgres/postgres_state_store.h"
#include "storage/schema_version.h"
#include "storage/telemetry_store.h"

namespace sightline {
namespace {

void AddStoreOptions(CLI::App* cmd, std::string* data, std::string* storage, StoreOptions* store) {
  cmd->add_option("--data", *data, "Data directory (engine files, state.sqlite)")
      ->envname("SIGHTLINE_DATA")
      ->capture_default_str();
  cmd->add_option("--storage", *storage, "Telemetry engine: duckdb, sqlite or clickhouse")
      ->envname("SIGHTLINE_STORAGE")
      ->check(CLI::IsMember({"duckdb", "sqlite", "clickhouse"}))
      ->capture_default_str();
  cmd->add_option("--duckdb-memory-limit", store->memory_limit,
                  "DuckDB memory_limit, e.g. 2GB (default: 60% of RAM, or of the cgroup's memory limit)")
      ->envname("SIGHTLINE_DUCKDB_MEMORY_LIMIT");
  cmd->add_option("--duckdb-checkpoint-threshold", store->checkpoint_threshold,
                  "DuckDB checkpoint_threshold: WAL size that triggers a checkpoint. Small values re-compress "
                  "half-full row groups often and cut append throughput several-fold")
      ->envname("SIGHTLINE_DUCKDB_CHECKPOINT_THRESHOLD")
      ->capture_default_str();
  cmd->add_option("--duckdb-threads", store->threads, "DuckDB worker threads (0 = one per core)")
      ->envname("SIGHTLINE_DUCKDB_THREADS")
      ->capture_default_str();
  cmd->add_option("--duckdb-max-delete-rows", store->max_delete_rows,
                  "DuckDB: a retention delete removes at most this many rows per transaction, with a checkpoint "
                  "between (DuckDB holds 16 bytes per deleted row outside its memory limit until a checkpoint)")
      ->envname("SIGHTLINE_DUCKDB_MAX_DELETE_ROWS")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--rollup-exact-spans", store->rollup_exact_spans,
                  "DuckDB, SQLite: span groups (endpoints, their charts) over fewer spans than this are computed "
                  "exactly from raw spans; over more, from the minute and hour rollups (percentiles within 1%)")
      ->envname("SIGHTLINE_ROLLUP_EXACT_SPANS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--clickhouse-url", store->clickhouse_url,
                  "ClickHouse HTTP interface, or chdb:///abs/dir for an in-process one (--storage clickhouse)")
      ->envname("SIGHTLINE_CLICKHOUSE_URL")
      ->capture_default_str();
  cmd->add_option("--clickhouse-database", store->clickhouse_database,
                  "ClickHouse database of the telemetry tables (created when missing)")
      ->envname("SIGHTLINE_CLICKHOUSE_DATABASE")
      ->capture_default_str();
  cmd->add_option("--clickhouse-user", store->clickhouse_user, "ClickHouse user (default: the server's default user)")
      ->envname("SIGHTLINE_CLICKHOUSE_USER");
  cmd->add_option("--clickhouse-password", store->clickhouse_password, "ClickHouse password")
      ->envname("SIGHTLINE_CLICKHOUSE_PASSWORD");
  cmd->add_option("--clickhouse-timeout-ms", store->clickhouse_timeout_ms,
                  "Longest wait for ClickHouse's answer to an insert, DDL, retention or gauge statement (then 503)")
      ->envname("SIGHTLINE_CLICKHOUSE_TIMEOUT_MS")
      ->check(CLI::Range(int64_t{100}, int64_t{3600000}))
      ->capture_default_str();
  cmd->add_option("--clickhouse-cluster", store->clickhouse_cluster,
                  "ClickHouse cluster (as named in the servers' remote_servers): ON CLUSTER DDL, per-shard tables "
                  "under Distributed ones, synchronous inserts on every shard")
      ->envname("SIGHTLINE_CLICKHOUSE_CLUSTER");
  cmd->add_flag("--clickhouse-replicated", store->clickhouse_replicated,
                "With --clickhouse-cluster: Replicated*MergeTree tables (needs ZooKeeper and the {shard}/{replica} "
                "macros on every server)")
      ->envname("SIGHTLINE_CLICKHOUSE_REPLICATED");
  cmd->add_option("--clickhouse-insert-quorum", store->clickhouse_insert_quorum,
                  "insert_quorum of replicated inserts (0: a majority of the smallest shard's replicas)")
      ->envname("SIGHTLINE_CLICKHOUSE_INSERT_QUORUM")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
}

int Serve(ServerOptions options) {
  // Signals are taken synchronously by this thread; every other thread inherits the mask.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  // A batch's string columns have 32-bit offsets: what decoding one request
  // may build must stay below 4 GiB.
  if (options.ingest.max_body_bytes * options.ingest.decode_amplification + kDecodeFixedBytes >= (size_t{1} << 32)) {
    spdlog::error("--max-body-bytes x --max-decode-amplification must stay below 4 GiB");
    return 2;
  }
  std::string storage = options.storage, data = options.data_dir;
  const std::string state = options.state.empty() ? data + "/state.sqlite" : RedactDsn(options.state);
  const std::string state_flag =
      options.state.empty() ? "--data " + data : "--state '" + RedactDsn(options.state) + "'";
  auto server = Server::Start(std::move(options));
  if (!server.ok()) {
    spdlog::error("cannot start: {}", server.status().ToString());
    return 1;
  }
  Server& s = *server.value();
  std::printf("Sightline is running (storage: %s, data: %s, state: %s)\n", storage.c_str(), data.c_str(),
              state.c_str());
  const char* scheme = s.tls() ? "https" : "http";
  std::printf("  OTLP/HTTP  %s://<host>:%d  (POST /v1/traces, /v1/logs, /v1/metrics)\n", scheme, s.otlp_port());
  if (s.grpc_port() != 0) {
    std::printf("  OTLP/gRPC  %s://<host>:%d  (TraceService, LogsService, MetricsService)\n", scheme, s.grpc_port());
  }
  std::printf("  UI / API   %s://<host>:%d  (health: /healthz /readyz /api/health/deep, metrics: /metrics)\n", scheme,
              s.api_port());
  if (!s.minted_token().empty()) {
    std::printf("  Ingest token of project 'default' (shown once, stored hashed):\n    %s\n", s.minted_token().c_str());
    std::printf("  export OTEL_EXPORTER_OTLP_ENDPOINT=%s://localhost:%d\n", scheme, s.otlp_port());
    std::printf("  export OTEL_EXPORTER_OTLP_HEADERS=\"Authorization=Bearer %s\"\n", s.minted_token().c_str());
  }
  if (!s.minted_admin_password().empty()) {
    std::printf("  UI login: admin / %s  (shown once; set SIGHTLINE_ADMIN_PASSWORD to choose it)\n",
                s.minted_admin_password().c_str());
  }
  if (s.minted_token().empty()) {
    std::printf("  Ingest tokens are stored hashed; mint one with: sightline token create --project default %s\n",
                state_flag.c_str());
  }
  std::fflush(stdout);

  int sig = 0;
  sigwait(&set, &sig);
  spdlog::info("received {}, draining in-flight requests", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  Status st = s.Stop();
  if (!st.ok()) {
    spdlog::error("shutdown: {}", st.ToString());
    return 1;
  }
  spdlog::info("stopped cleanly");
  return 0;
}

int Sql(const std::string& data, const std::string& storage, const StoreOptions& base, const std::string& sql) {
  RegisterBuiltinStores();
  StoreOptions options = base;
  options.data_dir = data;
  auto store = StoreRegistry::Instance().Open(storage, options);
  if (!store.ok()) {
    std::fprintf(stderr, "sightline sql: %s\n", store.status().ToString().c_str());
    return 1;
  }
  auto result = store.value()->ExecuteSql(sql);
  Status closed = store.value()->Close();
  if (!result.ok()) {
    std::fprintf(stderr, "sightline sql: %s\n", result.status().ToString().c_str());
    return 1;
  }
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("columns");
  w.BeginArray();
  for (const auto& c : result->columns) w.String(c);
  w.EndArray();
  w.Key("rows");
  w.BeginArray();
  for (const auto& row : result->rows) {
    w.BeginArray();
    for (const auto& cell : row) {
      if (cell) w.String(*cell);
      else w.Null();
    }
    w.EndArray();
  }
  w.EndArray();
  w.EndObject();
  std::cout << out << "\n";
  return closed.ok() ? 0 : 1;
}

int Migrate(const std::string& data, const std::string& storage, const StoreOptions& base) {
  RegisterBuiltinStores();
  StoreOptions options = base;
  options.data_dir = data;
  Result<SchemaReport> report = MigrateStore(storage, options);
  if (!report.ok()) {
    std::fprintf(stderr, "sightline migrate: %s\n", report.status().ToString().c_str());
    return 1;
  }
  if (report->applied.empty()) {
    std::printf("%s (%s) is at schema version %lld; nothing to migrate\n", data.c_str(), storage.c_str(),
                static_cast<long long>(report->version));
    return 0;
  }
  std::printf("%s (%s): schema version %lld -> %lld\n", data.c_str(), storage.c_str(),
              static_cast<long long>(report->found_version), static_cast<long long>(report->version));
  for (const std::string& step : report->applied) std::printf("  %s\n", step.c_str());
  return 0;
}

}  // namespace
}  // namespace sightline

int main(int argc, char** argv) {
  using namespace sightline;
  // Whatever the binary is called or run as (bench spawns /proc/self/exe):
  // the main thread, and the engines' workers it starts, show as sightline.
  NameThisThread("sightline");
  CLI::App app{"Sightline: a self-hosted OpenTelemetry backend (OTLP in, dashboards out)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", [] {
    const EngineVersions engines = BuiltinEngineVersions();
    return std::string("sightline ") + SightlineVersion() + "\nDuckDB " + engines.duckdb + "\nSQLite " + engines.sqlite;
  });
  std::string log_level = "info";
  CLI::Option* log_level_option =
      app.add_option("--log-level", log_level, "Log verbosity: trace, debug, info, warn, error, critical or off")
          ->envname("SIGHTLINE_LOG_LEVEL")
          ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}))
          ->capture_default_str();

  ServerOptions so;
  auto* serve = app.add_subcommand("serve", "Run Sightline: OTLP/HTTP receiver, API and UI");
  AddStoreOptions(serve, &so.data_dir, &so.storage, &so.store);
  AddStateOption(serve, &so.state);
  serve->add_option("--otlp-http", so.otlp_http, "OTLP/HTTP listen address HOST:PORT")
      ->envname("SIGHTLINE_OTLP_HTTP")
      ->capture_default_str();
  serve->add_option("--otlp-grpc", so.otlp_grpc, "OTLP/gRPC listen address HOST:PORT (\"\" = off)")
      ->envname("SIGHTLINE_OTLP_GRPC")
      ->capture_default_str();
  serve
      ->add_option("--grpc-max-concurrent-streams", so.grpc.max_concurrent_streams,
                   "OTLP/gRPC calls in flight on one connection")
      ->envname("SIGHTLINE_GRPC_MAX_CONCURRENT_STREAMS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--grpc-max-memory-bytes", so.grpc.max_memory_bytes,
                   "Memory gRPC may hold for the buffers of all its connections")
      ->envname("SIGHTLINE_GRPC_MAX_MEMORY_BYTES")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve->add_option("--listen", so.listen, "API and UI listen address HOST:PORT")
      ->envname("SIGHTLINE_LISTEN")
      ->capture_default_str();
  serve
      ->add_option("--max-body-bytes", so.ingest.max_body_bytes,
                   "Largest OTLP body accepted, compressed and decompressed (413 above)")
      ->envname("SIGHTLINE_MAX_BODY_BYTES")
      ->capture_default_str();
  serve
      ->add_option("--max-inflight-bytes", so.gate.max_inflight_bytes,
                   "Ingest memory budget: bytes held by admitted requests, bodies + decoded batches (503 above)")
      ->envname("SIGHTLINE_MAX_INFLIGHT_BYTES")
      ->capture_default_str();
  serve
      ->add_option("--max-inflight-requests", so.gate.max_inflight_requests,
                   "Concurrent ingest requests admitted (503 above)")
      ->envname("SIGHTLINE_MAX_INFLIGHT_REQUESTS")
      ->capture_default_str();
  serve
      ->add_option("--body-timeout-ms", so.http.body_timeout_ms,
                   "A request body must arrive within this (503 + Retry-After after)")
      ->envname("SIGHTLINE_BODY_TIMEOUT_MS")
      ->capture_default_str();
  serve->add_option("--header-timeout-ms", so.http.header_timeout_ms, "Request headers / keep-alive idle timeout")
      ->envname("SIGHTLINE_HEADER_TIMEOUT_MS")
      ->capture_default_str();
  serve
      ->add_option("--min-body-bytes-per-second", so.http.min_body_bytes_per_second,
                   "An OTLP body slower than this on average after --body-rate-grace-ms is cut with 503 (0 = off)")
      ->envname("SIGHTLINE_MIN_BODY_BYTES_PER_SECOND")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  serve
      ->add_option("--body-rate-grace-ms", so.http.body_rate_grace_ms,
                   "Time a body has before --min-body-bytes-per-second applies")
      ->envname("SIGHTLINE_BODY_RATE_GRACE_MS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  serve
      ->add_option("--max-connections", so.http.max_connections,
                   "Open connections per listener; past it new ones get 503 and are closed")
      ->envname("SIGHTLINE_MAX_CONNECTIONS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  auto* tls_cert =
      serve
          ->add_option("--tls-cert", so.http.tls_cert_file,
                       "PEM certificate (chain) file: both listeners speak TLS 1.2+ only (needs --tls-key)")
          ->envname("SIGHTLINE_TLS_CERT")
          ->check(CLI::ExistingFile);
  auto* tls_key = serve->add_option("--tls-key", so.http.tls_key_file, "PEM private key file of --tls-cert")
                      ->envname("SIGHTLINE_TLS_KEY")
                      ->check(CLI::ExistingFile);
  tls_cert->needs(tls_key);
  tls_key->needs(tls_cert);
  std::string cors_origins;
  serve
      ->add_option("--cors-allowed-origins", cors_origins,
                   "Comma-separated origins (https://app.example.com) whose pages may send OTLP/HTTP from a browser "
                   "(CORS on the ingest paths only; off when empty; '*' is refused)")
      ->envname("SIGHTLINE_CORS_ALLOWED_ORIGINS");
  serve
      ->add_flag("--metrics-require-auth", so.metrics_require_auth,
                 "/metrics and /api/health/deep answer only a UI session or a project's token (401 otherwise)")
      ->envname("SIGHTLINE_METRICS_REQUIRE_AUTH");
  serve->add_option("--io-threads", so.io_threads, "Network threads")
      ->envname("SIGHTLINE_IO_THREADS")
      ->capture_default_str();
  serve->add_option("--decode-threads", so.ingest.decode_threads, "Decode threads (0 = one per core)")
      ->envname("SIGHTLINE_DECODE_THREADS")
      ->capture_default_str();
  serve
      ->add_option("--max-series-per-project", so.max_series_per_project,
                   "Metric series a project may hold; points of new series past it are refused (0 = no cap)")
      ->envname("SIGHTLINE_MAX_SERIES_PER_PROJECT")
      ->capture_default_str();
  serve
      ->add_option("--max-decode-amplification", so.ingest.decode_amplification,
                   "Decoding a request may hold this many times its decompressed size, plus 4 MiB (413 above)")
      ->envname("SIGHTLINE_MAX_DECODE_AMPLIFICATION")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  serve
      ->add_option("--max-attribute-value-bytes", so.ingest.decode.max_attribute_value_bytes,
                   "Longer string attribute values (any depth), status messages and descriptions are cut")
      ->envname("SIGHTLINE_MAX_ATTRIBUTE_VALUE_BYTES")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--max-attributes", so.ingest.decode.max_attributes,
                   "Attributes kept per map; the rest are dropped and counted")
      ->envname("SIGHTLINE_MAX_ATTRIBUTES")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--max-span-events", so.ingest.decode.max_span_events,
                   "Events kept per span; the rest are dropped and counted")
      ->envname("SIGHTLINE_MAX_SPAN_EVENTS")
      ->capture_default_str();
  serve
      ->add_option("--max-span-links", so.ingest.decode.max_span_links,
                   "Links kept per span; the rest are dropped and counted")
      ->envname("SIGHTLINE_MAX_SPAN_LINKS")
      ->capture_default_str();
  serve
      ->add_option("--max-name-bytes", so.ingest.decode.max_name_bytes,
                   "Longer span, event, metric and scope names, units and severity texts are cut")
      ->envname("SIGHTLINE_MAX_NAME_BYTES")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--max-service-name-bytes", so.ingest.decode.max_service_name_bytes,
                   "Longer service.name values are cut (it is stored on every row)")
      ->envname("SIGHTLINE_MAX_SERVICE_NAME_BYTES")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--shutdown-timeout-ms", so.shutdown_timeout_ms, "On SIGTERM, wait this long for in-flight requests")
      ->envname("SIGHTLINE_SHUTDOWN_TIMEOUT_MS")
      ->capture_default_str();
  serve->add_option("--max-group-rows", so.writer.max_group_rows, "Most rows one group commit takes")
      ->envname("SIGHTLINE_MAX_GROUP_ROWS")
      ->capture_default_str();
  serve->add_option("--query-timeout-ms", so.api.query_timeout_ms, "Deadline of one dashboard query (504 after)")
      ->envname("SIGHTLINE_QUERY_TIMEOUT_MS")
      ->capture_default_str();
  serve
      ->add_option("--max-query-groups", so.api.limits.max_groups,
                   "Most services or endpoints in one answer (400 past it)")
      ->envname("SIGHTLINE_MAX_QUERY_GROUPS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--max-query-series", so.api.limits.max_series,
                   "Most series of one metric a call reads (400 past it)")
      ->envname("SIGHTLINE_MAX_QUERY_SERIES")
      ->check(CLI::Range(int64_t{1}, int64_t{30000}))
      ->capture_default_str();
  serve->add_option("--max-query-points", so.api.limits.max_points, "Most series x buckets of one chart (400 past it)")
      ->envname("SIGHTLINE_MAX_QUERY_POINTS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--max-log-facet-sample", so.api.limits.max_log_facet_sample,
                   "Most log records the attribute facets of logs/facets are counted over (400 past it)")
      ->envname("SIGHTLINE_MAX_LOG_FACET_SAMPLE")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--max-service-map-edges", so.api.limits.max_service_calls,
                   "Most edges of the service map, the busiest first (the rest is marked truncated)")
      ->envname("SIGHTLINE_MAX_SERVICE_MAP_EDGES")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--max-trace-spans", so.api.limits.max_trace_spans,
                   "Most spans (and log records) of one trace in an answer (the rest is marked truncated)")
      ->envname("SIGHTLINE_MAX_TRACE_SPANS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--max-query-metrics", so.api.limits.max_metrics,
                   "Most rows of the metric list (the rest is marked truncated)")
      ->envname("SIGHTLINE_MAX_QUERY_METRICS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve->add_option("--read-connections", so.read_connections, "Engine read connections (concurrent dashboard queries)")
      ->envname("SIGHTLINE_READ_CONNECTIONS")
      ->capture_default_str();
  serve
      ->add_option("--admin-password", so.admin_password,
                   "Password of the UI user 'admin' (set on every start that gives it, and a new one ends the "
                   "admin's sessions; else generated once)")
      ->envname("SIGHTLINE_ADMIN_PASSWORD");
  serve
      ->add_option("--ingest-token", so.ingest_token,
                   "Token of the 'default' project, set on first start (stored hashed; for automation)")
      ->envname("SIGHTLINE_INGEST_TOKEN");
  serve
      ->add_option("--auth-cache-ttl-ms", so.auth.token_cache_ttl_ms,
                   "How long a valid token is trusted without asking the state store: the most a revoked token "
                   "keeps working (0 = ask every time)")
      ->envname("SIGHTLINE_AUTH_CACHE_TTL_MS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  serve
      ->add_option("--login-max-failures", so.login.throttle.max_failures_per_address,
                   "Failed logins from one client address (IPv6: its /64) within --login-failure-window-s before "
                   "its logins get 429 for the rest of the window (0 = no bound)")
      ->envname("SIGHTLINE_LOGIN_MAX_FAILURES")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  serve->add_option("--login-failure-window-s", so.login.throttle.failure_window_s, "See --login-max-failures")
      ->envname("SIGHTLINE_LOGIN_FAILURE_WINDOW_S")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  serve
      ->add_option("--login-global-failures-per-s", so.login.throttle.global_failures_per_s,
                   "Failed logins per second from all addresses together (bursts of twice that); past it every "
                   "login gets 429 (0 = no bound)")
      ->envname("SIGHTLINE_LOGIN_GLOBAL_FAILURES_PER_S")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  serve
      ->add_option("--login-queue", so.login.max_queued,
                   "Logins waiting for the password-hashing thread; one more gets 429")
      ->envname("SIGHTLINE_LOGIN_QUEUE")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  // Retention and disk space (maintenance/): read as text, parsed below.
  std::string retention[kSignalCount] = {"forever", "forever", "forever"};
  std::string rollup_retention = "rows";
  std::string max_disk = "0", min_free_disk = "512MiB";
  for (int s = 0; s < kSignalCount; ++s) {
    const std::string signal = SignalName(Signal(s));
    std::string upper = signal;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    serve
        ->add_option("--retention-" + signal, retention[s],
                     "Keep " + signal +
                         " this long (7d, 12h, 30m) or forever; deleted in whole hours. A project's own "
                         "(`sightline project retention`) wins")
        ->envname("SIGHTLINE_RETENTION_" + upper)
        ->capture_default_str();
  }
  serve
      ->add_option("--rollup-retention", rollup_retention,
                   "Keep the rollups (the dashboards' per-minute and per-hour rows) this long (30d, 400d) when "
                   "that is longer than their rows' retention, or `rows`: they go with their rows")
      ->envname("SIGHTLINE_ROLLUP_RETENTION")
      ->capture_default_str();
  serve
      ->add_option("--max-disk-bytes", max_disk,
                   "Disk budget of the telemetry database (e.g. 50GiB; 0 = none): above it the oldest hours of "
                   "every signal are deleted first")
      ->envname("SIGHTLINE_MAX_DISK_BYTES")
      ->capture_default_str();
  serve
      ->add_option("--min-free-disk-bytes", min_free_disk,
                   "Free-space floor of the data directory's filesystem: below it ingest answers 503 and /readyz "
                   "is not ready; reads go on (0 = none)")
      ->envname("SIGHTLINE_MIN_FREE_DISK_BYTES")
      ->capture_default_str();
  serve
      ->add_option("--maintenance-interval-ms", so.maintenance.interval_ms,
                   "Time between retention and disk-budget passes")
      ->envname("SIGHTLINE_MAINTENANCE_INTERVAL_MS")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();

  ForwardRootOption(serve, log_level_option, "--log-level");
  AddServeConfigFile(&app, serve);
  bool print_config = false;
  serve
      ->add_flag("--print-config", print_config,
                 "Print the configuration this command line, the SIGHTLINE_* variables and --config amount to, as "
                 "a config file (every option; secrets left out), and exit")
      ->configurable(false);

  AddTokenCommands(&app);
  AddProjectCommands(&app);

  auto* sql = app.add_subcommand("sql", "Run one SQL statement on the telemetry engine (server stopped); prints JSON");
  std::string sql_data = "./data", sql_storage = "duckdb", sql_text;
  StoreOptions sql_store;
  AddStoreOptions(sql, &sql_data, &sql_storage, &sql_store);
  sql->add_option("statement", sql_text, "SQL")->required();

  auto* migrate = app.add_subcommand(
      "migrate", "Bring a stopped server's telemetry database to this version's schema (rewrites ids when needed)");
  std::string migrate_data = "./data", migrate_storage = "duckdb";
  StoreOptions migrate_store;
  AddStoreOptions(migrate, &migrate_data, &migrate_storage, &migrate_store);

  AddBenchCommands(&app);

  // Telemetry and credential hashes are nobody else's business: every file
  // and directory sightline makes is its owner's alone (0600 / 0700). Set
  // before parsing, as the token commands run while parsing; the benchmarks
  // write reports meant to be shared, and get the inherited mask back.
  const mode_t inherited_umask = umask(077);
  app.get_subcommand("bench")->preparse_callback([inherited_umask](std::size_t) { umask(inherited_umask); });
  CLI11_PARSE(app, argc, argv);
  spdlog::set_level(spdlog::level::from_str(log_level));

  if (serve->parsed() && print_config) {
    std::vector<std::string> secrets = {"admin-password", "ingest-token", "clickhouse-password"};
    // A PostgreSQL URL may carry a password; then it is left out whole.
    if (RedactDsn(so.state) != so.state) secrets.push_back("state");
    std::cout << ServeConfigText(app, *serve, secrets);
    return 0;
  }
  if (serve->parsed()) {
    for (int s = 0; s < kSignalCount; ++s) {
      Result<int64_t> seconds =
          retention[s] == "forever" ? Result<int64_t>(int64_t{0}) : ParseDurationSeconds(retention[s]);
      if (!seconds.ok()) {
        std::fprintf(stderr, "--retention-%s: %s\n", SignalName(Signal(s)), seconds.status().message().c_str());
        return 2;
      }
      so.maintenance.retention_seconds[s] = *seconds;
    }
    if (rollup_retention != "rows") {
      Result<int64_t> seconds = ParseDurationSeconds(rollup_retention);
      if (!seconds.ok() || *seconds <= 0) {
        std::fprintf(stderr, "--rollup-retention: %s\n",
                     seconds.ok() ? "must be longer than 0 (or `rows`)" : seconds.status().message().c_str());
        return 2;
      }
      so.maintenance.rollup_retention_seconds = *seconds;
      so.store.rollups_outlive_rows = true;
    }
    for (auto [flag, text, out] : {std::tuple{"--max-disk-bytes", &max_disk, &so.maintenance.max_disk_bytes},
                                   std::tuple{"--min-free-disk-bytes", &min_free_disk, &so.min_free_disk_bytes}}) {
      Result<uint64_t> bytes = ParseByteSize(*text);
      if (!bytes.ok()) {
        std::fprintf(stderr, "%s: %s\n", flag, bytes.status().message().c_str());
        return 2;
      }
      *out = *bytes;
    }
    Result<CorsPolicy> cors = CorsPolicy::Parse(cors_origins);
    if (!cors.ok()) {
      std::fprintf(stderr, "%s\n", cors.status().message().c_str());
      return 2;
    }
    so.http.cors = std::move(*cors);
    if (so.http.cors.enabled()) {
      std::string list;
      for (const std::string& origin : so.http.cors.origins()) list += (list.empty() ? "" : ", ") + origin;
      spdlog::info("CORS on the OTLP/HTTP ingest paths for {}", list);
    }
    return Serve(std::move(so));
  }
  if (sql->parsed()) return Sql(sql_data, sql_storage, sql_store, sql_text);
  if (migrate->parsed()) return Migrate(migrate_data, migrate_storage, migrate_store);
  return 0;
}
