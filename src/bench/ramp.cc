#include "bench/ramp.h"

#include <signal.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "bench/bench_common.h"
#include "bench/http_load.h"
#include "bench/load_generator.h"
#include "bench/payload_pool.h"
#include "bench/ramp_logic.h"
#include "bench/server_process.h"
#include "common/json_writer.h"

namespace sightline::bench {

namespace {

using Clock = std::chrono::steady_clock;

// ---- results -------------------------------------------------------------------

struct StepResult {
  size_t batch = 0;
  double target_rps = 0;
  int connections = 0;
  uint64_t requests = 0, ok_requests = 0, items_accepted = 0;
  double elapsed_s = 0;
  double achieved_rps = 0, accepted_items_per_s = 0;
  std::map<int, uint64_t> status_counts;  // 0 = no response
  LatencySummary latency;
  uint64_t server_rss_bytes = 0;  // peak sampled during the step; 0 = unknown
  double server_cpu_cores = -1;   // -1 = unknown (external server)
  StepVerdict verdict;
};

struct PhaseResult {
  std::string name;
  std::vector<StepResult> steps;
  int best = -1;
};

struct SignalResult {
  Signal signal = Signal::kSpans;
  std::string engine;
  std::vector<PhaseResult> phases;
  double max_items_per_s = 0;
  double fleet_max_items_per_s = 0;
  std::string server_error;
};

// ---- where the load goes -------------------------------------------------------

//! The server of one signal's ramp: spawned (pid known) or external.
struct Target {
  HttpEndpoint otlp;
  std::optional<HttpEndpoint> api;
  pid_t pid = -1;
  std::string token;
};

std::function<uint64_t()> RssProbeFor(const Target& t) {
  if (t.pid > 0) return [pid = t.pid] { return CurrentRssBytesOf(pid); };
  if (t.api) {
    return [api = *t.api]() -> uint64_t {
      auto h = FetchDeepHealth(api);
      return h.ok() ? h->rss_bytes : 0;
    };
  }
  return [] { return uint64_t{0}; };
}

// ---- one step ------------------------------------------------------------------

//! The load of one step.
struct StepLoad {
  size_t batch = 0;
  double rate = 0;
  int connections = 0;
};

class RampRunner {
 public:
  RampRunner(const RampBenchOptions& o, int build_threads) : o_(o), build_threads_(build_threads) {}

  //! Runs the phases of one signal against one server.
  SignalResult RunSignal(Signal signal, const Target& target);

 private:
  GeneratorOptions GeneratorFor(size_t batch) const {
    GeneratorOptions g;
    g.seed = o_.seed;
    g.batch = batch;
    g.format = o_.format == "json" ? WireFormat::kJson : WireFormat::kProtobuf;
    g.gzip_level = o_.gzip_level;
    return g;
  }
  //! Open-loop load for duration_s from its own block of payload numbers
  //! (so no two steps against one server share an id). Prebuilt, untimed.
  Result<HttpLoadResult> Load(Signal signal, const StepLoad& load, double duration_s);
  StepResult RunStep(Signal signal, const StepLoad& load);
  PhaseResult RunPhase(Signal signal, const std::string& name, std::vector<double> ladder, int bisect_steps,
                       const std::function<StepLoad(double)>& load_of);

