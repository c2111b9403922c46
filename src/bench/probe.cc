#include "bench/probe.h"

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <thread>

#include "bench/bench_common.h"
#include "bench/http_load.h"
#include "bench/load_generator.h"
#include "bench/payload_pool.h"
#include "bench/probe_state.h"
#include "bench/probe_truth.h"
#include "bench/server_process.h"
#include "common/json_writer.h"

namespace sightline::bench {

// ---- the rules (unit-tested) ----------------------------------------------------

Result<std::vector<uint64_t>> ParseLevels(const std::string& text) {
  std::vector<uint64_t> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(pos, comma - pos);
    pos = comma + 1;
    double scale = 1;
    if (!item.empty()) {
      switch (item.back()) {
        case 'k':
        case 'K': scale = 1e3; break;
        case 'm':
        case 'M': scale = 1e6; break;
        case 'b':
        case 'B':
        case 'g':
        case 'G': scale = 1e9; break;
        default: break;
      }
      if (scale != 1) item.pop_back();
    }
    char* end = nullptr;
    double v = item.empty() ? 0 : std::strtod(item.c_str(), &end);
    if (item.empty() || end != item.c_str() + item.size() || !(v * scale >= 1) || v * scale > 1e13) {
      return Status::InvalidArgument("--levels: '" + text + "' is not a list of row counts like 10000,50000 or 1M,10M");
    }
    uint64_t rows = static_cast<uint64_t>(std::llround(v * scale));
    if (!out.empty() && rows <= out.back()) return Status::InvalidArgument("--levels must increase");
    out.push_back(rows);
  }
  return out;
}

bool LevelPasses(const std::vector<std::string>& names, const std::vector<CallSamples>& calls, double max_median_ms,
                 std::string* reason) {
  for (size_t i = 0; i < calls.size(); ++i) {
    const CallSamples& c = calls[i];
    const std::string& name = i < names.size() ? names[i] : std::to_string(i);
    if (c.timeouts > 0) {
      *reason = name + ": " + std::to_string(c.timeouts) + " timeout" + (c.timeouts == 1 ? "" : "s");
      return false;
    }
    for (int status : c.http_status) {
      if (status != 200) {
        *reason = name + ": HTTP " + std::to_string(status);
        return false;
      }
    }
    const double median = SpreadOf(c.samples_ms).median;
    if (c.samples_ms.empty() || median > max_median_ms) {
      char buf[96];
      std::snprintf(buf, sizeof buf, ": median %.0f ms > %.0f ms", median, max_median_ms);
      *reason = name + buf;
      return false;
    }
  }
  reason->clear();
  return true;
}

std::optional<uint64_t> ReadCliff(const std::vector<uint64_t>& levels, const std::vector<bool>& passed) {
  std::optional<uint64_t> cliff;
  for (size_t i = 0; i < levels.size() && i < passed.size(); ++i) {
    if (!passed[i]) break;
    cliff = levels[i];
  }
  return cliff;
}

namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr int64_t kNsPerMs = 1000000;
constexpr int64_t kDayMs = 86400000;
// Background payload numbers: above any fill's (< 100 << 32) and below 2^40,
// where the generator's ids (index << 24 | ordinal) would wrap onto the fill's.
constexpr uint64_t kUnderIngestFirstPayload = 3ull << 38;
constexpr const char* kSearchWord = "timeout";  // one of the generator's body words
constexpr size_t kPage = 50;

