#include "bench/raw_append.h"

#include <chrono>
#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "common/json_writer.h"
#include "common/mutex.h"

namespace sightline::bench {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// ---- the plain tables: the server's columns (docs/STORAGE.md), no indexes -------------

constexpr RawType kI = RawType::kInt64, kD = RawType::kDouble, kT = RawType::kText;

constexpr RawColumn kSpanColumns[] = {
    {"project_id", kI},
    {"trace_id_high", kI},
    {"trace_id_low", kI},
    {"span_id", kI},
    {"parent_span_id", kI},
    {"flags", kI},
    {"name", kT},
    {"kind", kI},
    {"start_time_ns", kI},
    {"end_time_ns", kI},
    {"duration_ns", kI},
    {"status_code", kI},
    {"service_name", kT},
    {"http_route", kT},
    {"http_method", kT},
    {"http_status_code", kI},
    {"db_system", kT},
    {"attributes", kT},
    {"dropped_attributes_count", kI},
    {"dropped_events_count", kI},
    {"dropped_links_count", kI},
    {"resource_id", kI},
    {"endpoint", kT},
    {"is_entry", kI},
    {"has_exception", kI},
};
//! The values that nearly every span lacks, for the spans that have one.
constexpr RawColumn kSpanDetailColumns[] = {
    {"project_id", kI},     {"trace_id_high", kI},  {"trace_id_low", kI},
    {"span_id", kI},        {"start_time_ns", kI},  {"service_name", kT},
    {"name", kT},           {"duration_ns", kI},    {"trace_state", kT},
    {"status_message", kT}, {"exception_type", kT}, {"exception_message", kT},
    {"events", kT},         {"links", kT},          {"exception_group", kT},
};
constexpr RawColumn kResourceColumns[] = {
    {"project_id", kI}, {"resource_id", kI},   {"resource_attributes", kT},
    {"scope_name", kT}, {"scope_version", kT}, {"scope_attributes", kT},
};
constexpr RawColumn kLogColumns[] = {
    {"project_id", kI},
    {"time_ns", kI},
    {"observed_time_ns", kI},
    {"severity_number", kI},
    {"severity_text", kT},
    {"body", kT},
    {"body_type", kI},
    {"trace_id_high", kI},
    {"trace_id_low", kI},
    {"span_id", kI},
    {"flags", kI},
    {"service_name", kT},
    {"attributes", kT},
    {"dropped_attributes_count", kI},
    {"resource_id", kI},
    {"event_name", kT},
};
constexpr RawColumn kMetricSeriesColumns[] = {
    {"project_id", kI},  {"series_id", kI},     {"metric_name", kT},  {"metric_type", kI},  {"unit", kT},
    {"description", kT}, {"temporality", kI},   {"is_monotonic", kI}, {"service_name", kT}, {"resource_attributes", kT},
    {"scope_name", kT},  {"scope_version", kT}, {"attributes", kT},
};
constexpr RawColumn kMetricPointColumns[] = {
    {"project_id", kI},    {"series_id", kI}, {"time_ns", kI},       {"start_time_ns", kI},
    {"value", kD},         {"int_value", kI}, {"count", kI},         {"sum", kD},
    {"min", kD},           {"max", kD},       {"bucket_counts", kT}, {"explicit_bounds", kT},
    {"exp_histogram", kT}, {"quantiles", kT}, {"exemplars", kT},     {"flags", kI},
};

const RawTable kTables[] = {
    {"spans", kSpanColumns},
    {"span_resources", kResourceColumns},
    {"logs", kLogColumns},
    {"log_resources", kResourceColumns},
    {"metric_points", kMetricPointColumns},
    {"metric_series", kMetricSeriesColumns},
    {"span_details", kSpanDetailColumns},
};
//! Per signal: the table of its rows, then the table of its resources / series.
const RawTable& MainTable(Signal s) { return kTables[2 * static_cast<int>(s)]; }
const RawTable& KeyedTable(Signal s) { return kTables[2 * static_cast<int>(s) + 1]; }
//! The signal's sparse table (span_details); the generator's logs carry no
//! exception, so none of log_exceptions.
const RawTable* SparseTable(Signal s) { return s == Signal::kSpans ? &kTables[6] : nullptr; }

// ---- generated rows -> table rows -----------------------------------------------------

//! The id's bytes as a big-endian integer, as the server stores id halves.
int64_t BigEndian64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | p[i];
  return static_cast<int64_t>(v);
}

