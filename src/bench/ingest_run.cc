#include "bench/ingest_run.h"

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <thread>

#include "bench/bench_common.h"
#include "bench/http_load.h"
#include "bench/load_generator.h"
#include "bench/payload_pool.h"
#include "bench/raw_append.h"
#include "bench/server_process.h"
#include "common/json_writer.h"

namespace sightline::bench {

namespace {

// ---- one run -------------------------------------------------------------------

struct SignalRun {
  bool present = false;
  uint64_t requests = 0, ok_requests = 0, items_sent = 0, items_accepted = 0, wire_bytes = 0;
  std::map<int, uint64_t> status_counts;
  double retry_wait_s = 0;  // connections' time spent waiting out 429 / 503
  double items_per_s = 0, requests_per_s = 0;
  LatencySummary latency;
  // From the server's deep health (when available).
  bool have_server_rows = false;
  uint64_t server_rows = 0, commits = 0;
  // Raw engine (when --raw).
  bool have_raw = false;
  RawSignalResult raw;
  double raw_items_per_s = 0;
};

struct Run {
  int number = 0;
  double load_avg_before = 0;
  double warmup_requests_per_s = 0;
  double elapsed_s = 0;
  std::array<SignalRun, kSignalCount> signals;
  uint64_t total_accepted = 0;
  double total_items_per_s = 0;
  double client_cpu_s = 0;
  uint64_t built_during_run = 0;
  double build_cpu_during_run_s = 0;
  // Server.
  bool spawned = false;
  double server_cpu_s = -1;
  uint64_t server_rss_peak = 0;  // max of deep-health rss_bytes samples
  uint64_t server_vm_hwm = 0;    // VmHWM of a spawned server
  uint64_t database_bytes = 0, wal_bytes = 0, gate_rejections = 0;
  double shutdown_s = 0;
  std::string server_error;
  double raw_close_s = 0;
  std::string raw_error;
};

// ---- statistics ----------------------------------------------------------------

//! "200x40 503x3 (waited 6.0 s)": each status's count, and the connections'
//! time spent waiting after refusals.
std::string StatusSummary(const std::map<int, uint64_t>& counts, double retry_wait_s) {
  std::string out;
  for (auto [code, n] : counts) {
    if (!out.empty()) out += " ";
    out += (code == 0 ? std::string("err") : std::to_string(code)) + "x" + std::to_string(n);
  }
  if (retry_wait_s > 0) {
    char wait[48];
    std::snprintf(wait, sizeof(wait), " (waited %.1f s)", retry_wait_s);
    out += wait;
  }
  return out.empty() ? "-" : out;
}

// ---- output --------------------------------------------------------------------

void PrintRunTable(const std::vector<Run>& runs, const std::vector<Signal>& signals) {
  std::printf("\n%-4s %-8s %8s %8s %10s %9s %8s %8s %8s %11s %11s %8s %9s %8s  %s\n", "run", "signal", "requests",
              "2xx", "items/s", "req/s", "p50 ms", "p95 ms", "p99 ms", "rows/commit", "raw items/s", "ours/raw",
              "srv cores", "rss MiB", "status");
  for (const Run& r : runs) {
    for (Signal s : signals) {
      const SignalRun& x = r.signals[static_cast<int>(s)];
      char raw[32] = "-", ratio[16] = "-", cpu[16] = "-", rss[16] = "-", per_commit[32] = "-";
      if (x.have_server_rows && x.commits > 0) {
        std::snprintf(per_commit, sizeof(per_commit), "%.0f",
                      static_cast<double>(x.server_rows) / static_cast<double>(x.commits));
      }
      if (x.have_raw && x.raw_items_per_s > 0) {
        std::snprintf(raw, sizeof(raw), "%s", Human(x.raw_items_per_s).c_str());
        std::snprintf(ratio, sizeof(ratio), "%.2f", x.items_per_s / x.raw_items_per_s);
      }
      if (r.server_cpu_s >= 0 && r.elapsed_s > 0) std::snprintf(cpu, sizeof(cpu), "%.2f", r.server_cpu_s / r.elapsed_s);
      uint64_t rss_b = std::max(r.server_rss_peak, r.server_vm_hwm);
      if (rss_b > 0) std::snprintf(rss, sizeof(rss), "%.0f", static_cast<double>(rss_b) / (1 << 20));
      std::printf("%-4d %-8s %8llu %8llu %10s %9.1f %8.1f %8.1f %8.1f %11s %11s %8s %9s %8s  %s\n", r.number,
                  SignalName(s), static_cast<unsigned long long>(x.requests),
                  static_cast<unsigned long long>(x.ok_requests), Human(x.items_per_s).c_str(), x.requests_per_s,
                  x.latency.p50, x.latency.p95, x.latency.p99, per_commit, raw, ratio, cpu, rss,
                  StatusSummary(x.status_counts, x.retry_wait_s).c_str());
    }
  }
  if (runs.size() > 1) {
    std::printf("\nmedian of %zu runs [min .. max]\n", runs.size());
    for (Signal s : signals) {
      int i = static_cast<int>(s);
      std::vector<double> rate, raw, ratio, p99;
      for (const Run& r : runs) {
        rate.push_back(r.signals[i].items_per_s);
        p99.push_back(r.signals[i].latency.p99);
        if (r.signals[i].have_raw && r.signals[i].raw_items_per_s > 0) {
          raw.push_back(r.signals[i].raw_items_per_s);
          ratio.push_back(r.signals[i].items_per_s / r.signals[i].raw_items_per_s);
        }
      }
      Spread a = SpreadOf(rate), b = SpreadOf(raw), c = SpreadOf(ratio), d = SpreadOf(p99);
      std::printf("  %-8s items/s %s [%s .. %s]   p99 %.1f ms [%.1f .. %.1f]", SignalName(s), Human(a.median).c_str(),
                  Human(a.min).c_str(), Human(a.max).c_str(), d.median, d.min, d.max);
      if (!raw.empty()) {
        std::printf("   raw %s [%s .. %s]   ours/raw %.2f [%.2f .. %.2f]", Human(b.median).c_str(),
                    Human(b.min).c_str(), Human(b.max).c_str(), c.median, c.min, c.max);
      }
      std::printf("\n");
    }
  }
  for (const Run& r : runs) {
    if (!r.server_error.empty()) std::printf("run %d server: %s\n", r.number, r.server_error.c_str());
    if (!r.raw_error.empty()) std::printf("run %d raw engine: %s\n", r.number, r.raw_error.c_str());
    for (Signal s : signals) {
      const SignalRun& x = r.signals[static_cast<int>(s)];
      if (x.have_server_rows && x.server_rows != x.items_accepted) {
        std::printf("run %d %s: WARNING server counted %llu new rows but acknowledged %llu items\n", r.number,
                    SignalName(s), static_cast<unsigned long long>(x.server_rows),
                    static_cast<unsigned long long>(x.items_accepted));
      }
    }
    if (r.built_during_run > 0) {
      std::printf(
          "run %d: the pool ran out; %llu payloads were built during the run (%.2f s CPU) — raise --expect-rate\n",
          r.number, static_cast<unsigned long long>(r.built_during_run), r.build_cpu_during_run_s);
    }
  }
}

void WriteSpread(JsonWriter* w, const char* key, const std::vector<double>& v) {
  Spread s = SpreadOf(v);
  w->Key(key);
  w->BeginObject();
  w->Key("median");
  w->Double(s.median);
  w->Key("min");
  w->Double(s.min);
  w->Key("max");
  w->Double(s.max);
  w->EndObject();
}

std::string ResultJson(const IngestBenchOptions& o, const Machine& m, const std::string& started_at,
                       const PrebuildStats& pre, const std::vector<Run>& runs, const std::vector<Signal>& signals) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("benchmark");
  w.String("ingest");
  w.Key("version");
  w.Int(1);
  w.Key("started_at");
  w.String(started_at);
  w.Key("config");
  w.BeginObject();
  w.Key("signal");
  w.String(o.signal);
  w.Key("batch");
  w.Uint(o.batch);
  w.Key("requests");
  w.Uint(o.requests);
  w.Key("duration_s");
  w.Double(o.requests > 0 ? 0 : o.duration_s);
  w.Key("connections");
  w.Int(o.connections);
  w.Key("rate");
  w.Double(o.rate);
  w.Key("format");
  w.String(o.format);
  w.Key("protocol");
  w.String(o.protocol);
  w.Key("gzip_level");
  w.Int(o.gzip_level);
  w.Key("seed");
  w.Uint(o.seed);
  w.Key("engine");
  w.String(EngineLabel(o.spawn, o.server_args));
  w.Key("spawned");
  w.Bool(!o.spawn.empty());
  w.Key("server_args");
  w.BeginArray();
  for (const auto& a : o.server_args) w.String(a);
  w.EndArray();
  w.Key("raw");
  w.Bool(o.raw);
  w.Key("repeat");
  w.Int(o.repeat);
  w.EndObject();