//! Set by the first SIGINT/SIGTERM: the ladder stops after the fill chunk in
//! flight, saves its state and stops the server (a second signal kills).
std::atomic<bool> g_stop{false};
extern "C" void OnStopSignal(int sig) {
  if (g_stop.exchange(true)) {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
}

// ---- results ------------------------------------------------------------------------

struct CallResult {
  std::string name, path;
  CallSamples samples;
  std::string check = "skipped";
};

struct LevelResult {
  uint64_t level_rows = 0, accepted_rows = 0;
  double fill_s = 0, fill_items_per_s = 0, digest_wait_s = 0;
  bool digested = false;
  uint64_t database_bytes = 0, wal_bytes = 0;
  //! This signal's bytes on disk and the rows they hold (deep health's
  //! engine.signals, measured fresh after digestion); nullopt when unknown.
  std::optional<uint64_t> signal_bytes, signal_stored_rows;
  std::optional<double> bytes_per_row() const {
    if (!signal_bytes || !signal_stored_rows || *signal_stored_rows == 0) return std::nullopt;
    return static_cast<double>(*signal_bytes) / static_cast<double>(*signal_stored_rows);
  }
  //! The spawned server's peak resident set (VmHWM) by the end of this
  //! level's probes; 0 when unknown (not spawned).
  uint64_t server_peak_rss_bytes = 0;
  std::vector<CallResult> calls;
  bool pass = false;
  std::string fail_reason;
};

struct SignalResult {
  Signal signal = Signal::kSpans;
  std::vector<LevelResult> levels;
  std::optional<uint64_t> read_cliff;
};

//! Where a ladder keeps its state (--keep-data or --resume), and the state it resumes.
struct LadderState {
  std::string dir;                    // "" = none kept
  std::optional<ProbeState> resumed;  // --resume
  ProbeState wanted;                  // this run's settings (engine, signals, seed, levels, batch, server args)
};

//! The background ingest of a run, summed over its levels and ladders.
struct UnderIngest {
  double target = 0;
  uint64_t accepted = 0;
  double seconds = 0;
  double achieved() const { return seconds > 0 ? static_cast<double>(accepted) / seconds : 0; }
};

struct RunResult {
  int run = 1;
  std::string engine;
  std::vector<SignalResult> signals;
  std::optional<UnderIngest> under_ingest;
  bool stopped = false;      // by a signal or --stop-after, before the ladder's end
  std::string stop_error;    // a resumed state that does not fit the server's data
  bool server_died = false;  // the spawned server exited or was killed
};

// ---- the calls ---------------------------------------------------------------------

struct Window {
  int64_t from_ms = 0, to_ms = 0;
};

struct CallSpec {
  std::string name, path;
};

std::vector<CallSpec> CallsFor(Signal s, const Window& w, const std::string& trace_id, const std::string& span_trace) {
  const std::string r = "from=" + std::to_string(w.from_ms) + "&to=" + std::to_string(w.to_ms);
  const std::string page = "&limit=" + std::to_string(kPage);
  switch (s) {
    case Signal::kSpans:
      return {{"endpoints", "/api/v1/endpoints?" + r + page},
              {"endpoints_series", "/api/v1/endpoints/series?" + r + "&metric=p95&top=10"},
              {"exceptions", "/api/v1/exceptions?" + r + page},
              {"trace", "/api/v1/traces/" + span_trace}};
    case Signal::kLogs:
      return {{"logs_errors", "/api/v1/logs?" + r + "&severity_min=17" + page},
              {"logs_search", "/api/v1/logs?" + r + "&q=" + kSearchWord + page},
              {"logs_trace", "/api/v1/logs?" + r + "&trace_id=" + trace_id + page}};
    case Signal::kMetrics:
      return {
          {"metrics_list", "/api/v1/metrics?" + r},
          {"metric_series", "/api/v1/metrics/series?" + r + "&name=process.cpu.utilization&agg=avg&group_by=cpu.mode"},
          {"metrics_overview",
           "/api/v1/metrics/series?" + r + "&name=http.server.request.duration&agg=p95&group_by=service.name"}};
  }
  return {};
}

std::string CheckCall(const ProbeTruth& t, const std::string& name, const std::string& body) {
  using F = ProbeTruth::LogFilter;
  if (name == "endpoints") return t.CheckEndpoints(body);
  if (name == "endpoints_series") return t.CheckEndpointSeries(body);
  if (name == "exceptions") return t.CheckExceptions(body);
  if (name == "trace") return t.CheckTrace(body);
  if (name == "logs_errors") return t.CheckLogs(body, F::kSeverity);
  if (name == "logs_search") return t.CheckLogs(body, F::kWord);
  if (name == "logs_trace") return t.CheckLogs(body, F::kTraceId);
  if (name == "metrics_list") return t.CheckMetricList(body);
  if (name == "metric_series") return t.CheckMetricGroups(body, "process.cpu.utilization", "cpu.mode", /*avg=*/true);
  if (name == "metrics_overview") return t.CheckMetricGroups(body, "http.server.request.duration", "service.name");
  return "skipped";
}

//! A log trace id the data is known to hold: a record from the middle of the
//! first log request (always sent at the first level).
std::string KnownLogTraceId(const LoadGenerator& gen) {
  const LogRequest first = gen.Logs(0);
  for (size_t start : {first.rows.size() / 2, size_t{0}}) {
    for (size_t i = start; i < first.rows.size(); ++i) {
      if (first.rows[i].has_trace) return IdHex(first.rows[i].trace_id);
    }
  }
  return "";
}

//! A span trace id the data is known to hold: the middle trace of the first
//! span request (a trace's spans are all in one request).
TraceId KnownSpanTrace(const LoadGenerator& gen) {
  const SpanRequest first = gen.Spans(0);
  return first.rows.empty() ? TraceId{} : first.rows[first.rows.size() / 2].trace_id;
}

//! Feeds the rows of payload `index` of a signal, as the generator chose
//! them, to the truth.
void AddToTruth(const LoadGenerator& gen, Signal s, uint64_t index, ProbeTruth* truth) {
  switch (s) {
    case Signal::kSpans: truth->AddSpans(gen.Spans(index)); break;
    case Signal::kLogs: truth->AddLogs(gen.Logs(index)); break;
    case Signal::kMetrics: truth->AddMetrics(gen.Metrics(index)); break;
  }
}

// ---- one ladder: a server, a group of signals filled together ------------------------

struct Target {
  HttpEndpoint otlp, api;
  std::string token;       // ingest: sends
  std::string read_token;  // read: the API
  bool spawned = false;
  pid_t server_pid = -1;  // the spawned server
};

//! Background ingest while probing (--under-ingest): slices of RunHttpLoad,
//! each a second's worth of requests paced at the target rate, until
//! stopped, so the load ends with the probes. Its achieved rate divides by
//! the whole wall time, gaps between slices included (or, when longer, the
//! time the schedule allotted to the requests sent).
class BackgroundIngest {
 public:
  //! Payload numbers from first_payload (ids unique among the ladder's
  //! background payloads, which start at index0 and are all far above the fill's).
  BackgroundIngest(const ProbeBenchOptions& o, const Target& t, const std::vector<Signal>& signals, const Window& w,
                   uint64_t index0, uint64_t first_payload)
      : signals_(signals), next_(first_payload) {
    GeneratorOptions g;
    g.seed = o.seed + 1;
    g.batch = o.under_ingest_batch;
    // Data an hour after the queried range, so the truth stays exact: payload
    // index0 starts there and each request advances 1 ms (small enough that
    // payload numbers near 2^39 stay far from overflowing nanoseconds).
    g.time_step_ns = 1000000;
    const int64_t series = g.batch <= g.sdk_batch_limit ? 20 : 200;
    g.point_step_ns = std::max<int64_t>(1, g.time_step_ns / ((static_cast<int64_t>(g.batch) + series - 1) / series));
    g.base_time_ns = (w.to_ms + 3600 * 1000) * kNsPerMs - static_cast<int64_t>(index0) * g.time_step_ns;
    gen_ = std::make_unique<LoadGenerator>(g);
    lo_.endpoint = t.otlp;
    lo_.token = t.token;
    lo_.connections = 2;
    lo_.rate = o.under_ingest / static_cast<double>(o.under_ingest_batch);  // requests/s over all signals
    lo_.requests = std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(lo_.rate)));
    lo_.content_type = ContentTypeFor(WireFormat::kProtobuf);
    lo_.content_encoding = ContentEncodingFor(gen_->options());
    lo_.request_timeout_s = 10;
    start_ = Clock::now();
    thread_ = std::thread([this] { Loop(); });
  }
  ~BackgroundIngest() {
    if (thread_.joinable()) Stop();
  }

  //! Stops the load; adds its accepted items and seconds to *u.
  void Stop(UnderIngest* u = nullptr) {
    stop_ = true;
    thread_.join();
    if (u != nullptr) {
      u->accepted += accepted_;
      // A probe shorter than the schedule's step still sent its first
      // request at once: count the time the schedule gave what was sent.
      u->seconds += std::max(Since(start_), static_cast<double>(sent_) / lo_.rate);
    }
  }
  uint64_t next_payload() const { return next_; }

 private:
  void Loop() {
    for (int slice = 0; slice < 10000000 && !stop_; ++slice) {
      const Clock::time_point slice_start = Clock::now();
      PayloadPool pool(gen_.get(), signals_, next_);
      auto r = RunHttpLoad(lo_, pool);
      if (!r.ok()) break;
      for (const auto& s : r->signals) {
        accepted_ += s.items_accepted;
        sent_ += s.requests;
      }
      next_ += (lo_.requests + signals_.size() - 1) / signals_.size();
      // Below one request per second a slice is one request: wait out its share.
      const double due_s = static_cast<double>(lo_.requests) / lo_.rate;
      for (int i = 0; i < 100000 && !stop_ && Since(slice_start) < due_s; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }

  std::vector<Signal> signals_;
  uint64_t next_;
  std::unique_ptr<LoadGenerator> gen_;
  HttpLoadOptions lo_;
  Clock::time_point start_;
  std::atomic<bool> stop_{false};
  uint64_t accepted_ = 0, sent_ = 0;
  std::thread thread_;
};

class Ladder {
 public:
  Ladder(const ProbeBenchOptions& o, const std::vector<uint64_t>& levels, const std::vector<Signal>& signals,
         const Target& target, int run, LadderState state = {})
      : o_(o), levels_(levels), signals_(signals), t_(target), run_(run), state_(std::move(state)) {}

  //! Fills, digests and probes level after level until one fails.
  RunResult Run(const std::string& engine) {
    RunResult out;
    out.run = run_;
    out.engine = engine;
    for (Signal s : signals_) out.signals.push_back(SignalResult{s, {}, std::nullopt});

    // The queried window is the last 24 h (to a minute ahead of now, as a
    // dashboard's "last 24 h" would be); the data fills it but for a minute
    // at the start and two at the end, so clock steps cannot push rows out.
    const int64_t now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    window_.to_ms = now_ms + 60000;
    window_.from_ms = window_.to_ms - kDayMs;
    GeneratorOptions g;
    g.seed = o_.seed;
    g.bounded_gauges = o_.bounded_gauges;
    g.batch = std::min<size_t>(o_.batch, levels_.front());  // the first level must not overshoot by a whole batch
    g.base_time_ns = (window_.from_ms + 60000) * kNsPerMs;
    SpreadOverWindow(&g);
    if (state_.resumed) {
      // The kept ladder's data and window, exactly: its rows were generated with them.
      const ProbeState& r = *state_.resumed;
      window_ = Window{r.from_ms, r.to_ms};
      g.batch = r.batch;
      g.base_time_ns = r.base_time_ns;
      g.time_step_ns = r.time_step_ns;
      g.point_step_ns = r.point_step_ns;
    }
    gen_ = std::make_unique<LoadGenerator>(g);
    trace_id_ = KnownLogTraceId(*gen_);
    span_trace_ = KnownSpanTrace(*gen_);
    if (o_.check) {
      ProbeTruthOptions to;
      to.from_ns = window_.from_ms * kNsPerMs;
      to.to_ns = window_.to_ms * kNsPerMs;
      to.page = kPage;
      to.word = kSearchWord;
      to.trace_id = trace_id_;
      to.span_trace = span_trace_;
      to.exact_percentile_rows = o_.exact_percentile_rows;
      // The spawned server's threshold, when the run sets it.
      for (const std::string& a : o_.server_args) {
        constexpr std::string_view kFlag = "--rollup-exact-spans=";
        if (a.rfind(kFlag, 0) == 0) to.rollup_exact_spans = std::stoull(a.substr(kFlag.size()));
      }
      truth_ = std::make_unique<ProbeTruth>(to);
    }
    first_payload_ = t_.spawned ? 0 : static_cast<uint64_t>(run_ - 1) << 32;
    background_payload_ = kUnderIngestFirstPayload + first_payload_;
    if (state_.resumed) {
      Status resumed = Resume(*state_.resumed);
      if (!resumed.ok()) {
        out.stopped = true;
        out.stop_error = resumed.message();
        return out;
      }
    }

    std::vector<std::vector<bool>> passed(signals_.size());
    for (uint64_t level : levels_) {
      if (level <= probed_rows_) {  // probed, and passed, before the ladder was resumed (it stops at a failure)
        for (std::vector<bool>& p : passed) p.push_back(true);
        continue;
      }
      LevelResult base;
      base.level_rows = level;
      Fill(level, &base);
      if (!g_stop && !ServerGone()) Digest(&base);
      if (ServerGone()) {
        // A dead server answers nothing: the level fails at once (not after
        // the digestion and call timeouts), with where to look.
        std::fprintf(stderr,
                     "\nbench probe: the spawned server (pid %d) is gone: it exited or was killed (dmesg "
                     "shows an OOM kill); its output is in server.log beside the data directory\n",
                     static_cast<int>(t_.server_pid));
        for (size_t k = 0; k < signals_.size(); ++k) {
          LevelResult r = base;
          r.accepted_rows = accepted_[static_cast<int>(signals_[k])];
          r.fail_reason = "the server died at " + Human(static_cast<double>(r.accepted_rows)) + " rows";
          passed[k].push_back(false);
          out.signals[k].levels.push_back(std::move(r));
        }
        out.server_died = true;
        break;
      }
      if (g_stop) {
        SaveState();
        out.stopped = true;
        break;
      }
      std::unique_ptr<BackgroundIngest> background;
      if (o_.under_ingest > 0) {
        background = std::make_unique<BackgroundIngest>(o_, t_, signals_, window_,
                                                        kUnderIngestFirstPayload + first_payload_, background_payload_);
      }
      bool all_passed = true;
      for (size_t k = 0; k < signals_.size(); ++k) {
        LevelResult r = base;
        r.accepted_rows = accepted_[static_cast<int>(signals_[k])];
        if (signal_bytes_) {
          r.signal_bytes = signal_bytes_->signal_bytes[static_cast<int>(signals_[k])];
          r.signal_stored_rows = signal_bytes_->signal_stored_rows[static_cast<int>(signals_[k])];
        }
        r.fill_items_per_s = r.fill_s > 0 ? static_cast<double>(r.accepted_rows - before_[k]) / r.fill_s : 0;
        Probe(signals_[k], &r);
        passed[k].push_back(r.pass);
        all_passed = all_passed && r.pass;
        out.signals[k].levels.push_back(std::move(r));
      }
      if (background) {
        UnderIngest level{o_.under_ingest, 0, 0};
        background->Stop(&level);
        background_payload_ = background->next_payload();
        background_accepted_ += level.accepted;
        if (!out.under_ingest) out.under_ingest = UnderIngest{o_.under_ingest, 0, 0};
        out.under_ingest->accepted += level.accepted;
        out.under_ingest->seconds += level.seconds;
        std::printf("  under ingest: %s items/s achieved (target %s)\n", Human(level.achieved()).c_str(),
                    Human(o_.under_ingest).c_str());
      }
      probed_rows_ = level;
      SaveState();
      if (!all_passed) break;  // the ladder stops at the first failing level
      if (g_stop || (o_.stop_after > 0 && level >= o_.stop_after && level != levels_.back())) {
        out.stopped = true;
        break;
      }
    }
    for (size_t k = 0; k < signals_.size(); ++k) out.signals[k].read_cliff = ReadCliff(levels_, passed[k]);
    return out;
  }

 private:
  //! Takes a kept ladder's progress: checks the server holds exactly the rows
  //! the state says were accepted (more when a chunk was in flight as the
  //! probe died: then, without --check, its rows are adopted and the truth is
  //! incomplete), and with --check re-feeds the truth every request sent.
  Status Resume(const ProbeState& r) {
    sent_ = r.sent;
    accepted_ = r.accepted;
    truth_complete_ = r.truth_complete;
    probed_rows_ = r.probed_rows;
    if (o_.reprobe) {  // back to the level below the largest probed: that one is probed again
      uint64_t below = 0;
      for (uint64_t level : levels_) below = level < r.probed_rows ? level : below;
      probed_rows_ = below;
    }
    background_payload_ = r.background_payload;
    auto h = FetchDeepHealth(t_.api);
    if (!h.ok()) return Status::Unavailable("deep health of the resumed server: " + h.status().message());
    uint64_t have = 0, want = r.background_accepted;
    for (Signal s : signals_) {
      have += h->rows[static_cast<int>(s)];
      want += r.accepted[static_cast<int>(s)];
    }
    if (have != want) {
      const std::string counts = "the server holds " + std::to_string(have) +
                                 " rows of the ladder's signals, the state says " + std::to_string(want) +
                                 " were accepted";
      if (have < want) return Status::InvalidArgument(counts + ": the data directory lost rows; start a new ladder");
      if (r.in_flight_until <= r.sent || signals_.size() != 1) {
        return Status::InvalidArgument(counts + ": the data directory has rows the state does not know of");
      }
      if (o_.check) {
        return Status::InvalidArgument(counts +
                                       ": the probe was stopped with a fill chunk in flight, so which of its requests "
                                       "are stored is unknown; resume without --check to continue unchecked");
      }
      std::printf("  %s; the chunk in flight is adopted, the truth is incomplete\n", counts.c_str());
      accepted_[static_cast<int>(signals_[0])] += have - want;
      sent_ = r.in_flight_until;
      truth_complete_ = false;
    }
    background_accepted_ = r.background_accepted;
    std::printf("  resumed at request %llu:", static_cast<unsigned long long>(sent_));
    for (Signal s : signals_) {
      std::printf(" %s %s", SignalName(s), Human(static_cast<double>(accepted_[static_cast<int>(s)])).c_str());
    }
    std::printf(" rows, levels up to %s probed\n", Human(static_cast<double>(probed_rows_)).c_str());
    if (truth_) {
      const Clock::time_point t0 = Clock::now();
      for (uint64_t p = 0; p < sent_; ++p) {
        for (Signal s : signals_) AddToTruth(*gen_, s, first_payload_ + p, truth_.get());
      }
      std::printf("  truth rebuilt from %llu requests in %.1f s\n", static_cast<unsigned long long>(sent_), Since(t0));
    }
    std::fflush(stdout);
    return Status::Ok();
  }

  //! Writes the ladder's progress to its kept directory (no-op without one).
  //! `in_flight_until`: the request index a chunk about to be sent ends at.
  void SaveState(uint64_t in_flight_until = 0) {
    if (state_.dir.empty()) return;
    ProbeState s = state_.wanted;
    const GeneratorOptions& g = gen_->options();
    s.batch = g.batch;
    s.base_time_ns = g.base_time_ns;
    s.time_step_ns = g.time_step_ns;
    s.point_step_ns = g.point_step_ns;
    s.from_ms = window_.from_ms;
    s.to_ms = window_.to_ms;
    s.sent = sent_;
    s.in_flight_until = in_flight_until;
    s.accepted = accepted_;
    s.truth_complete = truth_complete_;
    s.probed_rows = probed_rows_;
    s.background_payload = background_payload_;
    s.background_accepted = background_accepted_;
    Status saved = SaveProbeState(state_.dir, s);
    if (!saved.ok()) std::fprintf(stderr, "bench probe: %s\n", saved.message().c_str());
  }

  //! Sets the generator's steps so the largest level spans the window, with
  //! 10% headroom for requests sent again after a rejection.
  void SpreadOverWindow(GeneratorOptions* g) const {
    const int64_t span_ns = (kDayMs - 180000) * kNsPerMs;
    const uint64_t payloads = (levels_.back() + g->batch - 1) / g->batch * 11 / 10 + 1;
    // Spans and logs: one step per request. Metrics: one per point of a
    // series; a request holds batch / series points of each.
    const uint64_t series = g->batch <= g->sdk_batch_limit ? 20 : 200;
    const uint64_t points = payloads * ((g->batch + series - 1) / series);
    g->time_step_ns = std::max<int64_t>(1, span_ns / static_cast<int64_t>(payloads));
    g->point_step_ns = std::max<int64_t>(1, span_ns / static_cast<int64_t>(points));
  }

  //! Rows the signal furthest from `level` still lacks (accepted rows only).
  uint64_t Shortfall(uint64_t level) const {
    uint64_t worst = 0;
    for (Signal s : signals_) {
      const uint64_t have = accepted_[static_cast<int>(s)];
      if (have < level) worst = std::max(worst, level - have);
    }
    return worst;
  }

  //! Sends payloads until every signal has `level` accepted rows: rejected
  //! requests (a busy server's 429/503) are made up with new payloads.
  //! Gives up after three chunks in a row with nothing accepted.
  void Fill(uint64_t level, LevelResult* r) {
    const size_t n = signals_.size();
    const uint64_t batch = gen_->options().batch;
    before_.clear();
    for (Signal s : signals_) before_.push_back(accepted_[static_cast<int>(s)]);
    const uint64_t missing = Shortfall(level);
    // ~10 progress lines, but enough requests per chunk to keep every connection busy.
    const uint64_t busy = (static_cast<uint64_t>(o_.connections) + n - 1) / n;
    const uint64_t chunk = std::clamp<uint64_t>((missing / batch + 10) / 10, busy, std::max<uint64_t>(busy, 256));
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const bool tty = isatty(fileno(stdout));
    int fruitless = 0;
    for (int round = 0; round < 1000000 && Shortfall(level) > 0 && !g_stop; ++round) {
      const uint64_t now = std::min(chunk, (Shortfall(level) + batch - 1) / batch);
      SaveState(sent_ + now);
      PayloadPool pool(gen_.get(), signals_, first_payload_ + sent_);
      pool.Prebuild(now * n, threads, o_.pool_mb << 20);  // untimed: the fill rate is the server's
      HttpLoadOptions lo;
      lo.endpoint = t_.otlp;
      lo.token = t_.token;
      lo.connections = o_.connections;
      lo.requests = now * n;
      lo.content_type = ContentTypeFor(WireFormat::kProtobuf);
      lo.content_encoding = ContentEncodingFor(gen_->options());
      auto loaded = RunHttpLoad(lo, pool);
      if (!loaded.ok()) {
        std::fprintf(stderr, "\nbench probe: fill: %s\n", loaded.status().message().c_str());
        break;
      }
      r->fill_s += loaded->elapsed_s;
      uint64_t accepted_now = 0;
      for (Signal s : signals_) {
        const SignalLoadResult& x = loaded->signals[static_cast<int>(s)];
        accepted_[static_cast<int>(s)] += x.items_accepted;
        accepted_now += x.items_accepted;
        if (x.items_accepted != x.items_sent) truth_complete_ = false;  // which request failed is unknown
      }
      if (truth_) {
        for (uint64_t p = 0; p < now; ++p) {
          for (Signal s : signals_) AddToTruth(*gen_, s, first_payload_ + sent_ + p, truth_.get());
        }
      }
      sent_ += now;
      SaveState();
      uint64_t filled = 0;
      for (size_t k = 0; k < n; ++k) filled += accepted_[static_cast<int>(signals_[k])] - before_[k];
      const double rate = r->fill_s > 0 ? static_cast<double>(filled) / r->fill_s : 0;
      const uint64_t left = Shortfall(level);
      // One line rewritten in place on a terminal; a line per chunk in a log.
      std::printf("%s  %s level %s: %3.0f%% filled, %s rows/s, ETA %.0f s   %s", tty ? "\r" : "", SignalsName().c_str(),
                  Human(static_cast<double>(level)).c_str(),
                  missing ? 100.0 * static_cast<double>(missing - left) / static_cast<double>(missing) : 100.0,
                  Human(rate).c_str(), rate > 0 ? static_cast<double>(left * n) / rate : 0.0, tty ? "" : "\n");
      std::fflush(stdout);
      if (accepted_now == 0 && ServerGone()) break;
      fruitless = accepted_now == 0 ? fruitless + 1 : 0;
      if (fruitless >= 3) {
        std::fprintf(stderr, "\nbench probe: fill: nothing accepted in 3 rounds; probing at %llu rows\n",
                     static_cast<unsigned long long>(level - left));
        break;
      }
    }
    if (missing > 0 && tty) std::printf("\n");
  }

  //! Waits until deep health's database and WAL sizes read the same in
  //! digest_polls consecutive polls (and, on a spawned server, every
  //! accepted row is counted).
  void Digest(LevelResult* r) {
    const Clock::time_point start = Clock::now();
    signal_bytes_.reset();
    std::optional<DeepHealth> last;
    int same = 0;
    const int max_polls = static_cast<int>(o_.digest_timeout_s / std::max(o_.digest_interval_s, 0.01)) + 1;
    for (int poll = 0; poll < max_polls && !g_stop; ++poll) {
      auto h = FetchDeepHealth(t_.api);
      if (h.ok()) {
        bool rows_in = true;
        for (Signal s : signals_)
          rows_in = rows_in && (!t_.spawned || h->rows[static_cast<int>(s)] >= accepted_[static_cast<int>(s)]);
        same = last && last->database_bytes == h->database_bytes && last->wal_bytes == h->wal_bytes && rows_in
                   ? same + 1
                   : 1;
        last = *h;
        if (same >= o_.digest_polls) {
          r->digested = true;
          break;
        }
      }
      if (Since(start) >= o_.digest_timeout_s || (!h.ok() && ServerGone())) break;
      std::this_thread::sleep_for(std::chrono::duration<double>(o_.digest_interval_s));
    }
    r->digest_wait_s = Since(start);
    if (last) {
      r->database_bytes = last->database_bytes;
      r->wal_bytes = last->wal_bytes;
    }
    std::printf("  digested in %.1f s%s: database %s B, WAL %s B\n", r->digest_wait_s,
                r->digested ? "" : " (TIMED OUT, probing anyway)",
                Human(static_cast<double>(r->database_bytes)).c_str(),
                Human(static_cast<double>(r->wal_bytes)).c_str());
    // The signals' bytes, measured now (deep health caches them otherwise);
    // untimed, and before the probes so they do not compete with it.
    const Clock::time_point measured = Clock::now();
    if (auto h = FetchDeepHealth(t_.api, /*fresh=*/true); h.ok()) {
      signal_bytes_ = *h;
      std::printf("  bytes per row measured in %.2f s:", Since(measured));
      for (Signal s : signals_) {
        const int i = static_cast<int>(s);
        if (h->signal_bytes[i] && h->signal_stored_rows[i] && *h->signal_stored_rows[i] > 0) {
          std::printf(" %s %.1f (%s rows stored)", SignalName(s),
                      static_cast<double>(*h->signal_bytes[i]) / static_cast<double>(*h->signal_stored_rows[i]),
                      Human(static_cast<double>(*h->signal_stored_rows[i])).c_str());
        } else {
          std::printf(" %s -", SignalName(s));
        }
      }
      std::printf("\n");
    }
  }

  void Probe(Signal s, LevelResult* r) {
    const int timeout_ms = static_cast<int>(o_.timeout_s * 1000);
    std::vector<std::string> names;
    std::vector<CallSamples> samples;
    for (const CallSpec& spec : CallsFor(s, window_, trace_id_, IdHex(span_trace_))) {
      CallResult c;
      c.name = spec.name;
      c.path = spec.path;
      std::string last_ok;
      for (int p = 0; p < o_.probes; ++p) {
        std::string body;
        const Clock::time_point t0 = Clock::now();
        auto got = HttpGet(t_.api, spec.path, &body, timeout_ms, t_.read_token);
        c.samples.samples_ms.push_back(Since(t0) * 1000);
        const int status = got.ok() ? *got : 0;
        c.samples.http_status.push_back(status);
        if (status == 504 || status == 0) ++c.samples.timeouts;
        if (status == 200) last_ok = std::move(body);
      }
      if (truth_) {
        if (last_ok.empty()) c.check = "skipped: no 200 answer";
        else if (!truth_complete_) c.check = "skipped: some fill requests were rejected";
        else c.check = CheckCall(*truth_, c.name, last_ok);
      }
      names.push_back(c.name);
      samples.push_back(c.samples);
      const Spread sp = SpreadOf(c.samples.samples_ms);
      std::printf("  %-8s %-18s median %8.1f ms [%.1f .. %.1f]%s%s\n", SignalName(s), c.name.c_str(), sp.median, sp.min,
                  sp.max, c.samples.timeouts ? " TIMEOUT" : "",
                  c.check == "skipped" ? "" : (" check " + c.check).c_str());
      r->calls.push_back(std::move(c));
    }
    r->pass = LevelPasses(names, samples, o_.pass_median_s * 1000, &r->fail_reason);
    if (t_.spawned) r->server_peak_rss_bytes = PeakRssBytesOf(t_.server_pid);
    std::printf("  %s at %s rows: %s%s%s%s\n", SignalName(s), Human(static_cast<double>(r->accepted_rows)).c_str(),
                r->pass ? "PASS" : "FAIL", r->pass ? "" : " — ", r->fail_reason.c_str(),
                r->server_peak_rss_bytes > 0
                    ? (" (server peak RSS " + Human(static_cast<double>(r->server_peak_rss_bytes)) + "B)").c_str()
                    : "");
    std::fflush(stdout);
  }

  bool ServerGone() const { return t_.spawned && t_.server_pid > 0 && !ProcessIsRunning(t_.server_pid); }

  std::string SignalsName() const {
    std::string out;
    for (Signal s : signals_) out += (out.empty() ? "" : "+") + std::string(SignalName(s));
    return out;
  }

  const ProbeBenchOptions& o_;
  const std::vector<uint64_t>& levels_;
  std::vector<Signal> signals_;
  Target t_;
  int run_;
  LadderState state_;
  Window window_;
  std::unique_ptr<LoadGenerator> gen_;
  std::unique_ptr<ProbeTruth> truth_;
  bool truth_complete_ = true;
  std::string trace_id_;
  TraceId span_trace_{};  // the trace call's
  uint64_t first_payload_ = 0;
  uint64_t background_payload_ = 0;   // next payload of the background ingest
  uint64_t sent_ = 0;                 // payloads sent per signal
  uint64_t probed_rows_ = 0;          // the largest level probed
  uint64_t background_accepted_ = 0;  // --under-ingest items stored, over the ladder's levels
  std::array<uint64_t, kSignalCount> accepted_ = {0, 0, 0};
  std::vector<uint64_t> before_;            // accepted per signal before this level's fill
  std::optional<DeepHealth> signal_bytes_;  // the level's fresh deep health, for bytes per row
};

// ---- output ---------------------------------------------------------------------------

void WriteCliff(JsonWriter* w, std::optional<uint64_t> cliff) {
  if (cliff) w->Uint(*cliff);
  else w->Null();
}

void WriteConfig(JsonWriter* w, const ProbeBenchOptions& o, const std::vector<uint64_t>& levels) {
  w->Key("config");
  w->BeginObject();
  w->Key("endpoint");
  w->String(o.spawn.empty() ? o.endpoint : "");
  w->Key("api");
  w->String(o.spawn.empty() ? o.api : "");
  w->Key("spawn");
  w->String(o.spawn);
  w->Key("server_args");
  w->BeginArray();
  for (const auto& a : o.server_args) w->String(a);
  w->EndArray();
  w->Key("signal");
  w->String(o.signal);
  w->Key("mixed");
  w->Bool(o.mixed);
  w->Key("levels");
  w->BeginArray();
  for (uint64_t l : levels) w->Uint(l);
  w->EndArray();
  w->Key("batch");
  w->Uint(o.batch);
  w->Key("connections");
  w->Int(o.connections);
  w->Key("probes");
  w->Int(o.probes);
  w->Key("timeout_s");
  w->Double(o.timeout_s);
  w->Key("pass_median_s");
  w->Double(o.pass_median_s);
  w->Key("digest_timeout_s");
  w->Double(o.digest_timeout_s);
  w->Key("digest_interval_s");
  w->Double(o.digest_interval_s);
  w->Key("digest_polls");
  w->Int(o.digest_polls);
  w->Key("under_ingest");
  w->Double(o.under_ingest);
  w->Key("under_ingest_batch");
  w->Uint(o.under_ingest_batch);
  w->Key("repeat");
  w->Int(o.repeat);
  w->Key("check");
  w->Bool(o.check);
  w->Key("seed");
  w->Uint(o.seed);
  w->EndObject();
}

std::string ResultJson(const ProbeBenchOptions& o, const std::vector<uint64_t>& levels, const Machine& m,
                       const std::string& started_at, const std::vector<RunResult>& runs,
                       const std::vector<Signal>& signals) {
  std::string out;
  JsonWriter w(&out);
  w.BeginObject();
  w.Key("benchmark");
  w.String("probe");
  w.Key("version");
  w.Int(1);
  WriteConfig(&w, o, levels);
  WriteMachineJson(&w, m);
  w.Key("started_at");
  w.String(started_at);
  w.Key("runs");
  w.BeginArray();
  for (const RunResult& run : runs) {
    w.BeginObject();
    w.Key("run");
    w.Int(run.run);
    w.Key("engine");
    w.String(run.engine);
    w.Key("signals");
    w.BeginArray();
    for (const SignalResult& s : run.signals) {
      w.BeginObject();
      w.Key("signal");
      w.String(SignalName(s.signal));
      w.Key("levels");
      w.BeginArray();
      for (const LevelResult& l : s.levels) {
        w.BeginObject();
        w.Key("level_rows");
        w.Uint(l.level_rows);
        w.Key("accepted_rows");
        w.Uint(l.accepted_rows);
        w.Key("fill_s");
        w.Double(l.fill_s);
        w.Key("fill_items_per_s");
        w.Double(l.fill_items_per_s);
        w.Key("digest_wait_s");
        w.Double(l.digest_wait_s);
        w.Key("digested");
        w.Bool(l.digested);
        w.Key("database_bytes");
        w.Uint(l.database_bytes);
        w.Key("wal_bytes");
        w.Uint(l.wal_bytes);
        w.Key("signal_bytes");
        if (l.signal_bytes) w.Uint(*l.signal_bytes);
        else w.Null();
        w.Key("signal_stored_rows");
        if (l.signal_stored_rows) w.Uint(*l.signal_stored_rows);
        else w.Null();
        w.Key("bytes_per_row");
        if (auto b = l.bytes_per_row()) w.Double(*b);
        else w.Null();
        w.Key("server_peak_rss_bytes");
        if (l.server_peak_rss_bytes > 0) w.Uint(l.server_peak_rss_bytes);
        else w.Null();
        w.Key("calls");
        w.BeginArray();
        for (const CallResult& c : l.calls) {
          const Spread sp = SpreadOf(c.samples.samples_ms);
          w.BeginObject();
          w.Key("call");
          w.String(c.name);
          w.Key("path");
          w.String(c.path);
          w.Key("median_ms");
          w.Double(sp.median);
          w.Key("min_ms");
          w.Double(sp.min);
          w.Key("max_ms");
          w.Double(sp.max);
          w.Key("samples_ms");
          w.BeginArray();
          for (double v : c.samples.samples_ms) w.Double(v);
          w.EndArray();
          w.Key("timeouts");
          w.Int(c.samples.timeouts);
          w.Key("http_status");
          w.BeginArray();
          for (int v : c.samples.http_status) w.Int(v);
          w.EndArray();
          w.Key("check");
          w.String(c.check);
          w.EndObject();
        }
        w.EndArray();
        w.Key("pass");
        w.Bool(l.pass);
        w.Key("fail_reason");
        w.String(l.fail_reason);
        w.EndObject();
      }
      w.EndArray();
      w.Key("read_cliff_rows");
      WriteCliff(&w, s.read_cliff);
      w.EndObject();
    }
    w.EndArray();
    w.Key("under_ingest");
    if (run.under_ingest) {
      w.BeginObject();
      w.Key("target_items_per_s");
      w.Double(run.under_ingest->target);
      w.Key("achieved_items_per_s");
      w.Double(run.under_ingest->achieved());
      w.EndObject();
    } else {
      w.Null();
    }
    w.EndObject();
  }
  w.EndArray();

  // Summary over runs: per signal the median read cliff (a run without one
  // counts as 0 rows; null when the median is 0), and per call and level the
  // median of the runs' medians with the min and max over every sample.
  w.Key("summary");
  w.BeginObject();
  for (Signal sig : signals) {
    std::vector<double> cliffs;
    std::map<std::string, std::map<uint64_t, std::pair<std::vector<double>, std::vector<double>>>> calls;
    std::vector<std::string> order;
    for (const RunResult& run : runs) {
      for (const SignalResult& s : run.signals) {
        if (s.signal != sig) continue;
        cliffs.push_back(s.read_cliff ? static_cast<double>(*s.read_cliff) : 0);
        for (const LevelResult& l : s.levels) {
          for (const CallResult& c : l.calls) {
            if (!calls.count(c.name)) order.push_back(c.name);
            auto& [medians, samples] = calls[c.name][l.level_rows];
            medians.push_back(SpreadOf(c.samples.samples_ms).median);
            samples.insert(samples.end(), c.samples.samples_ms.begin(), c.samples.samples_ms.end());
          }
        }
      }
    }
    w.Key(SignalName(sig));
    w.BeginObject();
    w.Key("read_cliff_rows");
    const double cliff = SpreadOf(cliffs).median;
    WriteCliff(&w, cliff > 0 ? std::optional<uint64_t>(static_cast<uint64_t>(cliff)) : std::nullopt);
    w.Key("calls");
    w.BeginObject();
    for (const std::string& name : order) {
      w.Key(name);
      w.BeginObject();
      for (const auto& [level, v] : calls[name]) {
        const Spread all = SpreadOf(v.second);
        w.Key(std::to_string(level));
        w.BeginObject();
        w.Key("median_ms");
        w.Double(SpreadOf(v.first).median);
        w.Key("min_ms");
        w.Double(all.min);
        w.Key("max_ms");
        w.Double(all.max);
        w.EndObject();
      }
      w.EndObject();
    }
    w.EndObject();
    w.EndObject();
  }
  w.EndObject();
  w.EndObject();
  out.push_back('\n');
  return out;
}

void PrintTable(const std::vector<RunResult>& runs) {
  std::printf("\n%-4s %-7s %-8s %10s %10s %7s %9s %-18s %10s %10s %10s  %-4s %s\n", "run", "engine", "signal", "level",
              "rows/s", "B/row", "peak RSS", "call", "median ms", "min ms", "max ms", "pass", "check");
  for (const RunResult& run : runs) {
    for (const SignalResult& s : run.signals) {
      for (const LevelResult& l : s.levels) {
        if (l.calls.empty()) {  // a level that could not be probed (its server died)
          std::printf("%-4d %-7s %-8s %10s %10s %7s %9s %-18s %10s %10s %10s  %-4s %s\n", run.run, run.engine.c_str(),
                      SignalName(s.signal), Human(static_cast<double>(l.accepted_rows)).c_str(),
                      Human(l.fill_items_per_s).c_str(), "-", "-", "-", "-", "-", "-", "NO", l.fail_reason.c_str());
        }
        for (const CallResult& c : l.calls) {
          const Spread sp = SpreadOf(c.samples.samples_ms);
          char per_row[16] = "-";
          if (auto b = l.bytes_per_row()) std::snprintf(per_row, sizeof per_row, "%.1f", *b);
          const std::string rss =
              l.server_peak_rss_bytes > 0 ? Human(static_cast<double>(l.server_peak_rss_bytes)) + "B" : "-";
          std::printf("%-4d %-7s %-8s %10s %10s %7s %9s %-18s %10.1f %10.1f %10.1f  %-4s %s\n", run.run,
                      run.engine.c_str(), SignalName(s.signal), Human(static_cast<double>(l.accepted_rows)).c_str(),
                      Human(l.fill_items_per_s).c_str(), per_row, rss.c_str(), c.name.c_str(), sp.median, sp.min,
                      sp.max, l.pass ? "yes" : "NO", c.check.c_str());
        }
      }
      std::printf("run %d %s %s: read cliff %s\n", run.run, run.engine.c_str(), SignalName(s.signal),
                  s.read_cliff ? Human(static_cast<double>(*s.read_cliff)).c_str() : "none (first level failed)");
    }
  }
}

}  // namespace