void IdOrNull(RawRows* out, const uint8_t* p, bool present) {
  if (present) out->Int(BigEndian64(p));
  else out->Null();
}

void TextOrNull(RawRows* out, std::string_view v) {
  if (v.empty()) out->Null();
  else out->Text(v);
}

void WriteAttributes(JsonWriter* w, std::span<const Attribute> attributes) {
  w->BeginObject();
  for (const Attribute& a : attributes) {
    w->Key(a.key);
    if (a.is_int) w->Int(a.int_value);
    else w->String(a.string_value);
  }
  w->EndObject();
}

std::string AttributesJson(std::span<const Attribute> attributes) {
  std::string out;
  JsonWriter w(&out);
  WriteAttributes(&w, attributes);
  return out;
}

std::string_view StringAttribute(const AttributeList<6>& list, std::string_view key) {
  const Attribute* a = list.Find(key);
  return a != nullptr && !a->is_int ? a->string_value : std::string_view();
}

//! A resource row the first time the request's resource appears.
void AddResource(const Resource& r, const Scope& scope, int64_t project_id, std::set<uint32_t>* known, RawRows* out) {
  if (!known->insert(r.id).second) return;
  out->Int(project_id);
  out->Int(r.id);
  out->Text(AttributesJson(r.attributes));
  out->Text(scope.name);
  out->Text(scope.version);
  out->Text("{}");
  out->EndRow();
}

void AddRows(const SpanRequest& request, int64_t project_id, std::set<uint32_t>* known, RawRows* main, RawRows* keyed,
             RawRows* details) {
  std::string json;
  for (const SpanRow& s : request.rows) {
    AddResource(*s.resource, request.scope, project_id, known, keyed);
    const bool root = IsZero(s.parent_span_id);
    const std::string_view route = StringAttribute(s.attributes, "http.route");
    const Attribute* status = s.attributes.Find("http.response.status_code");
    std::string_view exception_type, exception_message;
    if (s.event && s.event->name == "exception") {
      if (const Attribute* a = s.event->attributes.Find("exception.type")) exception_type = a->string_value;
      if (const Attribute* a = s.event->attributes.Find("exception.message")) exception_message = a->string_value;
    }
    main->Int(project_id);
    main->Int(BigEndian64(s.trace_id.data()));
    main->Int(BigEndian64(s.trace_id.data() + 8));
    main->Int(BigEndian64(s.span_id.data()));
    IdOrNull(main, s.parent_span_id.data(), !root);
    main->Int(0);  // flags
    main->Text(s.name);
    main->Int(s.kind);
    main->Int(s.start_time_ns);
    main->Int(s.end_time_ns);
    main->Int(s.end_time_ns - s.start_time_ns);
    main->Int(s.status_code);
    main->Text(s.resource->service_name);
    main->Text(route);
    main->Text(StringAttribute(s.attributes, "http.request.method"));
    main->Int(status != nullptr && status->is_int ? status->int_value : 0);
    TextOrNull(main, StringAttribute(s.attributes, "db.system"));
    main->Text(AttributesJson(s.attributes.view()));
    main->Int(0);
    main->Int(0);
    main->Int(0);
    main->Int(s.resource->id);
    main->Text(route.empty() ? s.name : route);
    main->Int(s.kind == 2 || s.kind == 5 || root ? 1 : 0);
    main->Int(exception_type.empty() && exception_message.empty() ? 0 : 1);
    main->EndRow();
    if (s.status_message.empty() && !s.event) continue;  // no trace state or links either
    details->Int(project_id);
    details->Int(BigEndian64(s.trace_id.data()));
    details->Int(BigEndian64(s.trace_id.data() + 8));
    details->Int(BigEndian64(s.span_id.data()));
    details->Int(s.start_time_ns);
    details->Text(s.resource->service_name);
    details->Text(s.name);
    details->Int(s.end_time_ns - s.start_time_ns);
    details->Null();  // trace_state
    TextOrNull(details, s.status_message);
    TextOrNull(details, exception_type);
    TextOrNull(details, exception_message);
    if (s.event) {
      json.clear();
      JsonWriter w(&json);
      w.BeginArray();
      w.BeginObject();
      w.Key("time_unix_nano");
      w.Int(s.event->time_ns);
      w.Key("name");
      w.String(s.event->name);
      w.Key("attributes");
      WriteAttributes(&w, s.event->attributes.view());
      w.Key("dropped_attributes_count");
      w.Int(0);
      w.EndObject();
      w.EndArray();
      details->Text(json);
    } else {
      details->Null();
    }
    details->Null();  // links
    // The server stores the normalised message (common/exception_group.h,
    // behind the bench's include wall); the message itself is the same size.
    TextOrNull(details, exception_message);
    details->EndRow();
  }
}