  const RampBenchOptions& o_;
  int build_threads_;
  Target target_;
  uint64_t next_block_ = 0;
};

Result<HttpLoadResult> RampRunner::Load(Signal signal, const StepLoad& load, double duration_s) {
  LoadGenerator generator(GeneratorFor(load.batch));
  PayloadPool pool(&generator, {signal}, next_block_++ << 32);
  const uint64_t due = static_cast<uint64_t>(std::ceil(duration_s * load.rate));
  pool.Prebuild(due + static_cast<uint64_t>(load.connections) + 8, build_threads_, o_.pool_mb << 20);
  HttpLoadOptions lo;
  lo.endpoint = target_.otlp;
  lo.token = target_.token;
  lo.connections = load.connections;
  lo.duration_s = duration_s;
  lo.rate = load.rate;
  lo.request_timeout_s = o_.request_timeout_s;
  lo.content_type = ContentTypeFor(generator.options().format);
  lo.content_encoding = ContentEncodingFor(generator.options());
  return RunHttpLoad(lo, pool);
}

StepResult RampRunner::RunStep(Signal signal, const StepLoad& load) {
  StepResult r;
  r.batch = load.batch;
  r.target_rps = load.rate;
  r.connections = load.connections;
  RssPeakSampler sampler(RssProbeFor(target_));
  const double cpu0 = target_.pid > 0 ? ProcessCpuSecondsOf(target_.pid) : -1;
  auto loaded = Load(signal, load, o_.step_duration_s);
  const double cpu1 = target_.pid > 0 ? ProcessCpuSecondsOf(target_.pid) : -1;
  r.server_rss_bytes = sampler.Stop();
  if (!loaded.ok()) {
    r.verdict = JudgeStep(StepCounts{});
    r.verdict.fail_reason = loaded.status().message();
    return r;
  }
  SignalLoadResult& s = loaded->signals[static_cast<int>(signal)];
  r.elapsed_s = loaded->elapsed_s;
  r.requests = s.requests;
  r.ok_requests = s.ok_requests;
  r.items_accepted = s.items_accepted;
  r.status_counts = s.status_counts;
  r.achieved_rps = AchievedRate(s.ok_requests, r.elapsed_s, o_.step_duration_s);
  r.accepted_items_per_s = AchievedRate(s.items_accepted, r.elapsed_s, o_.step_duration_s);
  r.latency = SummarizeLatency(&s.latencies_ms);
  if (cpu0 >= 0 && cpu1 >= 0 && r.elapsed_s > 0) r.server_cpu_cores = (cpu1 - cpu0) / r.elapsed_s;
  StepCounts c;
  c.requests = s.requests;
  c.ok_requests = s.ok_requests;
  c.target_rps = load.rate;
  c.achieved_rps = r.achieved_rps;
  r.verdict = JudgeStep(c);
  return r;
}

PhaseResult RampRunner::RunPhase(Signal signal, const std::string& name, std::vector<double> ladder, int bisect_steps,
                                 const std::function<StepLoad(double)>& load_of) {
  PhaseResult phase;
  phase.name = name;
  RampSearch search(std::move(ladder), bisect_steps);
  if (search.HasNext() && o_.warmup_s > 0) {
    // Untimed, at the phase's first load, so the first step does not pay
    // for cold caches and connection setup.
    (void)Load(signal, load_of(search.Next()), o_.warmup_s);
  }
  const auto started = Clock::now();
  // Until a step has finished: its duration plus a second of building and draining.
  const double guess_s = o_.step_duration_s + 1;
  std::printf("%s: %s phase, up to %d steps, ETA %.0f s\n", SignalName(signal), name.c_str(), search.MaxRemaining(),
              EtaSeconds(0, 0, search.MaxRemaining(), guess_s));
  for (int i = 1; search.HasNext(); ++i) {
    const StepLoad load = load_of(search.Next());
    const bool bisecting = search.bisecting();
    StepResult r = RunStep(signal, load);
    search.Record(r.verdict.pass);
    double elapsed = std::chrono::duration<double>(Clock::now() - started).count();
    double eta = EtaSeconds(i, elapsed, search.MaxRemaining(), guess_s);
    std::printf(
        "  %-7s %-5s step %d/%d%s  batch %zu @ %g req/s (%s items/s): %.2f req/s, %s items/s, errors %.1f%%, "
        "p99 %.0f ms  %s%s%s  phase ETA %.0f s\n",
        SignalName(signal), name.c_str(), i, i + search.MaxRemaining(), bisecting ? " (bisect)" : "", load.batch,
        load.rate, Human(load.rate * static_cast<double>(load.batch)).c_str(), r.achieved_rps,
        Human(r.accepted_items_per_s).c_str(), r.verdict.error_pct, r.latency.p99, r.verdict.pass ? "PASS" : "FAIL",
        r.verdict.pass ? "" : ": ", r.verdict.fail_reason.c_str(), eta);
    std::fflush(stdout);
    phase.steps.push_back(std::move(r));
  }
  std::vector<StepScore> scores;
  for (const StepResult& s : phase.steps) scores.push_back({s.verdict.pass, s.accepted_items_per_s});
  phase.best = ChooseBest(scores);
  return phase;
}

bool HasPhase(const RampBenchOptions& o, const char* name) {
  return std::find(o.phases.begin(), o.phases.end(), name) != o.phases.end();
}

SignalResult RampRunner::RunSignal(Signal signal, const Target& target) {
  target_ = target;
  next_block_ = 0;
  SignalResult out;
  out.signal = signal;
  const int conns = o_.connections;
  // The rate phase runs at the batch phase's winner; without one (phase not
  // run, or nothing passed) at the smallest batch, the likeliest to pass.
  size_t rate_batch = static_cast<size_t>(o_.batches.front());
  if (HasPhase(o_, "batch")) {
    PhaseResult p = RunPhase(signal, "batch", o_.batches, 0, [&](double batch) {
      return StepLoad{static_cast<size_t>(batch), o_.batch_rate, conns};
    });
    if (p.best >= 0) rate_batch = p.steps[static_cast<size_t>(p.best)].batch;
    out.phases.push_back(std::move(p));
  }
  if (HasPhase(o_, "rate")) {
    out.phases.push_back(RunPhase(signal, "rate", o_.rates, o_.bisect_steps, [&](double rate) {
      return StepLoad{rate_batch, rate, conns};
    }));
  }
  if (HasPhase(o_, "fleet")) {
    out.phases.push_back(RunPhase(signal, "fleet", o_.fleet_rates, 0, [&](double rate) {
      return StepLoad{static_cast<size_t>(o_.fleet_batch), rate, FleetConnections(rate)};
    }));
  }
  for (const PhaseResult& p : out.phases) {
    for (const StepResult& s : p.steps) {
      if (!s.verdict.pass) continue;
      out.max_items_per_s = std::max(out.max_items_per_s, s.accepted_items_per_s);
      if (p.name == "fleet") out.fleet_max_items_per_s = std::max(out.fleet_max_items_per_s, s.accepted_items_per_s);
    }
  }
  return out;
}

// ---- output --------------------------------------------------------------------

void WriteDoubles(JsonWriter* w, const char* key, const std::vector<double>& v) {
  w->Key(key);
  w->BeginArray();
  for (double x : v) w->Double(x);
  w->EndArray();
}

void WriteConfig(JsonWriter* w, const RampBenchOptions& o) {
  w->Key("config");
  w->BeginObject();
  w->Key("signal");
  w->String(o.signal);
  w->Key("engine");
  w->String(o.spawn.empty() ? "external" : o.spawn);
  w->Key("spawned");
  w->Bool(!o.spawn.empty());
  w->Key("phases");
  w->BeginArray();
  for (const auto& p : o.phases) w->String(p);
  w->EndArray();
  WriteDoubles(w, "batches", o.batches);
  w->Key("batch_rate");
  w->Double(o.batch_rate);
  WriteDoubles(w, "rates", o.rates);
  w->Key("bisect_steps");
  w->Int(o.bisect_steps);
  w->Key("fleet_batch");
  w->Double(o.fleet_batch);
  WriteDoubles(w, "fleet_rates", o.fleet_rates);
  w->Key("step_duration_s");
  w->Double(o.step_duration_s);
  w->Key("warmup_s");
  w->Double(o.warmup_s);
  w->Key("connections");
  w->Int(o.connections);
  w->Key("format");
  w->String(o.format);
  w->Key("gzip_level");
  w->Int(o.gzip_level);
  w->Key("seed");
  w->Uint(o.seed);
  w->Key("request_timeout_s");
  w->Double(o.request_timeout_s);
  w->Key("max_error_pct");
  w->Double(kRampMaxErrorPct);
  w->Key("min_achieved_fraction");
  w->Double(kRampMinAchievedFraction);
  w->Key("server_args");
  w->BeginArray();
  for (const auto& a : o.server_args) w->String(a);
  w->EndArray();
  w->EndObject();
}

void WriteStep(JsonWriter* w, const StepResult& s) {
  w->BeginObject();
  w->Key("batch");
  w->Uint(s.batch);
  w->Key("target_rps");
  w->Double(s.target_rps);
  w->Key("target_items_per_s");
  w->Double(s.target_rps * static_cast<double>(s.batch));
  w->Key("connections");
  w->Int(s.connections);
  w->Key("requests");
  w->Uint(s.requests);
  w->Key("ok_requests");
  w->Uint(s.ok_requests);
  w->Key("items_accepted");
  w->Uint(s.items_accepted);
  w->Key("elapsed_s");
  w->Double(s.elapsed_s);
  w->Key("achieved_rps");
  w->Double(s.achieved_rps);
  w->Key("accepted_items_per_s");
  w->Double(s.accepted_items_per_s);
  w->Key("error_pct");
  w->Double(s.verdict.error_pct);
  w->Key("status_counts");
  w->BeginObject();
  for (auto [code, n] : s.status_counts) {
    w->Key(code == 0 ? "err" : std::to_string(code));
    w->Uint(n);
  }
  w->EndObject();
  WriteLatencyJson(w, s.latency);
  w->Key("server_rss_bytes");
  w->Uint(s.server_rss_bytes);
  w->Key("server_cpu_cores");
  w->Double(s.server_cpu_cores);
  w->Key("pass");
  w->Bool(s.verdict.pass);
  w->Key("fail_reason");
  w->String(s.verdict.fail_reason);
  w->EndObject();
}

std::string ResultJson(const RampBenchOptions& o, const Machine& m, const std::string& started_at,
                       const std::vector<SignalResult>& signals) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("benchmark");
  w.String("ramp");
  w.Key("version");
  w.Int(1);
  WriteConfig(&w, o);
  WriteMachineJson(&w, m);
  w.Key("started_at");
  w.String(started_at);
  w.Key("signals");
  w.BeginArray();
  for (const SignalResult& s : signals) {
    w.BeginObject();
    w.Key("signal");
    w.String(SignalName(s.signal));
    w.Key("engine");
    w.String(s.engine);
    w.Key("phases");
    w.BeginArray();
    for (const PhaseResult& p : s.phases) {
      w.BeginObject();
      w.Key("phase");
      w.String(p.name);
      w.Key("steps");
      w.BeginArray();
      for (const StepResult& step : p.steps) WriteStep(&w, step);
      w.EndArray();
      w.Key("best");
      w.Int(p.best);
      w.EndObject();
    }
    w.EndArray();
    w.Key("max_items_per_s");
    w.Double(s.max_items_per_s);
    w.Key("fleet_max_items_per_s");
    w.Double(s.fleet_max_items_per_s);
    w.Key("server_error");
    w.String(s.server_error);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  out.push_back('\n');
  return out;
}

void PrintSummary(const std::vector<SignalResult>& signals) {
  std::printf("\n%-8s %-8s %-6s %6s %10s %12s %10s  %s\n", "signal", "engine", "phase", "steps", "best batch",
              "best req/s", "items/s", "first failure");
  for (const SignalResult& s : signals) {
    for (const PhaseResult& p : s.phases) {
      std::string fail = "-";
      for (const StepResult& step : p.steps) {
        if (step.verdict.pass) continue;
        char buf[64];
        std::snprintf(buf, sizeof(buf), "batch %zu @ %g req/s", step.batch, step.target_rps);
        fail = buf;
        break;
      }
      if (p.best < 0) {
        std::printf("%-8s %-8s %-6s %6zu %10s %12s %10s  %s\n", SignalName(s.signal), s.engine.c_str(), p.name.c_str(),
                    p.steps.size(), "-", "-", "-", fail.c_str());
        continue;
      }
      const StepResult& b = p.steps[static_cast<size_t>(p.best)];
      std::printf("%-8s %-8s %-6s %6zu %10zu %12g %10s  %s\n", SignalName(s.signal), s.engine.c_str(), p.name.c_str(),
                  p.steps.size(), b.batch, b.target_rps, Human(b.accepted_items_per_s).c_str(), fail.c_str());
    }
    std::printf("%-8s max %s items/s over passing steps, SDK fleet %s items/s%s%s\n", SignalName(s.signal),
                Human(s.max_items_per_s).c_str(), Human(s.fleet_max_items_per_s).c_str(),
                s.server_error.empty() ? "" : "; server: ", s.server_error.c_str());
  }
}

// ---- setup ---------------------------------------------------------------------

//! Checks and normalizes the ladders; the error names the option.
Status Validate(RampBenchOptions* o, std::vector<Signal>* signals) {
  if (o->signal == "spans" || o->signal == "traces") *signals = {Signal::kSpans};
  else if (o->signal == "logs") *signals = {Signal::kLogs};
  else if (o->signal == "metrics") *signals = {Signal::kMetrics};
  else if (o->signal == "all") *signals = {Signal::kSpans, Signal::kLogs, Signal::kMetrics};
  else return Status::InvalidArgument("--signal must be spans, logs, metrics or all");
  if (o->phases.empty()) return Status::InvalidArgument("--phases: give batch, rate and/or fleet");
  for (const auto& p : o->phases) {
    if (p != "batch" && p != "rate" && p != "fleet") {
      return Status::InvalidArgument("--phases: '" + p + "' is not batch, rate or fleet");
    }
  }
  // The rate phase needs the batch phase's winner, so phases always run in
  // this order; the config says so whatever order they were given in.
  std::vector<std::string> ordered;
  for (const char* p : {"batch", "rate", "fleet"}) {
    if (HasPhase(*o, p)) ordered.push_back(p);
  }
  o->phases = std::move(ordered);
  struct Ladder {
    std::vector<double>* values;
    const char* name;
  };
  for (Ladder l :
       {Ladder{&o->batches, "--batches"}, Ladder{&o->rates, "--rates"}, Ladder{&o->fleet_rates, "--fleet-rates"}}) {
    auto n = NormalizeLadder(*l.values, l.name);
    if (!n.ok()) return n.status();
    *l.values = std::move(n.value());
  }
  const double max_batch = static_cast<double>(kMaxGeneratorBatch);
  for (double b : o->batches) {
    if (b != std::floor(b) || b > max_batch) return Status::InvalidArgument("--batches: whole numbers 1..16777215");
  }
  if (o->fleet_batch < 1 || o->fleet_batch > max_batch || o->fleet_batch != std::floor(o->fleet_batch)) {
    return Status::InvalidArgument("--fleet-batch: a whole number 1..16777215");
  }
  if (!(o->batch_rate > 0)) return Status::InvalidArgument("--batch-rate must be above 0");
  if (!(o->step_duration_s > 0)) return Status::InvalidArgument("--step-duration must be above 0");
  return Status::Ok();
}

}  // namespace

int RunRampBench(const RampBenchOptions& options) {
  RampBenchOptions o = options;
  std::vector<Signal> signals;
  if (Status st = Validate(&o, &signals); !st.ok()) {
    std::fprintf(stderr, "bench ramp: %s\n", st.message().c_str());
    return 1;
  }
  Target external;
  if (o.spawn.empty()) {
    auto ep = ParseLoopbackUrl(o.endpoint);
    if (!ep.ok()) {
      std::fprintf(stderr, "bench ramp: %s\n", ep.status().message().c_str());
      return 1;
    }
    external.otlp = *ep;
    if (!o.api.empty()) {
      auto a = ParseLoopbackUrl(o.api);
      if (!a.ok()) {
        std::fprintf(stderr, "bench ramp: --api: %s\n", a.status().message().c_str());
        return 1;
      }
      external.api = *a;
    }
    external.token = o.token;
    if (external.token.empty()) {
      if (const char* env = std::getenv("SIGHTLINE_INGEST_TOKEN")) external.token = env;
    }
  }
  const std::string work_parent = o.work_dir.empty() ? DefaultWorkParent() : o.work_dir;
  const Machine machine = DescribeMachine();
  const std::string started_at = UtcNowIso8601();
  std::printf("sightline bench ramp: %s on %s; phases", o.signal.c_str(),
              o.spawn.empty() ? o.endpoint.c_str() : ("a spawned " + o.spawn + " server per signal").c_str());
  for (const auto& p : o.phases) std::printf(" %s", p.c_str());
  std::printf("; %g s steps, %g s warm-up per phase; pass: errors < %.0f%%, achieved >= %.0f%% of target\n",
              o.step_duration_s, o.warmup_s, kRampMaxErrorPct, kRampMinAchievedFraction * 100);
  std::fflush(stdout);

  RampRunner runner(o, static_cast<int>(std::max(1u, machine.cores)));
  std::vector<SignalResult> results;
  bool any_accepted = false;
  for (Signal signal : signals) {
    Target target = external;
    std::unique_ptr<ServerProcess> server;
    std::optional<std::string> work;
    if (!o.spawn.empty()) {
      work = MakeTempDir(work_parent);
      if (!work) {
        std::fprintf(stderr, "bench ramp: cannot create a directory under %s\n", work_parent.c_str());
        return 1;
      }
      SpawnOptions so;
      so.engine = o.spawn;
      so.work_dir = *work;
      so.token = RandomToken();
      so.extra_args = o.server_args;
      so.clickhouse_url = o.clickhouse_url;
      so.keep_data = o.keep_data;
      auto started = ServerProcess::Start(so);
      if (!started.ok()) {
        std::fprintf(stderr, "bench ramp: %s\n", started.status().message().c_str());
        if (!o.keep_data) std::filesystem::remove_all(*work);
        return 1;
      }
      server = std::move(started.value());
      target.otlp = server->otlp();
      target.api = server->api();
      target.pid = server->pid();
      target.token = so.token;
    }
    SignalResult r = runner.RunSignal(signal, target);
    r.engine = o.spawn.empty() ? "external" : o.spawn;
    if (server) {
      double shutdown_s = 0;
      Status stopped = server->Stop(120, &shutdown_s);
      if (!stopped.ok()) r.server_error = stopped.message();
      server.reset();
    }
    if (work && !o.keep_data) std::filesystem::remove_all(*work);
    if (work && o.keep_data) std::printf("%s data kept in %s\n", SignalName(signal), work->c_str());
    for (const PhaseResult& p : r.phases) {
      for (const StepResult& s : p.steps) any_accepted = any_accepted || s.items_accepted > 0;
    }
    results.push_back(std::move(r));
  }

  PrintSummary(results);
  if (!o.json_out.empty()) {
    std::ofstream f(o.json_out);
    f << ResultJson(o, machine, started_at, results);
    if (!f) {
      std::fprintf(stderr, "bench ramp: cannot write %s\n", o.json_out.c_str());
      return 1;
    }
    std::printf("results written to %s\n", o.json_out.c_str());
  }
  return any_accepted ? 0 : 2;
}

void AddRampCommand(CLI::App* bench) {
  auto o = std::make_shared<RampBenchOptions>();
  auto* ramp = bench->add_subcommand(
      "ramp", "Throughput ramp per signal: batch sizes, request rates (with bisection), SDK-fleet rates");
  ramp->add_option("--endpoint", o->endpoint, "OTLP/HTTP base URL of an external server (loopback only)")
      ->capture_default_str();
  ramp->add_option("--api", o->api, "API base URL of an external server, for its RSS (deep health)");
  ramp->add_option("--token", o->token, "Ingest token of an external server (default: $SIGHTLINE_INGEST_TOKEN)");
  ramp->add_option("--spawn", o->spawn, "Start a fresh `sightline serve` with this engine for each signal")
      ->check(CLI::IsMember({"duckdb", "sqlite", "clickhouse"}));
  ramp->add_option("--clickhouse-url", o->clickhouse_url,
                   "With --spawn clickhouse: a running ClickHouse server or cluster node to use, in a database of "
                   "the signal's own (default: start a clickhouse-server per signal)");
  ramp->add_option("--server-arg", o->server_args, "Extra argument for the spawned server (repeatable)");
  ramp->add_option("--signal", o->signal, "spans, logs, metrics, or all (each in turn, a fresh server each)")
      ->check(CLI::IsMember({"spans", "traces", "logs", "metrics", "all"}))
      ->capture_default_str();
  ramp->add_option("--phases", o->phases, "Comma-separated phases to run (default batch,rate,fleet)")
      ->delimiter(',')
      ->check(CLI::IsMember({"batch", "rate", "fleet"}));
  ramp->add_option("--batches", o->batches, "Batch sizes of the batch phase (default 100,1000,4096,16384)")
      ->delimiter(',');
  ramp->add_option("--batch-rate", o->batch_rate, "Requests/s of the batch phase")->capture_default_str();
  ramp->add_option("--rates", o->rates, "Requests/s ladder of the rate phase (default 1,2,3,5,8,12,17,25)")
      ->delimiter(',');
  ramp->add_option("--bisect-steps", o->bisect_steps, "Bisection steps after the rate ladder's first failure")
      ->check(CLI::Range(0, 20))
      ->capture_default_str();
  ramp->add_option("--fleet-batch", o->fleet_batch, "Batch size of the fleet phase")->capture_default_str();
  ramp->add_option("--fleet-rates", o->fleet_rates,
                   "Requests/s ladder of the fleet phase (default 50,100,200,400,800,1600,3200)")
      ->delimiter(',');
  ramp->add_option("--step-duration", o->step_duration_s, "Seconds of load per step")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  ramp->add_option("--warmup", o->warmup_s, "Untimed seconds of load at the start of each phase (0 = none)")
      ->check(CLI::Range(0.0, 600.0))
      ->capture_default_str();
  ramp->add_option("--connections", o->connections, "Connections of the batch and rate phases")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  ramp->add_option("--format", o->format, "proto or json")
      ->check(CLI::IsMember({"proto", "json"}))
      ->capture_default_str();
  ramp->add_option("--gzip-level", o->gzip_level, "gzip level of the bodies (0 = send uncompressed)")
      ->check(CLI::Range(0, 12))
      ->capture_default_str();
  ramp->add_option("--seed", o->seed, "Random seed of the generated data")->capture_default_str();
  ramp->add_option("--request-timeout", o->request_timeout_s, "Seconds before an unanswered request fails")
      ->check(CLI::Range(0.1, 600.0))
      ->capture_default_str();
  ramp->add_option("--pool-mb", o->pool_mb, "Most memory one step's prebuilt payloads may take")->capture_default_str();
  ramp->add_option("--json-out", o->json_out, "Write machine-readable results here");
  ramp->add_option("--work-dir", o->work_dir, "Parent of the temporary data directories (default $TMPDIR or /tmp)");
  ramp->add_flag("--keep-data", o->keep_data, "Keep the temporary data directories");
  ramp->callback([o] {
    // A server that closes a connection mid-write must not kill the benchmark.
    ::signal(SIGPIPE, SIG_IGN);
    int code = RunRampBench(*o);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace sightline::bench