// ---- the command ----------------------------------------------------------------------

int RunProbeBench(const ProbeBenchOptions& o) {
  auto levels = ParseLevels(o.levels);
  if (!levels.ok()) {
    std::fprintf(stderr, "bench probe: %s\n", levels.status().message().c_str());
    return 1;
  }
  std::vector<Signal> signals;
  if (o.signal == "spans" || o.signal == "traces") signals = {Signal::kSpans};
  else if (o.signal == "logs") signals = {Signal::kLogs};
  else if (o.signal == "metrics") signals = {Signal::kMetrics};
  else signals = {Signal::kSpans, Signal::kLogs, Signal::kMetrics};
  // A ladder per signal on a server of its own, or one mixed ladder.
  std::vector<std::vector<Signal>> groups;
  if (o.mixed) groups.push_back(signals);
  else
    for (Signal s : signals) groups.push_back({s});

  Target external;
  if (o.spawn.empty()) {
    auto ep = ParseLoopbackUrl(o.endpoint);
    auto api = ParseLoopbackUrl(o.api);
    if (!ep.ok() || !api.ok()) {
      std::fprintf(stderr, "bench probe: %s\n", (!ep.ok() ? ep.status() : api.status()).message().c_str());
      return 1;
    }
    external.otlp = *ep;
    external.api = *api;
    external.token = o.token;
    if (external.token.empty()) {
      if (const char* env = std::getenv("SIGHTLINE_INGEST_TOKEN")) external.token = env;
    }
    external.read_token = o.read_token;
  }
  std::vector<std::string> server_args = o.server_args;
  bool has_query_timeout = false;
  for (const auto& a : server_args) has_query_timeout = has_query_timeout || a.rfind("--query-timeout-ms", 0) == 0;
  if (!has_query_timeout)
    server_args.push_back("--query-timeout-ms=" + std::to_string(std::llround(o.timeout_s * 1000)));
  const std::string work_parent = o.work_dir.empty() ? DefaultWorkParent() : o.work_dir;

  // --resume: one spawned ladder on an embedded engine, continued in its own directory.
  std::optional<ProbeState> resumed;
  if (!o.resume.empty()) {
    const char* why = o.spawn.empty()           ? "--resume needs --spawn (the engine the ladder ran on)"
                      : o.spawn == "clickhouse" ? "--resume supports the embedded engines (duckdb, sqlite)"
                      : groups.size() != 1      ? "--resume continues one ladder: give one --signal, or --mixed"
                      : o.repeat != 1           ? "--resume runs one ladder: no --repeat"
                                                : nullptr;
    if (why != nullptr) {
      std::fprintf(stderr, "bench probe: %s\n", why);
      return 1;
    }
    auto state = LoadProbeState(o.resume);
    if (!state.ok()) {
      std::fprintf(stderr, "bench probe: %s\n", state.status().message().c_str());
      return 1;
    }
    resumed = std::move(state.value());
  }
  auto wanted_state = [&](const std::vector<Signal>& group) {
    ProbeState w;
    w.engine = o.spawn;
    for (Signal sig : group) w.signals.push_back(SignalName(sig));
    w.seed = o.seed;
    w.levels = *levels;
    w.batch = std::min<size_t>(o.batch, levels->front());
    for (const auto& a : o.server_args) w.server_args += (w.server_args.empty() ? "" : "\n") + a;
    return w;
  };
  if (resumed) {
    const std::string mismatch = ProbeStateMismatch(*resumed, wanted_state(groups[0]));
    if (!mismatch.empty()) {
      std::fprintf(stderr, "bench probe: cannot resume %s: %s\n", o.resume.c_str(), mismatch.c_str());
      return 1;
    }
  }
  // A kept ladder can be stopped (Ctrl-C, SIGTERM) and resumed; the spawned
  // server is in a process group of its own, so a terminal's Ctrl-C reaches
  // only the probe, which then stops it after saving the state.
  const bool resumable = !o.spawn.empty() && (o.keep_data || resumed);
  g_stop = false;
  if (resumable) {
    ::signal(SIGINT, OnStopSignal);
    ::signal(SIGTERM, OnStopSignal);
  }

  const Machine machine = DescribeMachine();
  const std::string started_at = UtcNowIso8601();
  std::printf(
      "sightline bench probe: %s%s, levels %s, batch %zu, %d probes per call, timeout %.0f s, %s%s x %d run%s\n",
      o.signal.c_str(), o.mixed ? " (mixed)" : "", o.levels.c_str(), o.batch, o.probes, o.timeout_s,
      o.spawn.empty() ? o.api.c_str() : ("spawned " + o.spawn).c_str(), o.check ? ", --check" : "", o.repeat,
      o.repeat == 1 ? "" : "s");
  std::fflush(stdout);

  std::vector<RunResult> runs;
  bool stopped = false;
  bool server_died = false;
  std::string stopped_dir;
  for (int rep = 1; rep <= std::max(1, o.repeat) && !stopped; ++rep) {
    RunResult run;
    run.run = rep;
    run.engine = EngineLabel(o.spawn, o.server_args);
    for (const auto& group : groups) {
      if (stopped) break;
      Target t = external;
      std::unique_ptr<ServerProcess> server;
      std::optional<std::string> work;
      if (!o.spawn.empty()) {
        work = resumed ? std::optional<std::string>(o.resume) : MakeTempDir(work_parent);
        if (!work) {
          std::fprintf(stderr, "bench probe: cannot create a directory under %s\n", work_parent.c_str());
          return 1;
        }
        SpawnOptions so;
        so.engine = o.spawn;
        so.work_dir = *work;
        so.token = RandomToken();
        so.extra_args = server_args;
        so.clickhouse_url = o.clickhouse_url;
        so.keep_data = o.keep_data || resumed;
        auto started = ServerProcess::Start(so);
        if (!started.ok()) {
          std::fprintf(stderr, "bench probe: %s\n", started.status().message().c_str());
          return 1;
        }
        server = std::move(started.value());
        auto read_token = server->CreateToken("read");
        auto ingest_token = resumed ? server->CreateToken("ingest") : Result<std::string>(so.token);
        if (!read_token.ok() || !ingest_token.ok()) {
          std::fprintf(stderr, "bench probe: %s\n",
                       (!read_token.ok() ? read_token.status() : ingest_token.status()).message().c_str());
          return 1;
        }
        t = Target{server->otlp(), server->api(), *ingest_token, *read_token, true, server->pid()};
      }
      std::printf("run %d/%d, %s:\n", rep, o.repeat, group.size() == 1 ? SignalName(group[0]) : "mixed");
      LadderState ls;
      if (work && resumable) ls.dir = *work;
      ls.resumed = resumed;
      ls.wanted = wanted_state(group);
      RunResult part = Ladder(o, *levels, group, t, rep, std::move(ls)).Run(run.engine);
      if (!part.stop_error.empty()) {
        std::fprintf(stderr, "bench probe: cannot resume %s: %s\n", o.resume.c_str(), part.stop_error.c_str());
        return 1;
      }
      if (part.stopped) {
        stopped = true;
        stopped_dir = work.value_or("");
      }
      server_died = server_died || part.server_died;
      for (auto& s : part.signals) run.signals.push_back(std::move(s));
      if (part.under_ingest) {
        if (!run.under_ingest) run.under_ingest = UnderIngest{o.under_ingest, 0, 0};
        run.under_ingest->accepted += part.under_ingest->accepted;
        run.under_ingest->seconds += part.under_ingest->seconds;
      }
      if (server) {
        double shutdown_s = 0;
        Status stopped = server->Stop(120, &shutdown_s);
        if (!stopped.ok()) std::fprintf(stderr, "bench probe: server stop: %s\n", stopped.message().c_str());
      }
      server.reset();  // and its ClickHouse
      if (work && !o.keep_data && !resumed) std::filesystem::remove_all(*work);
      if (work && (o.keep_data || resumed)) std::printf("data kept in %s\n", work->c_str());
    }
    runs.push_back(std::move(run));
  }

  if (stopped && resumable) {
    std::printf("stopped%s; continue with the same options and --resume %s\n",
                g_stop ? " by a signal" : " after the --stop-after level", stopped_dir.c_str());
  } else if (stopped) {
    std::printf("stopped after the --stop-after level (nothing kept to resume: add --keep-data)\n");
  }
  PrintTable(runs);
  int mismatches = 0;
  for (const RunResult& run : runs) {
    for (const SignalResult& s : run.signals) {
      for (const LevelResult& l : s.levels) {
        for (const CallResult& c : l.calls) mismatches += c.check.rfind("mismatch", 0) == 0 ? 1 : 0;
      }
    }
  }
  if (o.check) std::printf("check: %d mismatching answer%s\n", mismatches, mismatches == 1 ? "" : "s");
  if (!o.json_out.empty()) {
    std::ofstream f(o.json_out);
    f << ResultJson(o, *levels, machine, started_at, runs, signals);
    if (!f) {
      std::fprintf(stderr, "bench probe: cannot write %s\n", o.json_out.c_str());
      return 1;
    }
    std::printf("results written to %s\n", o.json_out.c_str());
  }
  if (mismatches > 0) return 3;
  if (server_died) return 4;
  return stopped && g_stop ? 130 : 0;
}