void AddRows(const LogRequest& request, int64_t project_id, std::set<uint32_t>* known, RawRows* main, RawRows* keyed,
             RawRows*) {
  for (const LogRow& r : request.rows) {
    AddResource(*r.resource, request.scope, project_id, known, keyed);
    main->Int(project_id);
    main->Int(r.time_ns);
    main->Int(r.observed_time_ns);
    main->Int(r.severity_number);
    main->Text(r.severity_text);
    main->Text(r.body);
    main->Int(1);  // body_type: a string
    IdOrNull(main, r.trace_id.data(), r.has_trace);
    IdOrNull(main, r.trace_id.data() + 8, r.has_trace);
    IdOrNull(main, r.span_id.data(), r.has_trace);
    main->Int(r.flags);
    main->Text(r.resource->service_name);
    main->Text(AttributesJson(r.attributes.view()));
    main->Int(0);
    main->Int(r.resource->id);
    main->Null();  // event_name: the generator sends none (nor exceptions, which have a table of their own)
    main->EndRow();
  }
}

int64_t MetricTypeNumber(MetricKind k) {
  switch (k) {
    case MetricKind::kGauge: return 1;
    case MetricKind::kSum: return 2;
    case MetricKind::kHistogram: return 3;
  }
  return 1;
}

void AddRows(const MetricRequest& request, int64_t project_id, std::set<uint32_t>* known, RawRows* main, RawRows* keyed,
             RawRows*) {
  std::string json;
  for (const MetricPoint& p : request.rows) {
    const MetricSeries& series = *p.series;
    const MetricDef& def = *series.metric;
    if (known->insert(series.id).second) {
      keyed->Int(project_id);
      keyed->Int(series.id);
      keyed->Text(def.name);
      keyed->Int(MetricTypeNumber(def.kind));
      keyed->Text(def.unit);
      keyed->Text(def.description);
      keyed->Int(def.kind == MetricKind::kGauge ? 0 : 2);  // cumulative
      keyed->Int(def.kind == MetricKind::kSum ? 1 : 0);
      keyed->Text(series.resource->service_name);
      keyed->Text(AttributesJson(series.resource->attributes));
      keyed->Text(request.scope.name);
      keyed->Text(request.scope.version);
      keyed->Text(AttributesJson(series.labels));
      keyed->EndRow();
    }
    const bool histogram = def.kind == MetricKind::kHistogram;
    main->Int(project_id);
    main->Int(series.id);
    main->Int(p.time_ns);
    main->Int(p.start_time_ns);
    if (histogram) main->Null();
    else main->Double(def.is_int ? static_cast<double>(p.int_value) : p.double_value);
    if (!histogram && def.is_int) main->Int(p.int_value);
    else main->Null();
    main->Int(histogram ? static_cast<int64_t>(p.count) : 0);
    if (histogram) {
      main->Double(p.sum);
      main->Double(p.min);
      main->Double(p.max);
      json.clear();
      JsonWriter counts(&json);
      counts.BeginArray();
      for (uint64_t c : p.bucket_counts) counts.Uint(c);
      counts.EndArray();
      main->Text(json);
      json.clear();
      JsonWriter bounds(&json);
      bounds.BeginArray();
      for (double b : p.explicit_bounds) bounds.Double(b);
      bounds.EndArray();
      main->Text(json);
    } else {
      for (int i = 0; i < 5; ++i) main->Null();  // sum, min, max, bucket_counts, explicit_bounds
    }
    main->Null();  // exp_histogram
    main->Null();  // quantiles
    main->Null();  // exemplars
    main->Int(0);  // flags
    main->EndRow();
  }
}