  WriteMachineJson(&w, m);

  w.Key("generator");
  w.BeginObject();
  w.Key("prebuilt_payloads");
  w.Uint(pre.payloads);
  w.Key("prebuilt_items");
  w.Uint(pre.items);
  w.Key("raw_bytes");
  w.Uint(pre.raw_bytes);
  w.Key("wire_bytes");
  w.Uint(pre.wire_bytes);
  w.Key("wall_s");
  w.Double(pre.wall_seconds);
  w.Key("cpu_s");
  w.Double(pre.cpu_seconds);
  w.Key("cpu_ns_per_item");
  w.Double(pre.items > 0 ? pre.cpu_seconds * 1e9 / static_cast<double>(pre.items) : 0);
  w.EndObject();

  w.Key("runs");
  w.BeginArray();
  for (const Run& r : runs) {
    w.BeginObject();
    w.Key("run");
    w.Int(r.number);
    w.Key("load_avg_1m_before");
    w.Double(r.load_avg_before);
    w.Key("warmup_requests_per_s");
    w.Double(r.warmup_requests_per_s);
    w.Key("elapsed_s");
    w.Double(r.elapsed_s);
    w.Key("items_accepted");
    w.Uint(r.total_accepted);
    w.Key("items_per_s");
    w.Double(r.total_items_per_s);
    w.Key("client_cpu_s");
    w.Double(r.client_cpu_s);
    w.Key("generator_built_during_run");
    w.Uint(r.built_during_run);
    w.Key("generator_cpu_during_run_s");
    w.Double(r.build_cpu_during_run_s);
    w.Key("server");
    w.BeginObject();
    w.Key("cpu_s");
    w.Double(r.server_cpu_s);
    w.Key("cpu_cores_used");
    w.Double(r.server_cpu_s >= 0 && r.elapsed_s > 0 ? r.server_cpu_s / r.elapsed_s : -1);
    w.Key("rss_peak_bytes");
    w.Uint(r.server_rss_peak);
    w.Key("vm_hwm_bytes");
    w.Uint(r.server_vm_hwm);
    w.Key("database_bytes");
    w.Uint(r.database_bytes);
    w.Key("wal_bytes");
    w.Uint(r.wal_bytes);
    w.Key("gate_rejections");
    w.Uint(r.gate_rejections);
    w.Key("shutdown_s");
    w.Double(r.shutdown_s);
    w.Key("error");
    w.String(r.server_error);
    w.EndObject();
    w.Key("signals");
    w.BeginObject();
    for (Signal s : signals) {
      const SignalRun& x = r.signals[static_cast<int>(s)];
      w.Key(SignalName(s));
      w.BeginObject();
      w.Key("requests");
      w.Uint(x.requests);
      w.Key("ok_requests");
      w.Uint(x.ok_requests);
      w.Key("items_sent");
      w.Uint(x.items_sent);
      w.Key("items_accepted");
      w.Uint(x.items_accepted);
      w.Key("wire_bytes");
      w.Uint(x.wire_bytes);
      w.Key("items_per_s");
      w.Double(x.items_per_s);
      w.Key("requests_per_s");
      w.Double(x.requests_per_s);
      WriteLatencyJson(&w, x.latency);
      w.Key("status_counts");
      w.BeginObject();
      for (auto [code, n] : x.status_counts) {
        w.Key(code == 0 ? "connection_error" : std::to_string(code));
        w.Uint(n);
      }
      w.EndObject();
      w.Key("retry_wait_s");
      w.Double(x.retry_wait_s);
      if (x.have_server_rows) {
        w.Key("server_rows_added");
        w.Uint(x.server_rows);
        w.Key("server_commits");
        w.Uint(x.commits);
        w.Key("server_rows_per_commit");
        w.Double(x.commits > 0 ? static_cast<double>(x.server_rows) / static_cast<double>(x.commits) : 0);
      }
      if (x.have_raw) {
        w.Key("raw");
        w.BeginObject();
        w.Key("rows");
        w.Uint(x.raw.rows);
        w.Key("batches_per_commit");
        w.Double(x.raw.groups > 0 ? static_cast<double>(x.raw.batches) / static_cast<double>(x.raw.groups) : 0);
        w.Key("commits");
        w.Uint(x.raw.groups);
        w.Key("write_s");
        w.Double(x.raw.write_seconds);
        w.Key("prepare_s");
        w.Double(x.raw.prepare_seconds);
        w.Key("items_per_s");
        w.Double(x.raw_items_per_s);
        w.Key("ours_over_raw");
        w.Double(x.raw_items_per_s > 0 ? x.items_per_s / x.raw_items_per_s : 0);
        w.EndObject();
      }
      w.EndObject();
    }
    w.EndObject();
    w.Key("raw_close_s");
    w.Double(r.raw_close_s);
    w.Key("raw_error");
    w.String(r.raw_error);
    w.EndObject();
  }
  w.EndArray();

