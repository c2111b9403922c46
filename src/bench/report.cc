#include "bench/report.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "bench/bench_common.h"
#include "bench/oltp.h"
#include "bench/svg_chart.h"

namespace sightline::bench {

namespace {

using simdjson::dom::array;
using simdjson::dom::element;
using simdjson::dom::object;

// ---- the published baseline (DESIGN.md) -------------------------------------------

struct PublishedSignal {
  const char* signal;
  double duckdb_write, sqlite_write, duckdb_fleet;  // items/s; fleet = SDK shape, batch 100, DuckDB only
  double duckdb_cliff_rows, duckdb_cliff_ms, sqlite_cliff_rows, sqlite_cliff_ms;
};
constexpr PublishedSignal kPublished[] = {
    {"spans", 95'737, 30'508, 36'577, 10e6, 902, 100e3, 2'270},
    {"logs", 75'225, 4'877, 30'442, 10e6, 85, 100e3, 114},
    {"metrics", 254'242, 61'712, 53'091, 100e6, 3'000, 1e6, 3'850},
};
constexpr const char* kSignals[] = {"spans", "logs", "metrics"};

const PublishedSignal* Published(const std::string& signal) {
  for (const PublishedSignal& p : kPublished) {
    if (signal == p.signal) return &p;
  }
  return nullptr;
}
std::optional<double> PublishedWrite(const std::string& signal, const std::string& engine) {
  const PublishedSignal* p = Published(signal);
  if (p == nullptr) return std::nullopt;
  if (engine == "duckdb") return p->duckdb_write;
  if (engine == "sqlite") return p->sqlite_write;
  return std::nullopt;
}
std::optional<double> PublishedFleet(const std::string& signal, const std::string& engine) {
  const PublishedSignal* p = Published(signal);
  if (p == nullptr || engine != "duckdb") return std::nullopt;
  return p->duckdb_fleet;
}
//! (rows, slowest call's median ms at that level).
std::optional<std::pair<double, double>> PublishedCliff(const std::string& signal, const std::string& engine) {
  const PublishedSignal* p = Published(signal);
  if (p == nullptr) return std::nullopt;
  if (engine == "duckdb") return std::make_pair(p->duckdb_cliff_rows, p->duckdb_cliff_ms);
  if (engine == "sqlite") return std::make_pair(p->sqlite_cliff_rows, p->sqlite_cliff_ms);
  return std::nullopt;
}

//! The fleet of the consumption table: 10 services, each 50 spans/s, 200 log
//! records/s and 10 metric points/s.
double FleetDemandPerS(const std::string& signal) {
  if (signal == "spans") return 500;
  if (signal == "logs") return 2'000;
  if (signal == "metrics") return 100;
  return 0;
}

// ---- number formatting ------------------------------------------------------------

//! 95736.6 -> "95,737".
std::string Commas(double v) {
  if (!std::isfinite(v)) return "-";
  std::string digits = fmt::format("{:.0f}", std::fabs(v)), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return (v < 0 ? "-" : "") + out;
}

//! 10000000 -> "10M", 2500000 -> "2.5M", 100000 -> "100k".
std::string Rows(double v) {
  if (v >= 1e9) return fmt::format("{:.3g}B", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.3g}k", v / 1e3);
  return fmt::format("{:.0f}", v);
}

//! 902 -> "902 ms", 2270 -> "2.27 s", 0.42 -> "0.42 ms".
std::string Ms(double ms) {
  if (!std::isfinite(ms)) return "-";
  if (ms < 1) return fmt::format("{:.2f} ms", ms);
  if (ms < 10) return fmt::format("{:.1f} ms", ms);
  if (ms < 1000) return fmt::format("{:.0f} ms", ms);
  if (ms < 100'000) return fmt::format("{:.3g} s", ms / 1000);
  return Commas(ms / 1000) + " s";
}

std::string RowsTick(double v) { return Rows(v); }

std::string Ratio(double ours, double theirs) { return theirs > 0 ? fmt::format("{:.2f}×", ours / theirs) : "-"; }

std::string Percent(double share) {
  double p = share * 100;
  return p < 0.1 ? fmt::format("{:.3f}%", p) : p < 10 ? fmt::format("{:.2f}%", p) : fmt::format("{:.1f}%", p);
}

std::string Hours(double h) {
  if (h < 1) return fmt::format("{:.0f} min", h * 60);
  std::string s = h < 10 ? fmt::format("{:.1f} h", h) : Commas(h) + " h";
  if (h >= 48) s += " (" + Commas(h / 24) + " days)";
  return s;
}

std::string Bytes(double b) {
  if (b >= 1 << 30) return fmt::format("{:.1f} GiB", b / (1 << 30));
  return fmt::format("{:.1f} MiB", b / (1 << 20));
}

std::string Slug(const std::string& s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    out.push_back(std::isalnum(u) ? static_cast<char>(std::tolower(u)) : '-');
  }
  return out;
}

// ---- JSON access ------------------------------------------------------------------

// Accessors take a simdjson_result so a missing parent object simply yields
// "absent" down the chain instead of needing a check at every level.
using Json = simdjson::simdjson_result<element>;

std::optional<double> Num(Json e, std::string_view key) {
  double d;
  if (e[key].get_double().get(d) != simdjson::SUCCESS) return std::nullopt;
  return d;
}
double NumOr(Json e, std::string_view key, double fallback) { return Num(e, key).value_or(fallback); }
std::string Str(Json e, std::string_view key) {
  std::string_view s;
  if (e[key].get_string().get(s) != simdjson::SUCCESS) return "";
  return std::string(s);
}
bool Bool(Json e, std::string_view key) {
  bool b = false;
  return e[key].get_bool().get(b) == simdjson::SUCCESS && b;
}
std::optional<double> Num(element e, std::string_view key) { return Num(Json(std::move(e)), key); }
double NumOr(element e, std::string_view key, double fallback) { return NumOr(Json(std::move(e)), key, fallback); }
std::string Str(element e, std::string_view key) { return Str(Json(std::move(e)), key); }
bool Bool(element e, std::string_view key) { return Bool(Json(std::move(e)), key); }

//! The array under key, or an empty one when absent.
std::vector<element> Items(Json e, std::string_view key) {
  std::vector<element> out;
  array a;
  if (e[key].get_array().get(a) != simdjson::SUCCESS) return out;
  for (element x : a) out.push_back(x);
  return out;
}
std::vector<element> Items(element e, std::string_view key) { return Items(Json(std::move(e)), key); }

// ---- the model ----------------------------------------------------------------------

struct InputInfo {
  std::string path, kind, started_at, machine;
};

struct IngestRow {
  std::string path, engine, signal;
  double batch = 0;
  Spread rate;
  double p99_ms = 0;
  std::optional<double> raw, ours_over_raw;
};

struct RampStep {
  double batch = 0, target_rps = 0, target_items = 0, achieved_rps = 0, accepted_items = 0, error_pct = 0;
  double p99_ms = 0, rss = 0, cpu = 0;
  bool pass = false;
  std::string fail_reason;
};
struct RampPhase {
  std::string phase;
  std::vector<RampStep> steps;
  int best = -1;
};
struct RampSeries {
  std::string path, engine, signal;
  std::vector<RampPhase> phases;
  double max_items = 0, fleet_max_items = 0;
};

//! A probe's view of one engine and signal, merged over its runs.
struct ProbeSeries {
  std::string path, engine, signal;
  std::vector<double> levels;  // ascending
  std::vector<std::string> calls;
  std::map<double, std::map<std::string, double>> median_ms;  // level -> call -> ms
  std::map<double, bool> pass;                                // level -> every run passed
  std::map<double, std::vector<double>> bytes_per_row;        // level -> each run's (when known)
  bool any_failed = false;
  std::optional<double> cliff_rows;  // the probe's own read_cliff_rows
};

struct OltpRow {
  std::string phase, cache;
  double ops_per_s = 0, p50 = 0, p95 = 0, p99 = 0, p999 = 0;
};
struct OltpRun {
  std::string path;
  double rows = 0, database_bytes = 0;
  std::vector<OltpRow> phases;
};

//! Best measured rates of one signal on one engine, and where they come from.
struct Capacity {
  double best = 0, fleet = 0;
  std::string best_from, fleet_from;
};

struct Model {
  std::vector<InputInfo> inputs;
  std::vector<IngestRow> ingest;
  std::vector<RampSeries> ramps;
  std::vector<ProbeSeries> probes;
  std::vector<OltpRun> oltp;
  std::map<std::pair<std::string, std::string>, Capacity> capacity;  // (signal, engine)

  void Offer(const std::string& signal, const std::string& engine, double rate, bool fleet, const std::string& from) {
    Capacity& c = capacity[{signal, engine}];
    if (rate > c.best) c.best = rate, c.best_from = from;
    if (fleet && rate > c.fleet) c.fleet = rate, c.fleet_from = from;
  }
};

std::string MachineText(element e) {
  element m;
  if (e["machine"].get(m) != simdjson::SUCCESS) return "";
  return fmt::format("{} cores, {}, {} RAM, {}", NumOr(m, "cores", 0), Str(m, "cpu_model"),
                     Bytes(NumOr(m, "mem_bytes", 0)), Str(m, "kernel"));
}

// ---- readers, one per kind ------------------------------------------------------------

void ReadIngest(const std::string& path, element doc, Model* model) {
  Json config = doc["config"];
  std::string engine = Str(config, "engine");
  double batch = NumOr(config, "batch", 0);
  std::vector<element> runs = Items(doc, "runs");
  std::vector<std::string> signals;
  std::string configured = Str(config, "signal");
  if (configured == "all") signals.assign(std::begin(kSignals), std::end(kSignals));
  else signals.push_back(configured == "traces" ? "spans" : configured);
  for (const std::string& sig : signals) {
    IngestRow row{path, engine, sig, batch, {}, 0, std::nullopt, std::nullopt};
    element summary;
    if (doc["summary"][sig].get(summary) == simdjson::SUCCESS) {
      row.rate = {NumOr(summary["items_per_s"], "median", 0), NumOr(summary["items_per_s"], "min", 0),
                  NumOr(summary["items_per_s"], "max", 0)};
      row.p99_ms = NumOr(summary["p99_ms"], "median", 0);
      element raw;
      if (summary["raw_items_per_s"].get(raw) == simdjson::SUCCESS) row.raw = Num(raw, "median");
      if (summary["ours_over_raw"].get(raw) == simdjson::SUCCESS) row.ours_over_raw = Num(raw, "median");
    } else {
      std::vector<double> rates, p99;
      for (element run : runs) {
        element s;
        if (run["signals"][sig].get(s) != simdjson::SUCCESS) continue;
        rates.push_back(NumOr(s, "items_per_s", 0));
        p99.push_back(NumOr(s["latency_ms"], "p99", 0));
      }
      if (rates.empty()) continue;
      row.rate = SpreadOf(rates);
      row.p99_ms = SpreadOf(p99).median;
    }
    model->Offer(sig, engine, row.rate.median, batch > 0 && batch <= 100, path);
    model->ingest.push_back(row);
  }
}

void ReadRamp(const std::string& path, element doc, Model* model) {
  for (element s : Items(doc, "signals")) {
    RampSeries r{path,
                 Str(s, "engine"),
                 Str(s, "signal"),
                 {},
                 NumOr(s, "max_items_per_s", 0),
                 NumOr(s, "fleet_max_items_per_s", 0)};
    for (element p : Items(s, "phases")) {
      RampPhase phase{Str(p, "phase"), {}, static_cast<int>(NumOr(p, "best", -1))};
      for (element st : Items(p, "steps")) {
        bool pass = Bool(st, "pass");
        phase.steps.push_back({NumOr(st, "batch", 0), NumOr(st, "target_rps", 0), NumOr(st, "target_items_per_s", 0),
                               NumOr(st, "achieved_rps", 0), NumOr(st, "accepted_items_per_s", 0),
                               NumOr(st, "error_pct", 0), NumOr(st["latency_ms"], "p99", 0),
                               NumOr(st, "server_rss_bytes", 0), NumOr(st, "server_cpu_cores", 0), pass,
                               Str(st, "fail_reason")});
      }
      r.phases.push_back(std::move(phase));
    }
    model->Offer(r.signal, r.engine, r.max_items, false, path);
    if (r.fleet_max_items > 0) model->Offer(r.signal, r.engine, r.fleet_max_items, true, path);
    model->ramps.push_back(std::move(r));
  }
}

ProbeSeries& ProbeFor(std::vector<ProbeSeries>* all, const std::string& path, const std::string& engine,
                      const std::string& signal) {
  for (ProbeSeries& p : *all) {
    if (p.path == path && p.engine == engine && p.signal == signal) return p;
  }
  all->push_back({path, engine, signal, {}, {}, {}, {}, {}, false, std::nullopt});
  return all->back();
}

void AddCall(ProbeSeries* p, const std::string& call) {
  if (std::find(p->calls.begin(), p->calls.end(), call) == p->calls.end()) p->calls.push_back(call);
}

void AddLevel(ProbeSeries* p, double rows) {
  if (std::find(p->levels.begin(), p->levels.end(), rows) == p->levels.end()) p->levels.push_back(rows);
  std::sort(p->levels.begin(), p->levels.end());
}

void ReadProbe(const std::string& path, element doc, Model* model) {
  std::vector<ProbeSeries> found;
  // Per run: median_ms of every call; the medians over runs come after.
  std::map<std::pair<std::string, std::string>, std::map<double, std::map<std::string, std::vector<double>>>> samples;
  std::map<std::pair<std::string, std::string>, std::vector<std::optional<double>>> cliffs;
  std::string any_engine = Str(doc["config"], "engine");
  for (element run : Items(doc, "runs")) {
    std::string engine = Str(run, "engine");
    if (any_engine.empty()) any_engine = engine;
    for (element s : Items(run, "signals")) {
      std::string sig = Str(s, "signal");
      ProbeSeries& p = ProbeFor(&found, path, engine, sig);
      cliffs[{engine, sig}].push_back(Num(s, "read_cliff_rows"));
      for (element level : Items(s, "levels")) {
        double rows = NumOr(level, "level_rows", 0);
        AddLevel(&p, rows);
        bool pass = Bool(level, "pass");
        p.pass.try_emplace(rows, true);
        p.pass[rows] = p.pass[rows] && pass;
        p.any_failed = p.any_failed || !pass;
        if (auto b = Num(level, "bytes_per_row")) p.bytes_per_row[rows].push_back(*b);
        for (element call : Items(level, "calls")) {
          std::string name = Str(call, "call");
          AddCall(&p, name);
          if (auto ms = Num(call, "median_ms")) samples[{engine, sig}][rows][name].push_back(*ms);
        }
      }
    }
  }
  for (ProbeSeries& p : found) {
    for (auto& [rows, calls] : samples[{p.engine, p.signal}]) {
      for (auto& [name, v] : calls) p.median_ms[rows][name] = SpreadOf(v).median;
    }
    // The conservative cliff over runs: the lowest, and none if any run had none.
    const auto& c = cliffs[{p.engine, p.signal}];
    if (!c.empty() && std::all_of(c.begin(), c.end(), [](const auto& x) { return x.has_value(); })) {
      p.cliff_rows = **std::min_element(c.begin(), c.end());
    }
  }
  // The summary, when present, is the probe's own verdict over its runs.
  object summary;
  if (doc["summary"].get_object().get(summary) == simdjson::SUCCESS) {
    for (auto field : summary) {
      std::string sig(field.key);
      ProbeSeries& p = ProbeFor(&found, path, any_engine, sig);
      p.cliff_rows = Num(field.value, "read_cliff_rows");
      object calls;
      if (field.value["calls"].get_object().get(calls) != simdjson::SUCCESS) continue;
      for (auto call : calls) {
        std::string name(call.key);
        AddCall(&p, name);
        object levels;
        if (call.value.get_object().get(levels) != simdjson::SUCCESS) continue;
        for (auto level : levels) {
          double rows = std::strtod(std::string(level.key).c_str(), nullptr);
          AddLevel(&p, rows);
          if (auto ms = Num(level.value, "median_ms")) p.median_ms[rows][name] = *ms;
        }
      }
    }
  }
  for (ProbeSeries& p : found) model->probes.push_back(std::move(p));
}

void ReadOltp(const std::string& path, element doc, Model* model) {
  OltpRun run{path, NumOr(doc["config"], "rows", 0), NumOr(doc, "database_bytes", 0), {}};
  for (element p : Items(doc, "phases")) {
    Json lat = p["latency_us"];
    run.phases.push_back({Str(p, "phase"), Str(p, "cache"), NumOr(p, "ops_per_s", 0), NumOr(lat, "p50", 0),
                          NumOr(lat, "p95", 0), NumOr(lat, "p99", 0), NumOr(lat, "p999", 0)});
  }
  model->oltp.push_back(std::move(run));
}

Status ReadInput(const ReportInput& in, simdjson::dom::parser* parser, Model* model) {
  element doc;
  if (auto err = parser->parse(in.json).get(doc); err != simdjson::SUCCESS) {
    return Status::InvalidArgument(in.path + ": not valid JSON (" + simdjson::error_message(err) + ")");
  }
  if (!doc.is_object()) return Status::InvalidArgument(in.path + ": not a JSON object");
  std::string kind = Str(doc, "benchmark");
  if (kind.empty()) return Status::InvalidArgument(in.path + ": no \"benchmark\" field; not a sightline bench result");
  double version = NumOr(doc, "version", 1);
  if (version != 1) {
    return Status::InvalidArgument(in.path + ": " + kind + " version " + Commas(version) + " is not understood (1 is)");
  }
  model->inputs.push_back({in.path, kind, Str(doc, "started_at"), MachineText(doc)});
  if (kind == "ingest") ReadIngest(in.path, doc, model);
  else if (kind == "ramp") ReadRamp(in.path, doc, model);
  else if (kind == "probe") ReadProbe(in.path, doc, model);
  else if (kind == "oltp") ReadOltp(in.path, doc, model);
  else return Status::InvalidArgument(in.path + ": unknown benchmark kind \"" + kind + "\"");
  return Status::Ok();
}

// ---- read cliffs --------------------------------------------------------------------

//! What a probe says about its read cliff, honestly: at a level, beyond the
//! ladder (nothing failed), or below its first level (everything failed).
struct Cliff {
  enum Kind { kAt, kBeyond, kBelow, kNone } kind = kNone;
  double rows = 0;                   // the cliff, the top of the ladder, or its first level
  double slowest_ms = std::nan("");  // the slowest call's median at `rows`
};

Cliff CliffOf(const ProbeSeries& p) {
  Cliff c;
  if (p.levels.empty()) return c;
  double top = p.levels.back();
  // Without per-level verdicts (summary only), a cliff below the top level means the next one failed.
  bool failed = p.any_failed || (p.pass.empty() && (!p.cliff_rows || *p.cliff_rows < top));
  if (!failed) c.kind = Cliff::kBeyond, c.rows = top;
  else if (p.cliff_rows) c.kind = Cliff::kAt, c.rows = *p.cliff_rows;
  else c.kind = Cliff::kBelow, c.rows = p.levels.front();
  auto at = p.median_ms.find(c.rows);
  if (at != p.median_ms.end() && !at->second.empty()) {
    c.slowest_ms = 0;
    for (const auto& [call, ms] : at->second) c.slowest_ms = std::max(c.slowest_ms, ms);
  }
  return c;
}

std::string CliffText(const Cliff& c) {
  std::string ms = std::isfinite(c.slowest_ms) ? " (" + Ms(c.slowest_ms) + ")" : "";
  switch (c.kind) {
    case Cliff::kAt: return Rows(c.rows) + ms;
    case Cliff::kBeyond: return "none up to " + Rows(c.rows) + ms;
    case Cliff::kBelow: return "below " + Rows(c.rows) + " (first level failed)";
    case Cliff::kNone: break;
  }
  return "-";
}

std::string HoursToCliff(const Cliff& c, double per_hour) {
  if (per_hour <= 0) return "-";
  double h = c.rows / per_hour;
  switch (c.kind) {
    case Cliff::kAt: return Hours(h);
    case Cliff::kBeyond: return "> " + Hours(h) + " (no cliff up to " + Rows(c.rows) + " rows)";
    case Cliff::kBelow: return "< " + Hours(h) + " (failed at " + Rows(c.rows) + " rows)";
    case Cliff::kNone: break;
  }
  return "-";
}

// ---- rendering ------------------------------------------------------------------------

std::vector<std::string> EnginesOf(const Model& m) {
  std::vector<std::string> engines;
  auto add = [&](const std::string& e) {
    if (!e.empty() && std::find(engines.begin(), engines.end(), e) == engines.end()) engines.push_back(e);
  };
  add("duckdb");
  add("sqlite");
  for (const auto& [key, cap] : m.capacity) add(key.second);
  for (const ProbeSeries& p : m.probes) add(p.engine);
  std::vector<std::string> present;
  for (const std::string& e : engines) {
    bool seen =
        std::any_of(m.capacity.begin(), m.capacity.end(), [&](const auto& kv) { return kv.first.second == e; }) ||
        std::any_of(m.probes.begin(), m.probes.end(), [&](const ProbeSeries& p) { return p.engine == e; });
    if (seen) present.push_back(e);
  }
  return present;
}

const ProbeSeries* ProbeOf(const Model& m, const std::string& signal, const std::string& engine) {
  const ProbeSeries* found = nullptr;
  for (const ProbeSeries& p : m.probes) {
    if (p.signal == signal && p.engine == engine) found = &p;  // the last file given wins
  }
  return found;
}

void RenderHeader(const Model& m, std::string* md) {
  *md +=
      "# Sightline benchmark report\n\nInputs, in the order given:\n\n"
      "| file | benchmark | started at | machine |\n|---|---|---|---|\n";
  for (const InputInfo& in : m.inputs) {
    *md += fmt::format("| `{}` | {} | {} | {} |\n", in.path, in.kind, in.started_at.empty() ? "-" : in.started_at,
                       in.machine.empty() ? "-" : in.machine);
  }
  *md +=
      "\nPublished figures are DESIGN.md's baselines: the SQLite-vs-DuckDB comparison (2 vCPU, 8 GB) and, for "
      "OLTP, the SQLite reference (2 vCPU, 3.7 GB). Ratios are ours ÷ published.\n";
}

void RenderThroughput(const Model& m, std::string* md, std::vector<std::pair<std::string, std::string>>* charts) {
  if (m.capacity.empty()) return;
  *md +=
      "\n## Ingest throughput vs the published baseline\n\n"
      "Best = the highest of every ingest run's median and every ramp's `max_items_per_s`; fleet = batch-100 "
      "(SDK-shaped) requests: ingest runs with `batch` <= 100 and ramps' `fleet_max_items_per_s`.\n\n"
      "| signal | engine | best items/s | published | ours/published | fleet items/s | published fleet | "
      "ours/published | best from |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n";
  BarChart chart{"Best ingest rate vs published", "items/s", {}, false, nullptr};
  for (const char* sig : kSignals) {
    for (const std::string& engine : EnginesOf(m)) {
      auto it = m.capacity.find({sig, engine});
      if (it == m.capacity.end()) continue;
      const Capacity& c = it->second;
      auto pub = PublishedWrite(sig, engine);
      auto pub_fleet = PublishedFleet(sig, engine);
      *md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | `{}` |\n", sig, engine, Commas(c.best),
                         pub ? Commas(*pub) : "-", pub ? Ratio(c.best, *pub) : "-", c.fleet > 0 ? Commas(c.fleet) : "-",
                         pub_fleet ? Commas(*pub_fleet) : "-",
                         c.fleet > 0 && pub_fleet ? Ratio(c.fleet, *pub_fleet) : "-", c.best_from);
      chart.bars.push_back({sig, engine + " ours", c.best, false, engine, ""});
      if (pub) chart.bars.push_back({sig, engine + " published", *pub, true, engine, ""});
    }
  }
  charts->emplace_back("ingest-vs-published.svg", RenderBarChart(chart));
  *md += "\n![best ingest rate vs published](ingest-vs-published.svg)\n";
}

void RenderIngestRuns(const Model& m, std::string* md) {
  if (m.ingest.empty()) return;
  *md +=
      "\n## Ingest runs (`bench ingest`)\n\n| file | engine | signal | batch | items/s median [min .. max] | "
      "p99 | raw engine items/s | ours/raw |\n|---|---|---|---:|---:|---:|---:|---:|\n";
  for (const IngestRow& r : m.ingest) {
    *md += fmt::format("| `{}` | {} | {} | {} | {} [{} .. {}] | {} | {} | {} |\n", r.path, r.engine, r.signal,
                       Commas(r.batch), Commas(r.rate.median), Commas(r.rate.min), Commas(r.rate.max), Ms(r.p99_ms),
                       r.raw ? Commas(*r.raw) : "-", r.ours_over_raw ? fmt::format("{:.2f}", *r.ours_over_raw) : "-");
  }
}

void RenderRamps(const Model& m, std::string* md, std::vector<std::pair<std::string, std::string>>* charts) {
  if (m.ramps.empty()) return;
  *md +=
      "\n## Throughput ramps (`bench ramp`)\n\nA step passes at < 5% errors and >= 70% of its target rate; "
      "**bold** = the phase's best step.\n";
  for (const RampSeries& r : m.ramps) {
    *md += fmt::format("\n### {} on {} (`{}`)\n\nmax {} items/s; fleet (batch 100) max {}\n", r.signal, r.engine,
                       r.path, Commas(r.max_items),
                       r.fleet_max_items > 0 ? Commas(r.fleet_max_items) + " items/s" : "not measured");
    for (const RampPhase& p : r.phases) {
      *md += fmt::format(
          "\n**{}** phase\n\n| step | batch | target req/s | achieved req/s | target items/s | "
          "accepted items/s | errors | p99 | server RSS | server cores | verdict |\n"
          "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
          p.phase);
      LineChart chart{fmt::format("{} on {}: {} ramp", r.signal, r.engine, p.phase),
                      "step (batch × target req/s)",
                      "items/s",
                      {},
                      {{"target items/s", {}, true}, {"accepted items/s", {}, false}},
                      false,
                      std::nullopt,
                      ""};
      for (size_t i = 0; i < p.steps.size(); ++i) {
        const RampStep& s = p.steps[i];
        std::string b = static_cast<int>(i) == p.best ? "**" : "";
        *md += fmt::format("| {}{}{} | {} | {:.1f} | {:.1f} | {} | {}{}{} | {:.1f}% | {} | {} | {:.2f} | {} |\n", b,
                           i + 1, b, Commas(s.batch), s.target_rps, s.achieved_rps, Commas(s.target_items), b,
                           Commas(s.accepted_items), b, s.error_pct, Ms(s.p99_ms), Bytes(s.rss), s.cpu,
                           s.pass ? "pass" : "fail: " + (s.fail_reason.empty() ? "-" : s.fail_reason));
        chart.categories.push_back(fmt::format("{}×{:g}", Commas(s.batch), s.target_rps));
        chart.series[0].y.push_back(s.target_items);
        chart.series[1].y.push_back(s.accepted_items);
      }
      std::string name = "ramp-" + Slug(r.engine) + "-" + Slug(r.signal) + "-" + Slug(p.phase) + ".svg";
      charts->emplace_back(name, RenderLineChart(chart));
      *md += fmt::format("\n![{} {} {} ramp]({})\n", r.engine, r.signal, p.phase, name);
    }
  }
}

void RenderProbes(const Model& m, std::string* md, std::vector<std::pair<std::string, std::string>>* charts) {
  if (m.probes.empty()) return;
  *md +=
      "\n## Read latency per level (`bench probe`)\n\nMedian of the probes per call; a level passes when every "
      "call's median is <= 5 s and none timed out.\n";
  for (const ProbeSeries& p : m.probes) {
    *md += fmt::format("\n### {} on {} (`{}`)\n\n| rows | B/row |", p.signal, p.engine, p.path);
    for (const std::string& call : p.calls) *md += " " + call + " |";
    *md += " verdict |\n|---:|---:|";
    for (size_t i = 0; i < p.calls.size(); ++i) *md += "---:|";
    *md += "---|\n";
    LineChart chart{fmt::format("{} on {}: read latency per level", p.signal, p.engine),
                    "rows stored",
                    "median ms (log)",
                    {},
                    {},
                    true,
                    5000.0,
                    "5 s limit"};
    for (const std::string& call : p.calls) chart.series.push_back({call, {}, false});
    for (double level : p.levels) {
      *md += "| " + Rows(level) + " |";
      auto per_row = p.bytes_per_row.find(level);
      *md += per_row == p.bytes_per_row.end() ? std::string(" - |")
                                              : fmt::format(" {:.1f} |", SpreadOf(per_row->second).median);
      chart.categories.push_back(Rows(level));
      auto row = p.median_ms.find(level);
      for (size_t i = 0; i < p.calls.size(); ++i) {
        std::optional<double> ms;
        if (row != p.median_ms.end()) {
          auto c = row->second.find(p.calls[i]);
          if (c != row->second.end()) ms = c->second;
        }
        *md += " " + (ms ? Ms(*ms) : "-") + " |";
        chart.series[i].y.push_back(ms.value_or(std::nan("")));
      }
      auto pass = p.pass.find(level);
      *md += std::string(" ") + (pass == p.pass.end() ? "-" : pass->second ? "pass" : "fail") + " |\n";
    }
    std::string name = "read-" + Slug(p.engine) + "-" + Slug(p.signal) + ".svg";
    charts->emplace_back(name, RenderLineChart(chart));
    *md += fmt::format("\n![{} {} read latency]({})\n", p.engine, p.signal, name);
  }

  *md +=
      "\n## Read cliffs vs the published baseline\n\nThe cliff is the last level that passed; in brackets the "
      "slowest call's median there.\n\n| signal | engine | our cliff | published cliff |\n|---|---|---|---|\n";
  BarChart chart{"Read cliff (rows)", "rows (log)", {}, true, RowsTick};
  for (const char* sig : kSignals) {
    for (const std::string& engine : EnginesOf(m)) {
      const ProbeSeries* p = ProbeOf(m, sig, engine);
      if (p == nullptr) continue;
      Cliff c = CliffOf(*p);
      auto pub = PublishedCliff(sig, engine);
      *md += fmt::format("| {} | {} | {} | {} |\n", sig, engine, CliffText(c),
                         pub ? Rows(pub->first) + " (" + Ms(pub->second) + ")" : "-");
      std::string text = c.kind == Cliff::kBeyond  ? "> " + Rows(c.rows)
                         : c.kind == Cliff::kBelow ? "< " + Rows(c.rows)
                                                   : "";
      if (c.kind != Cliff::kNone) chart.bars.push_back({sig, engine + " ours", c.rows, false, engine, text});
      if (pub) chart.bars.push_back({sig, engine + " published", pub->first, true, engine, ""});
    }
  }
  charts->emplace_back("read-cliffs.svg", RenderBarChart(chart));
  *md += "\n![read cliffs](read-cliffs.svg)\n";
}

void RenderOltp(const Model& m, std::string* md) {
  for (const OltpRun& r : m.oltp) {
    *md += fmt::format(
        "\n## SQLite OLTP (`bench oltp`, `{}`)\n\n{} rows, database {} after the bulk insert. "
        "`uncached` runs with a small page cache, no mmap and the file dropped from the OS cache "
        "before each phase.\n\n| phase | cache | ops/s | p50 µs | p95 µs | p99 µs | p999 µs | "
        "published ops/s | ours/published |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        r.path, Commas(r.rows), Bytes(r.database_bytes));
    for (const OltpRow& p : r.phases) {
      auto pub = PublishedOltpOpsPerS(p.phase, p.cache);
      *md += fmt::format("| {} | {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {} | {} |\n", p.phase, p.cache,
                         Commas(p.ops_per_s), p.p50, p.p95, p.p99, p.p999, pub ? Commas(*pub) : "-",
                         pub ? Ratio(p.ops_per_s, *pub) : "-");
    }
  }
}

void RenderFleet(const Model& m, std::string* md) {
  if (m.capacity.empty() && m.probes.empty()) return;
  *md +=
      "\n## Fleet consumption: 10 services × (50 spans/s, 200 log records/s, 10 metric points/s)\n\n"
      "Share = the fleet's rate ÷ our measured rate (fleet-shaped batch-100 capacity, and the best one). "
      "Hours to the read cliff = cliff rows ÷ rows per hour.\n\n"
      "| signal | fleet rate | engine | share of fleet-shape capacity | share of best capacity | "
      "hours to our read cliff | hours to the published cliff |\n|---|---:|---|---:|---:|---|---|\n";
  for (const char* sig : kSignals) {
    double demand = FleetDemandPerS(sig), per_hour = demand * 3600;
    for (const std::string& engine : EnginesOf(m)) {
      auto cap = m.capacity.find({sig, engine});
      const ProbeSeries* probe = ProbeOf(m, sig, engine);
      if (cap == m.capacity.end() && probe == nullptr) continue;
      std::string fleet = "-", best = "-", ours = "-", published = "-";
      if (cap != m.capacity.end() && cap->second.fleet > 0) fleet = Percent(demand / cap->second.fleet);
      if (cap != m.capacity.end() && cap->second.best > 0) best = Percent(demand / cap->second.best);
      if (probe != nullptr) ours = HoursToCliff(CliffOf(*probe), per_hour);
      if (auto pub = PublishedCliff(sig, engine)) published = Hours(pub->first / per_hour);
      *md += fmt::format("| {} | {}/s | {} | {} | {} | {} | {} |\n", sig, Commas(demand), engine, fleet, best, ours,
                         published);
    }
  }
}

}  // namespace

Result<ReportFiles> BuildReport(const std::vector<ReportInput>& inputs) {
  if (inputs.empty()) return Status::InvalidArgument("no input files");
  Model model;
  simdjson::dom::parser parser;
  for (const ReportInput& in : inputs) SL_RETURN_IF_ERROR(ReadInput(in, &parser, &model));
  ReportFiles out;
  RenderHeader(model, &out.markdown);
  RenderThroughput(model, &out.markdown, &out.charts);
  RenderFleet(model, &out.markdown);
  RenderProbes(model, &out.markdown, &out.charts);
  RenderRamps(model, &out.markdown, &out.charts);
  RenderIngestRuns(model, &out.markdown);
  RenderOltp(model, &out.markdown);
  return out;
}

int RunReport(const ReportOptions& o) {
  std::vector<ReportInput> inputs;
  for (const std::string& path : o.inputs) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream text;
    text << f.rdbuf();
    if (!f.good()) {
      std::fprintf(stderr, "bench report: cannot read %s\n", path.c_str());
      return 1;
    }
    inputs.push_back({path, text.str()});
  }
  auto report = BuildReport(inputs);
  if (!report.ok()) {
    std::fprintf(stderr, "bench report: %s\n", report.status().message().c_str());
    return 1;
  }
  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream f(o.out_dir + "/" + name, std::ios::binary | std::ios::trunc);
    f << text;
    return f.good();
  };
  bool ok = write("REPORT.md", report->markdown);
  for (const auto& [name, svg] : report->charts) ok = ok && write(name, svg);
  if (!ok) {
    std::fprintf(stderr, "bench report: cannot write into %s\n", o.out_dir.c_str());
    return 1;
  }
  std::printf("%s/REPORT.md and %zu charts\n", o.out_dir.c_str(), report->charts.size());
  return 0;
}

void AddReportCommand(CLI::App* bench) {
  auto o = std::make_shared<ReportOptions>();
  auto* c = bench->add_subcommand(
      "report", "Markdown report with SVG charts from bench JSON files, beside the published baseline");
  c->add_option("inputs", o->inputs, "JSON results of bench ingest, ramp, probe or oltp")
      ->required()
      ->check(CLI::ExistingFile);
  c->add_option("--out", o->out_dir, "Directory for REPORT.md and the charts")->capture_default_str();
  c->callback([o] {
    int code = RunReport(*o);
    if (code != 0) throw CLI::RuntimeError(code);
  });
}

}  // namespace sightline::bench