// ---- one signal ---------------------------------------------------------------------

template <typename Build>
Status AppendSignal(RawEngine* engine, const RawAppendOptions& options, const PayloadPool& pool, Signal signal,
                    uint64_t requests, Build build, RawSignalResult* out) {
  auto writer = engine->NewWriter();
  if (!writer.ok()) return writer.status();
  RawRows main(MainTable(signal)), keyed(KeyedTable(signal));
  // A signal without a sparse table never adds to it.
  RawRows sparse(SparseTable(signal) != nullptr ? *SparseTable(signal) : MainTable(signal));
  std::set<uint32_t> known;  // resource / series ids written (or in the open group)
  uint64_t total = 0;
  for (uint64_t i = 0; i < requests; ++i) total += pool.SignalOf(i) == signal ? 1 : 0;
  uint64_t commits = options.commits[static_cast<int>(signal)];
  if (commits == 0 || commits > total) commits = total;

  auto flush = [&]() -> Status {
    if (main.rows() == 0 && keyed.rows() == 0) return Status::Ok();
    const RawRows* parts[] = {&keyed, &main, &sparse};
    const Clock::time_point t0 = Clock::now();
    Status st = (*writer)->Append(std::span<const RawRows* const>(parts, sparse.rows() > 0 ? 3 : 2));
    out->write_seconds += Since(t0);
    SL_RETURN_IF_ERROR(st);
    out->groups++;
    main.Clear();
    keyed.Clear();
    sparse.Clear();
    return Status::Ok();
  };

  uint64_t n = 0;  // requests of this signal so far
  for (uint64_t i = 0; i < requests; ++i) {
    if (pool.SignalOf(i) != signal) continue;
    // Request n belongs to group n * commits / total: consecutive, equal-sized groups.
    if (n > 0 && n * commits / total != (n - 1) * commits / total) SL_RETURN_IF_ERROR(flush());
    const Clock::time_point t0 = Clock::now();
    const auto request = build(pool.PayloadIndexOf(i));
    AddRows(request, options.project_id, &known, &main, &keyed, &sparse);
    out->prepare_seconds += Since(t0);
    out->rows += request.rows.size();
    out->batches++;
    ++n;
  }
  return flush();
}

}  // namespace

std::span<const RawTable> RawTables() { return kTables; }

Result<RawAppendResult> RunRawAppend(const RawAppendOptions& options, const PayloadPool& pool, uint64_t requests) {
  auto engine = RawEngine::Open(options.engine, options.engine_options, RawTables());
  if (!engine.ok()) return engine.status();
  const LoadGenerator& gen = pool.generator();

  RawAppendResult result;
  std::vector<Signal> signals;
  for (Signal s : pool.signals()) {
    bool seen = false;
    for (Signal t : signals) seen = seen || t == s;
    if (!seen) signals.push_back(s);
  }
  Mutex mu;
  Status first_error;
  std::vector<std::thread> threads;
  for (Signal s : signals) {
    threads.emplace_back([&, s] {
      RawSignalResult r;
      Status st;
      RawEngine* e = engine->get();
      switch (s) {
        case Signal::kSpans:
          st = AppendSignal(
              e, options, pool, s, requests, [&](uint64_t i) { return gen.Spans(i); }, &r);
          break;
        case Signal::kLogs:
          st = AppendSignal(
              e, options, pool, s, requests, [&](uint64_t i) { return gen.Logs(i); }, &r);
          break;
        case Signal::kMetrics:
          st = AppendSignal(
              e, options, pool, s, requests, [&](uint64_t i) { return gen.Metrics(i); }, &r);
          break;
      }
      MutexLock lock(&mu);
      result.signals[static_cast<int>(s)] = r;
      if (!st.ok() && first_error.ok()) first_error = st;
    });
  }
  for (auto& t : threads) t.join();
  const Clock::time_point t0 = Clock::now();
  Status closed = (*engine)->Close();
  result.close_seconds = Since(t0);
  if (!first_error.ok()) return first_error;
  if (!closed.ok()) return closed;
  return result;
}

}  // namespace sightline::bench