  w.Key("summary");
  w.BeginObject();
  for (Signal s : signals) {
    int i = static_cast<int>(s);
    std::vector<double> rate, reqs, p50, p95, p99, raw, ratio, cpu, rss;
    for (const Run& r : runs) {
      const SignalRun& x = r.signals[i];
      rate.push_back(x.items_per_s);
      reqs.push_back(x.requests_per_s);
      p50.push_back(x.latency.p50);
      p95.push_back(x.latency.p95);
      p99.push_back(x.latency.p99);
      if (x.have_raw && x.raw_items_per_s > 0) {
        raw.push_back(x.raw_items_per_s);
        ratio.push_back(x.items_per_s / x.raw_items_per_s);
      }
      if (r.server_cpu_s >= 0 && r.elapsed_s > 0) cpu.push_back(r.server_cpu_s / r.elapsed_s);
      rss.push_back(static_cast<double>(std::max(r.server_rss_peak, r.server_vm_hwm)));
    }
    w.Key(SignalName(s));
    w.BeginObject();
    WriteSpread(&w, "items_per_s", rate);
    WriteSpread(&w, "requests_per_s", reqs);
    WriteSpread(&w, "p50_ms", p50);
    WriteSpread(&w, "p95_ms", p95);
    WriteSpread(&w, "p99_ms", p99);
    if (!raw.empty()) {
      WriteSpread(&w, "raw_items_per_s", raw);
      WriteSpread(&w, "ours_over_raw", ratio);
    }
    if (!cpu.empty()) WriteSpread(&w, "server_cpu_cores", cpu);
    WriteSpread(&w, "server_rss_bytes", rss);
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  out.push_back('\n');
  return out;
}

// ---- sizing --------------------------------------------------------------------

//! Payload numbers of warm-ups start here, far from the timed runs' (which
//! stay below 2^39), so no warm-up item shares an id with a timed one.
constexpr uint64_t kWarmupFirstPayload = 1ull << 39;

//! Items/s a run might reach at most, per signal, for sizing the pool in
//! duration mode: comfortably above what a 2-core box ingests, so the pool
//! rarely runs out (and if it does, the run still stays correct).
double DefaultExpectRate(Signal s, size_t batch) {
  double per_signal = s == Signal::kMetrics ? 1000000 : 400000;
  // Small batches are bounded by requests/s, not rows/s.
  return std::min(per_signal, 3000.0 * static_cast<double>(batch));
}

//! The engine settings among the spawned server's extra arguments
//! (--duckdb-checkpoint-threshold=1GB or --duckdb-threads 1), so the raw
//! engine runs with the same ones.
RawEngineOptions EngineSettingsFrom(const std::vector<std::string>& args) {
  RawEngineOptions o;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i], value;
    size_t eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (i + 1 < args.size()) {
      value = args[i + 1];
    }
    if (name == "--duckdb-memory-limit") o.duckdb_memory_limit = value;
    else if (name == "--duckdb-checkpoint-threshold") o.duckdb_checkpoint_threshold = value;
    else if (name == "--duckdb-threads") o.duckdb_threads = std::atoi(value.c_str());
  }
  return o;
}

}  // namespace