void AddProbeCommand(CLI::App* bench) {
  auto o = std::make_shared<ProbeBenchOptions>();
  auto* probe = bench->add_subcommand(
      "probe",
      "Read probe ladder: fill to each level, wait for digestion, time the dashboard calls; find the read cliff");
  probe->add_option("--spawn", o->spawn, "Start a fresh `sightline serve` with this engine per signal (per ladder)")
      ->check(CLI::IsMember({"duckdb", "sqlite", "clickhouse"}));
  probe->add_option("--clickhouse-url", o->clickhouse_url,
                    "With --spawn clickhouse: a running ClickHouse server or cluster node to use, in a database of "
                    "the ladder's own (default: start a clickhouse-server per ladder)");
  probe->add_option("--endpoint", o->endpoint, "OTLP/HTTP base URL of a running server (loopback only)")
      ->capture_default_str();
  probe->add_option("--api", o->api, "API base URL of a running server (loopback only)")->capture_default_str();
  probe->add_option("--token", o->token, "Ingest token (default: $SIGHTLINE_INGEST_TOKEN)");
  probe->add_option("--read-token", o->read_token, "Read token for the API (sightline token create --scope read)");
  probe->add_option("--server-arg", o->server_args, "Extra argument for the spawned server (repeatable)");
  probe->add_option("--signal", o->signal, "spans, logs, metrics, or all")
      ->check(CLI::IsMember({"spans", "traces", "logs", "metrics", "all"}))
      ->capture_default_str();
  probe->add_flag("--mixed", o->mixed, "Fill all the signals at once (interleaved) on one server and probe them all");
  probe->add_option("--levels", o->levels, "Accepted rows per signal to fill to, increasing: 10000,50000 or 1M,10M")
      ->capture_default_str();
  probe->add_option("--batch", o->batch, "Items per fill request (capped at the first level)")
      ->check(CLI::Range(size_t{1}, kMaxGeneratorBatch))
      ->capture_default_str();
  probe->add_flag("--bounded-gauges", o->bounded_gauges,
                  "Fill metrics as double gauges with two decimals in [0, 1000] instead of the default mix "
                  "(histograms, int sums, gauges)");
  probe->add_option("--connections", o->connections, "Fill connections (closed loop)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  probe->add_option("--probes", o->probes, "Times each dashboard call is made per level")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  probe->add_option("--timeout", o->timeout_s, "Client timeout of a call, seconds (spawned: also --query-timeout-ms)")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  probe
      ->add_option("--pass-median", o->pass_median_s,
                   "A level passes when every call's median is at most this, seconds")
      ->check(CLI::Range(0.001, 3600.0))
      ->capture_default_str();
  probe->add_option("--digest-timeout", o->digest_timeout_s, "Most seconds to wait for stable database/WAL sizes")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  probe->add_option("--digest-interval", o->digest_interval_s, "Seconds between deep-health polls")
      ->check(CLI::Range(0.01, 60.0))
      ->capture_default_str();
  probe->add_option("--digest-polls", o->digest_polls, "Consecutive equal readings that mean digested")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  probe->add_option("--under-ingest", o->under_ingest, "Background ingest, items/s, while probing (0 = none)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  probe
      ->add_option("--under-ingest-batch", o->under_ingest_batch, "Items per background request (an SDK fleet's shape)")
      ->check(CLI::Range(size_t{1}, kMaxGeneratorBatch))
      ->capture_default_str();
  probe->add_option("--repeat", o->repeat, "Whole ladders (fresh servers each); medians with min/max")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  probe->add_flag("--check", o->check, "Diff every answer against ground truth; exit 3 on a mismatch");
  probe
      ->add_option("--exact-percentile-rows", o->exact_percentile_rows,
                   "With --check: keep every duration (16 B each) up to this many entry spans or metric points per "
                   "signal, so percentiles are compared too (span percentiles to 1% past --rollup-exact-spans)")
      ->capture_default_str();
  probe->add_option("--seed", o->seed, "Random seed of the generated data")->capture_default_str();
  probe->add_option("--json-out", o->json_out, "Write machine-readable results here");
  probe->add_option("--work-dir", o->work_dir, "Parent of the temporary data directories (default $TMPDIR or /tmp)");
  probe->add_flag("--keep-data", o->keep_data,
                  "Keep the temporary data directories, with the ladder's state (probe_state.json) for --resume; "
                  "SIGINT/SIGTERM then stop the ladder resumably");
  probe
      ->add_option("--resume", o->resume,
                   "Continue the ladder kept in this directory (one --signal or --mixed, --spawn duckdb|sqlite): "
                   "the same --spawn, --signal, --seed, --levels, --batch and --server-arg, else it refuses")
      ->check(CLI::ExistingDirectory);
  probe
      ->add_flag("--reprobe", o->reprobe,
                 "With --resume: probe the kept ladder's largest probed level again without filling more, e.g. "
                 "with --under-ingest")
      ->needs("--resume");
  probe->add_option_function<std::string>(
      "--stop-after",
      [o](const std::string& text) {
        auto rows = ParseLevels(text);
        if (!rows.ok() || rows->size() != 1) throw CLI::ValidationError("--stop-after", "a row count like 20000 or 1M");
        o->stop_after = rows->front();
      },
      "Stop (resumably, with --keep-data) once the level of this many rows is probed, e.g. 100M");
  probe->add_option("--pool-mb", o->pool_mb, "Most memory prebuilt fill payloads may take per chunk")
      ->capture_default_str();
  probe->callback([o] {
    ::signal(SIGPIPE, SIG_IGN);
    int code = RunProbeBench(*o);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace sightline::bench