int RunIngestBench(const IngestBenchOptions& o) {
  // ---- validate -----------------------------------------------------------------
  std::vector<Signal> signals;
  if (o.signal == "spans" || o.signal == "traces") signals = {Signal::kSpans};
  else if (o.signal == "logs") signals = {Signal::kLogs};
  else if (o.signal == "metrics") signals = {Signal::kMetrics};
  else if (o.signal == "all") signals = {Signal::kSpans, Signal::kLogs, Signal::kMetrics};
  else {
    std::fprintf(stderr, "bench ingest: --signal must be spans, logs, metrics or all\n");
    return 1;
  }
  if (o.requests == 0 && !(o.duration_s > 0)) {
    std::fprintf(stderr, "bench ingest: give --requests N or --duration S (the run must be bounded)\n");
    return 1;
  }
  if (o.batch == 0 || o.batch > kMaxGeneratorBatch) {
    std::fprintf(stderr, "bench ingest: --batch must be 1..%zu\n", kMaxGeneratorBatch);
    return 1;
  }
  const bool grpc = o.protocol == "grpc";
  if (grpc && o.format != "proto") {
    std::fprintf(stderr, "bench ingest: --protocol grpc sends protobuf only (--format proto)\n");
    return 1;
  }
  std::optional<HttpEndpoint> endpoint, api;
  if (o.spawn.empty()) {
    auto ep = ParseLoopbackUrl(grpc ? o.grpc_endpoint : o.endpoint);
    if (!ep.ok()) {
      std::fprintf(stderr, "bench ingest: %s\n", ep.status().message().c_str());
      return 1;
    }
    endpoint = *ep;
    if (!o.api.empty()) {
      auto a = ParseLoopbackUrl(o.api);
      if (!a.ok()) {
        std::fprintf(stderr, "bench ingest: --api: %s\n", a.status().message().c_str());
        return 1;
      }
      api = *a;
    }
  }
  std::string token = o.token;
  if (token.empty() && o.spawn.empty()) {
    if (const char* env = std::getenv("SIGHTLINE_INGEST_TOKEN")) token = env;
  }
  if (!o.spawn.empty() && token.empty()) token = RandomToken();
  std::string work_parent = o.work_dir;
  if (work_parent.empty()) work_parent = DefaultWorkParent();

  // ---- the generator ---------------------------------------------------------
  GeneratorOptions g;
  g.seed = o.seed;
  g.batch = o.batch;
  g.format = o.format == "json" ? WireFormat::kJson : WireFormat::kProtobuf;
  g.gzip_level = grpc ? 0 : o.gzip_level;  // gRPC compresses the messages itself
  LoadGenerator generator(g);
  Machine machine = DescribeMachine();
  const std::string started_at = UtcNowIso8601();
  const int build_threads = static_cast<int>(std::max(1u, machine.cores));
  std::printf("sightline bench ingest: %s, batch %zu, %s %s%s, %d connection%s, %s, ", o.signal.c_str(), o.batch,
              grpc ? "OTLP/gRPC" : "OTLP/HTTP", o.format == "json" ? "json" : "protobuf",
              o.gzip_level > 0 ? "+gzip" : "", o.connections, o.connections == 1 ? "" : "s",
              o.rate > 0 ? ("open loop " + std::to_string(o.rate) + " req/s").c_str() : "closed loop");
  if (o.requests > 0) std::printf("%llu requests", static_cast<unsigned long long>(o.requests));
  else std::printf("%.0f s", o.duration_s);
  std::printf(" x %d run%s, warm-up %.0f s\n", o.repeat, o.repeat == 1 ? "" : "s", o.warmup_s);
  std::printf("machine: %u cores, %s, %.1f GiB RAM; server: %s\n", machine.cores, machine.cpu_model.c_str(),
              static_cast<double>(machine.mem_bytes) / (1ull << 30),
              o.spawn.empty() ? o.endpoint.c_str() : ("spawned " + o.spawn).c_str());
  std::fflush(stdout);

  // Requests the timed part of a run will need. In duration mode, from the
  // warm-up's rate (x1.5) or, without a warm-up, a generous default.
  auto requests_wanted = [&](double warm_requests_per_s) -> uint64_t {
    if (o.requests > 0) return o.requests;
    const uint64_t slack = static_cast<uint64_t>(o.connections) * signals.size() + 8;
    if (o.rate > 0) return static_cast<uint64_t>(std::ceil(o.duration_s * o.rate)) + slack;
    if (warm_requests_per_s > 0 && o.expect_rate <= 0) {
      return static_cast<uint64_t>(std::ceil(o.duration_s * warm_requests_per_s * 1.5)) + slack;
    }
    double items = 0;
    for (Signal s : signals) items += o.expect_rate > 0 ? o.expect_rate : DefaultExpectRate(s, o.batch);
    return static_cast<uint64_t>(std::ceil(o.duration_s * items / static_cast<double>(o.batch))) + slack;
  };
  PrebuildStats pre;  // everything prebuilt, over all runs
  auto prebuild = [&](PayloadPool* pool, uint64_t count) {
    PrebuildStats p = pool->Prebuild(count, build_threads, o.pool_mb << 20);
    if (p.payloads == 0) return;
    pre.payloads += p.payloads;
    pre.items += p.items;
    pre.raw_bytes += p.raw_bytes;
    pre.wire_bytes += p.wire_bytes;
    pre.cpu_seconds += p.cpu_seconds;
    pre.wall_seconds += p.wall_seconds;
    std::printf(
        "payloads: %llu built (pool now %llu), %llu items, %.1f MB raw -> %.1f MB on the wire; generator "
        "%.2f s CPU (%.0f ns/item), %.2f s wall\n",
        static_cast<unsigned long long>(p.payloads), static_cast<unsigned long long>(pool->prebuilt()),
        static_cast<unsigned long long>(p.items), static_cast<double>(p.raw_bytes) / 1e6,
        static_cast<double>(p.wire_bytes) / 1e6, p.cpu_seconds,
        p.items > 0 ? p.cpu_seconds * 1e9 / static_cast<double>(p.items) : 0.0, p.wall_seconds);
    std::fflush(stdout);
  };
  // A spawned server starts empty each run, so runs can share one pool; an
  // external server keeps its rows, so each run gets payloads of its own.
  std::unique_ptr<PayloadPool> pool;
  if (o.requests > 0) {
    pool = std::make_unique<PayloadPool>(&generator, signals);
    prebuild(pool.get(), o.requests);
  }

  // ---- runs ---------------------------------------------------------------------
  std::vector<Run> runs;
  bool any_accepted = false;
  for (int rep = 1; rep <= std::max(1, o.repeat); ++rep) {
    Run run;
    run.number = rep;
    run.load_avg_before = LoadAverage1m();
    std::optional<std::string> work;
    if (!o.spawn.empty() || o.raw) {
      work = MakeTempDir(work_parent);
      if (!work) {
        std::fprintf(stderr, "bench ingest: cannot create a directory under %s\n", work_parent.c_str());
        return 1;
      }
    }
    std::unique_ptr<ServerProcess> server;
    HttpEndpoint target = endpoint ? *endpoint : HttpEndpoint{};
    std::optional<HttpEndpoint> health = api;
    if (!o.spawn.empty()) {
      SpawnOptions so;
      so.engine = o.spawn;
      so.work_dir = *work;
      so.token = token;
      so.extra_args = o.server_args;
      so.clickhouse_url = o.clickhouse_url;
      so.keep_data = o.keep_data;
      so.grpc = grpc;
      auto started = ServerProcess::Start(so);
      if (!started.ok()) {
        std::fprintf(stderr, "bench ingest: %s\n", started.status().message().c_str());
        return 1;
      }
      server = std::move(started.value());
      target = grpc ? server->grpc() : server->otlp();
      health = server->api();
      run.spawned = true;
    }

    // Warm-up: payloads built on the fly from an id space of its own; its
    // rate sizes the pool of the timed part, which is built while the
    // server idles.
    double warm_rate = 0;
    if (o.warmup_s > 0) {
      PayloadPool warm(&generator, signals, kWarmupFirstPayload + (static_cast<uint64_t>(rep - 1) << 32));
      HttpLoadOptions wo;
      wo.endpoint = target;
      wo.token = token;
      wo.connections = o.connections;
      wo.duration_s = o.warmup_s;
      wo.rate = o.rate;
      wo.content_type = ContentTypeFor(g.format);
      wo.content_encoding = ContentEncodingFor(generator.options());
      wo.request_timeout_s = o.request_timeout_s;
      wo.grpc = grpc;
      wo.honor_retry_after = !o.ignore_retry_after;
      wo.grpc_gzip = o.gzip_level > 0;
      auto warmed = RunHttpLoad(wo, warm);
      if (warmed.ok() && warmed->elapsed_s > 0) {
        uint64_t ok = 0;
        for (const auto& x : warmed->signals) ok += x.ok_requests;
        warm_rate = static_cast<double>(ok) / warmed->elapsed_s;
        run.warmup_requests_per_s = warm_rate;
      }
    }
    if (!pool || (!run.spawned && rep > 1)) {
      uint64_t first = run.spawned ? 0 : static_cast<uint64_t>(rep - 1) << 32;
      pool = std::make_unique<PayloadPool>(&generator, signals, first);
    }
    prebuild(pool.get(), requests_wanted(warm_rate));

    std::optional<DeepHealth> before;
    if (health) {
      auto h = FetchDeepHealth(*health);
      if (h.ok()) before = *h;
    }
    std::unique_ptr<RssPeakSampler> sampler;
    if (health) {
      sampler = std::make_unique<RssPeakSampler>(
          [api = *health]() -> uint64_t {
            auto h = FetchDeepHealth(api);
            return h.ok() ? h->rss_bytes : 0;
          },
          std::chrono::milliseconds(500));
    }
    double server_cpu0 = server ? ProcessCpuSecondsOf(server->pid()) : -1;

    HttpLoadOptions lo;
    lo.endpoint = target;
    lo.token = token;
    lo.connections = o.connections;
    lo.requests = o.requests;
    lo.duration_s = o.duration_s;
    lo.rate = o.rate;
    lo.content_type = ContentTypeFor(g.format);
    lo.content_encoding = ContentEncodingFor(generator.options());
    lo.request_timeout_s = o.request_timeout_s;
    lo.grpc = grpc;
    lo.grpc_gzip = o.gzip_level > 0;
    lo.honor_retry_after = !o.ignore_retry_after;
    auto loaded = RunHttpLoad(lo, *pool);

    double server_cpu1 = server ? ProcessCpuSecondsOf(server->pid()) : -1;
    if (sampler) run.server_rss_peak = sampler->Stop();
    std::optional<DeepHealth> after;
    if (health) {
      auto h = FetchDeepHealth(*health);
      if (h.ok()) after = *h;
    }
    if (server) {
      run.server_vm_hwm = PeakRssBytesOf(server->pid());
      if (server_cpu0 >= 0 && server_cpu1 >= 0) run.server_cpu_s = server_cpu1 - server_cpu0;
      Status stopped = server->Stop(120, &run.shutdown_s);
      if (!stopped.ok()) run.server_error = stopped.message();
      // Kept (stopped) while its ClickHouse serves the raw run below.
    }
    if (!loaded.ok()) {
      std::fprintf(stderr, "bench ingest: %s\n", loaded.status().message().c_str());
      if (work && !o.keep_data) std::filesystem::remove_all(*work);
      return 1;
    }
    HttpLoadResult& lr = loaded.value();
    run.elapsed_s = lr.elapsed_s;
    run.client_cpu_s = lr.client_cpu_s;
    run.built_during_run = lr.payloads_built_during_run;
    run.build_cpu_during_run_s = lr.build_cpu_during_run_s;
    if (after) {
      run.database_bytes = after->database_bytes;
      run.wal_bytes = after->wal_bytes;
      run.gate_rejections = after->gate_rejections - (before ? before->gate_rejections : 0);
    }
    uint64_t sent_requests = 0;
    for (Signal s : signals) {
      int i = static_cast<int>(s);
      SignalLoadResult& in = lr.signals[i];
      SignalRun& x = run.signals[i];
      x.present = true;
      x.requests = in.requests;
      x.ok_requests = in.ok_requests;
      x.items_sent = in.items_sent;
      x.items_accepted = in.items_accepted;
      x.wire_bytes = in.wire_bytes_sent;
      x.status_counts = in.status_counts;
      x.retry_wait_s = in.retry_wait_s;
      x.items_per_s = lr.elapsed_s > 0 ? static_cast<double>(in.items_accepted) / lr.elapsed_s : 0;
      x.requests_per_s = lr.elapsed_s > 0 ? static_cast<double>(in.ok_requests) / lr.elapsed_s : 0;
      x.latency = SummarizeLatency(&in.latencies_ms);
      if (before && after) {
        x.have_server_rows = true;
        x.server_rows = after->rows[i] - before->rows[i];
        x.commits = after->commits[i] - before->commits[i];
      }
      run.total_accepted += in.items_accepted;
      sent_requests += in.requests;
      any_accepted = any_accepted || in.items_accepted > 0;
    }
    run.total_items_per_s = lr.elapsed_s > 0 ? static_cast<double>(run.total_accepted) / lr.elapsed_s : 0;

    // ---- the raw engine on the same rows ---------------------------------------
    if (o.raw) {
      RawAppendOptions ro;
      ro.engine = o.spawn.empty() ? "duckdb" : o.spawn;
      ro.engine_options = EngineSettingsFrom(o.server_args);
      ro.engine_options.data_dir = *work + "/raw";
      if (server && server->clickhouse() != nullptr) {
        ro.engine_options.clickhouse_url = server->clickhouse()->url();
        ro.engine_options.clickhouse_database = server->clickhouse()->database() + "_raw";
      }
      for (Signal s : signals) {
        const SignalRun& x = run.signals[static_cast<int>(s)];
        // Commit exactly as often as the server did for these rows.
        if (x.have_server_rows) ro.commits[static_cast<int>(s)] = x.commits;
      }
      auto raw = RunRawAppend(ro, *pool, sent_requests);
      if (!raw.ok()) {
        run.raw_error = raw.status().message();
      } else {
        run.raw_close_s = raw->close_seconds;
        for (Signal s : signals) {
          int i = static_cast<int>(s);
          SignalRun& x = run.signals[i];
          x.have_raw = true;
          x.raw = raw->signals[i];
          x.raw_items_per_s = x.raw.write_seconds > 0 ? static_cast<double>(x.raw.rows) / x.raw.write_seconds : 0;
        }
      }
    }
    server.reset();  // its ClickHouse stops before the data directory goes
    if (work && !o.keep_data) std::filesystem::remove_all(*work);
    if (work && o.keep_data) std::printf("run %d data kept in %s\n", rep, work->c_str());
    runs.push_back(std::move(run));
    const Run& r = runs.back();
    std::printf("run %d/%d done: %.1f s, %s items/s accepted\n", rep, o.repeat, r.elapsed_s,
                Human(r.total_items_per_s).c_str());
    std::fflush(stdout);
  }

  PrintRunTable(runs, signals);
  if (!runs.empty()) {
    double client = 0, gen = 0;
    for (const Run& r : runs) {
      client += r.client_cpu_s;
      gen += r.build_cpu_during_run_s;
    }
    std::printf(
        "\nclient CPU during the timed runs: %.2f s (of which payload building %.2f s); payload building "
        "before timing: %.2f s CPU\n",
        client, gen, pre.cpu_seconds);
  }
  if (!o.json_out.empty()) {
    std::ofstream f(o.json_out);
    f << ResultJson(o, machine, started_at, pre, runs, signals);
    if (!f) {
      std::fprintf(stderr, "bench ingest: cannot write %s\n", o.json_out.c_str());
      return 1;
    }
    std::printf("results written to %s\n", o.json_out.c_str());
  }
  return any_accepted ? 0 : 2;
}

}  // namespace sightline::bench
