#include "bench/load_generator.h"

#include <libdeflate.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace sightline::bench {
namespace {

// ---- randomness -------------------------------------------------------------

//! splitmix64's finaliser: a bijection on 64-bit values.
inline uint64_t Mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133a32ebull;
  return z ^ (z >> 31);
}

//! xoshiro256**: fast, good enough for benchmark data.
class Rng {
 public:
  explicit Rng(uint64_t seed) {
    for (auto& s : s_) s = seed = Mix64(seed);
  }
  uint64_t Next() {
    uint64_t result = Rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = Rotl(s_[3], 45);
    return result;
  }
  //! Uniform in [0, n).
  uint64_t Below(uint64_t n) { return static_cast<uint64_t>((static_cast<unsigned __int128>(Next()) * n) >> 64); }
  //! Uniform in [lo, hi].
  int64_t Range(int64_t lo, int64_t hi) { return lo + static_cast<int64_t>(Below(static_cast<uint64_t>(hi - lo + 1))); }
  double Unit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  bool Percent(int p) { return Below(100) < static_cast<uint64_t>(p); }

 private:
  static uint64_t Rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

// Distinct salts per id kind so span and trace ids never coincide.
constexpr uint64_t kSpanIdSalt = 0x5350414e49445331ull;
constexpr uint64_t kTraceIdSalt = 0x5452414345494431ull;
constexpr uint64_t kLogTraceSalt = 0x4c4f475452414345ull;

//! A unique, random-looking 8-byte id for (index, ordinal, salt): Mix64 is a
//! bijection, so distinct (index, ordinal) pairs give distinct ids.
inline uint64_t UniqueBits(uint64_t index, uint64_t ordinal, uint64_t salt) {
  uint64_t v = Mix64(((index << 24) | ordinal) ^ salt);
  return v == 0 ? 1 : v;  // all-zero ids are invalid
}
inline void Store8(uint64_t v, uint8_t* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void UniqueId8(uint64_t index, uint64_t ordinal, uint64_t salt, uint8_t out[8]) {
  Store8(UniqueBits(index, ordinal, salt), out);
}
//! 16 bytes: the unique half first, then a random-looking second half.
inline void UniqueId16(uint64_t index, uint64_t ordinal, uint64_t salt, uint8_t out[16]) {
  uint64_t v = UniqueBits(index, ordinal, salt);
  Store8(v, out);
  Store8(Mix64(v ^ 0x243f6a8885a308d3ull), out + 8);
}

// ---- the catalogue -----------------------------------------------------------

constexpr int kServices = 10;
constexpr int kEndpointsPerService = 5;

struct Service {
  const char* name;
  const char* language;
  const char* version;
  const char* resource;  // the REST resource its endpoints serve
};
constexpr Service kServiceList[kServices] = {
    {"frontend", "nodejs", "2.14.0", "pages"},   {"checkout", "go", "1.9.3", "orders"},
    {"cart", "dotnet", "3.2.1", "carts"},        {"payment", "java", "5.0.7", "payments"},
    {"shipping", "go", "1.4.0", "shipments"},    {"inventory", "java", "2.8.12", "items"},
    {"catalog", "python", "0.33.1", "products"}, {"auth", "go", "4.1.0", "sessions"},
    {"search", "rust", "0.9.4", "queries"},      {"recommendation", "python", "1.0.2", "suggestions"},
};

struct Endpoint {
  std::string_view method;
  std::string_view route;
  std::string_view span_name;  // "GET /api/v1/orders/{id}"
  bool post = false;           // answers 201 when it succeeds
};

struct ChildKind {
  const char* name;
  int kind;               // OTLP SpanKind: 1 internal, 3 client
  const char* db_system;  // nullptr for internal spans
  const char* statement;
};
constexpr ChildKind kChildren[] = {
    {"SELECT", 3, "postgresql", "SELECT * FROM {t} WHERE id = $1"},
    {"INSERT", 3, "postgresql", "INSERT INTO {t} (id, body) VALUES ($1, $2)"},
    {"UPDATE", 3, "postgresql", "UPDATE {t} SET body = $2 WHERE id = $1"},
    {"GET", 3, "redis", "GET {t}:*"},
    {"SET", 3, "redis", "SET {t}:* EX 300"},
    {"serialize", 1, nullptr, nullptr},
    {"validate", 1, nullptr, nullptr},
    {"authorize", 1, nullptr, nullptr},
    {"render", 1, nullptr, nullptr},
    {"cache.lookup", 1, nullptr, nullptr},
};
constexpr int kChildCount = static_cast<int>(sizeof(kChildren) / sizeof(kChildren[0]));

constexpr const char* kUserAgents[] = {
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 "
     "Safari/605.1.15"),
    "okhttp/4.12.0",
    "Go-http-client/2.0",
    "python-requests/2.31.0",
};

struct ErrorKind {
  int status;
  const char* exception_type;
  const char* message;
};
constexpr ErrorKind kErrors[] = {
    {500, "java.lang.NullPointerException", "Cannot invoke \"Order.getId()\" because \"order\" is null"},
    {500, "TimeoutError", "upstream request timed out after 3000 ms"},
    {503, "ConnectionRefusedError", "connection refused: db-primary:5432"},
    {500, "ValueError", "invalid literal for int() with base 10: 'abc'"},
    {502, "BadGatewayError", "upstream returned an invalid response"},
};

constexpr const char* kWords[] = {
    "request",   "completed", "failed",     "user",      "order",     "payment",    "retry",    "timeout",
    "cache",     "miss",      "hit",        "session",   "created",   "updated",    "deleted",  "queue",
    "message",   "processed", "latency",    "exceeded",  "threshold", "connection", "pool",     "exhausted",
    "opened",    "closed",    "token",      "expired",   "refreshed", "invalid",    "input",    "rejected",
    "accepted",  "shipment",  "dispatched", "warehouse", "item",      "reserved",   "released", "price",
    "updated",   "inventory", "low",        "stock",     "search",    "index",      "rebuilt",  "query",
    "slow",      "plan",      "scan",       "rows",      "returned",  "worker",     "started",  "stopped",
    "heartbeat", "missed",    "leader",     "elected",   "config",    "reloaded",   "disk",     "usage",
};
constexpr int kWordCount = static_cast<int>(sizeof(kWords) / sizeof(kWords[0]));

struct Severity {
  int number;
  const char* text;
  int weight;  // percent
};
constexpr Severity kSeverities[] = {{5, "DEBUG", 15}, {9, "INFO", 70}, {13, "WARN", 10}, {17, "ERROR", 5}};

struct MetricSpec {
  const char* name;
  const char* description;
  const char* unit;
  MetricKind kind;
  bool is_int;
};
// Per service: 20 series (label sets below).
constexpr MetricSpec kMetricSpecs[] = {
    {"http.server.request.duration", "Duration of HTTP server requests.", "s", MetricKind::kHistogram, false},
    {"http.server.request.count", "Number of HTTP server requests.", "{request}", MetricKind::kSum, true},
    {"process.cpu.utilization", "CPU utilization of the process.", "1", MetricKind::kGauge, false},
    {"process.memory.usage", "Resident memory of the process.", "By", MetricKind::kGauge, true},
    {"db.client.connections.usage", "Connections in the pool by state.", "{connection}", MetricKind::kGauge, true},
    {"system.network.io", "Bytes transferred.", "By", MetricKind::kSum, true},
    {"runtime.gc.count", "Garbage collections.", "{collection}", MetricKind::kSum, true},
    {"messaging.queue.depth", "Messages waiting in the queue.", "{message}", MetricKind::kGauge, true},
};
constexpr int kMetricDefCount = static_cast<int>(sizeof(kMetricSpecs) / sizeof(kMetricSpecs[0]));
constexpr double kBounds[kHistogramBuckets - 1] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

//! Everything fixed about the data, built once and never freed: rows point
//! into it. Strings live in `text` (a deque never moves its elements).
struct Catalogue {
  std::deque<std::string> text;
  std::deque<std::vector<Attribute>> attribute_lists;
  std::array<Resource, kServices> resources;
  std::array<std::array<Endpoint, kEndpointsPerService>, kServices> endpoints;
  std::array<std::array<std::string_view, kChildCount>, kServices> child_names;  // "SELECT orders" / "serialize"
  std::array<std::array<std::string_view, kChildCount>, kServices> statements;   // table substituted
  std::array<MetricDef, kMetricDefCount> metrics;
  std::array<std::vector<MetricSeries>, kServices> series;  // 20 per service, grouped by metric

  std::string_view Intern(std::string s) { return text.emplace_back(std::move(s)); }
  std::span<const Attribute> List(std::vector<Attribute> list) { return attribute_lists.emplace_back(std::move(list)); }

  //! `gauges`: every metric a double gauge (GeneratorOptions::bounded_gauges).
  explicit Catalogue(bool gauges) {
    static const char* kMethods[kEndpointsPerService] = {"GET", "GET", "POST", "PUT", "DELETE"};
    static const char* kSuffix[kEndpointsPerService] = {"", "/{id}", "", "/{id}", "/{id}"};
    for (int m = 0; m < kMetricDefCount; ++m) {
      const MetricSpec& spec = kMetricSpecs[m];
      metrics[m] = gauges ? MetricDef{spec.name, spec.description, spec.unit, MetricKind::kGauge, false}
                          : MetricDef{spec.name, spec.description, spec.unit, spec.kind, spec.is_int};
    }
    uint32_t series_id = 0;
    for (int s = 0; s < kServices; ++s) {
      const Service& svc = kServiceList[s];
      const std::string_view host = Intern(std::string(svc.name) + "-7d9f8b6c5-" + std::to_string(10 + s * 7));
      resources[s] = Resource{static_cast<uint32_t>(s + 1), svc.name,
                              List({{"service.name", svc.name},
                                    {"service.version", svc.version},
                                    {"service.namespace", "shop"},
                                    {"deployment.environment", "production"},
                                    {"host.name", host},
                                    {"telemetry.sdk.name", "opentelemetry"},
                                    {"telemetry.sdk.language", svc.language}})};
      for (int e = 0; e < kEndpointsPerService; ++e) {
        Endpoint& ep = endpoints[s][e];
        ep.method = kMethods[e];
        std::string route = std::string("/api/v1/") + svc.resource + kSuffix[e];
        if (e == 1 && s % 2 == 0) route += "/history";
        ep.route = Intern(route);
        ep.span_name = Intern(std::string(ep.method) + " " + route);
        ep.post = e == 2;
      }
      for (int c = 0; c < kChildCount; ++c) {
        const ChildKind& ck = kChildren[c];
        child_names[s][c] = ck.db_system != nullptr ? Intern(std::string(ck.name) + " " + svc.resource) : ck.name;
        std::string st = ck.statement ? ck.statement : "";
        size_t at = st.find("{t}");
        if (at != std::string::npos) st.replace(at, 3, svc.resource);
        statements[s][c] = Intern(st);
      }
      auto& out = series[s];
      auto add = [&](int metric, std::vector<Attribute> labels) {
        out.push_back(MetricSeries{++series_id, &resources[s], &metrics[metric], List(std::move(labels))});
      };
      for (int e = 0; e < kEndpointsPerService; ++e) {  // duration histogram: one per endpoint
        add(0, {{"http.request.method", endpoints[s][e].method},
                {"http.route", endpoints[s][e].route},
                {"http.response.status_code", {}, 200, true}});
      }
      for (int e = 0; e < kEndpointsPerService; ++e) {  // request count: one per endpoint
        add(1, {{"http.request.method", endpoints[s][e].method},
                {"http.route", endpoints[s][e].route},
                {"http.response.status_code", {}, 200, true}});
      }
      add(2, {{"cpu.mode", "user"}});
      add(2, {{"cpu.mode", "system"}});
      add(3, {});
      add(4, {{"pool.name", "main"}, {"state", "idle"}});
      add(4, {{"pool.name", "main"}, {"state", "used"}});
      add(5, {{"network.io.direction", "receive"}, {"network.interface.name", "eth0"}});
      add(5, {{"network.io.direction", "transmit"}, {"network.interface.name", "eth0"}});
      add(6, {{"gc", "minor"}});
      add(6, {{"gc", "major"}});
      add(7, {{"messaging.destination.name", Intern(std::string(svc.resource) + ".events")}});
    }
  }
};

const Catalogue& Cat(bool gauges = false) {
  static const Catalogue* mix = new Catalogue(false);
  static const Catalogue* bounded = new Catalogue(true);
  return gauges ? *bounded : *mix;
}

//! Which services a request carries: one (SDK shape) or all (Collector shape).
void ServicesFor(const GeneratorOptions& o, uint64_t index, int* first, int* count) {
  if (o.batch <= o.sdk_batch_limit) {
    *first = static_cast<int>(index % kServices);
    *count = 1;
  } else {
    *first = 0;
    *count = kServices;
  }
}

//! Splits n items over k buckets as evenly as possible.
size_t Share(size_t n, size_t k, size_t i) { return n / k + (i < n % k ? 1 : 0); }

constexpr int64_t kNsPerSecond = 1000000000;

//! base + n * step in wrapping arithmetic: payload numbers far up (the
//! warm-up's start at 2^39) overflow int64 nanoseconds, which must not be UB.
inline int64_t TimeAt(int64_t base, uint64_t n, int64_t step) {
  return static_cast<int64_t>(static_cast<uint64_t>(base) + n * static_cast<uint64_t>(step));
}

}  // namespace

// ---- spans ---------------------------------------------------------------------

SpanRequest LoadGenerator::Spans(uint64_t index) const {
  const Catalogue& cat = Cat();
  Rng rng(Mix64(options_.seed) ^ Mix64(index * 3 + 0));
  int first = 0, count = 0;
  ServicesFor(options_, index, &first, &count);
  const int64_t window = options_.time_step_ns;  // each request covers one step of data time
  const int64_t window_start = TimeAt(options_.base_time_ns, index, window);
  uint64_t ordinal = 0;   // span ordinal within the request: part of the span id
  uint64_t trace_no = 0;  // trace ordinal within the request: part of the trace id
  SpanRequest out;
  out.scope = {"io.opentelemetry.http", "1.21.0"};
  out.rows.reserve(options_.batch);
  for (int k = 0; k < count; ++k) {
    const int s = first + k;
    const Resource* resource = &cat.resources[s];
    size_t spans_left = Share(options_.batch, static_cast<size_t>(count), static_cast<size_t>(k));
    while (spans_left > 0) {
      // One trace: a SERVER root and 0..7 children, all in this request.
      size_t size = std::min<size_t>(spans_left, static_cast<size_t>(rng.Range(1, 8)));
      spans_left -= size;
      TraceId trace_id;
      UniqueId16(index, trace_no++, kTraceIdSalt, trace_id.data());
      const Endpoint& ep = cat.endpoints[s][rng.Below(kEndpointsPerService)];
      const int64_t start = window_start + rng.Range(0, window - 1);
      const int64_t duration = rng.Range(1000000, 500000000);  // 1..500 ms
      const bool error = rng.Percent(5);
      const ErrorKind& err = kErrors[rng.Below(5)];
      const int status = error ? err.status : (rng.Percent(3) ? 404 : (ep.post ? 201 : 200));

      SpanRow& root = out.rows.emplace_back();
      root.resource = resource;
      root.trace_id = trace_id;
      UniqueId8(index, ordinal++, kSpanIdSalt, root.span_id.data());
      root.name = ep.span_name;
      root.kind = 2;  // SERVER
      root.start_time_ns = start;
      root.end_time_ns = start + duration;
      root.attributes.Add("http.request.method", ep.method);
      root.attributes.Add("http.route", ep.route);
      root.attributes.Add("http.response.status_code", int64_t{status});
      root.attributes.Add("url.scheme", "https");
      root.attributes.Add("server.address", kServiceList[s].name);
      root.attributes.Add("user_agent.original", kUserAgents[rng.Below(5)]);
      if (error) {
        SpanEvent& ev = root.event.emplace();
        ev.time_ns = start + duration - 1000;
        ev.name = "exception";
        ev.attributes.Add("exception.type", err.exception_type);
        ev.attributes.Add("exception.message", err.message);
        root.status_code = 2;  // ERROR
        root.status_message = err.message;
      }
      const SpanId root_id = root.span_id;

      for (size_t c = 1; c < size; ++c) {
        const size_t child_kind = rng.Below(kChildCount);
        const ChildKind& ck = kChildren[child_kind];
        SpanRow& child = out.rows.emplace_back();
        child.resource = resource;
        child.trace_id = trace_id;
        UniqueId8(index, ordinal++, kSpanIdSalt, child.span_id.data());
        child.parent_span_id = root_id;
        const int64_t offset = rng.Range(0, duration / 2);
        const int64_t child_duration = rng.Range(1000, std::max<int64_t>(1000, duration - offset));
        child.name = cat.child_names[s][child_kind];
        child.kind = ck.kind;
        child.start_time_ns = start + offset;
        child.end_time_ns = start + offset + child_duration;
        if (ck.db_system != nullptr) {
          child.attributes.Add("db.system", ck.db_system);
          child.attributes.Add("db.name", kServiceList[s].name);
          child.attributes.Add("db.statement", cat.statements[s][child_kind]);
          child.attributes.Add("server.address", ck.db_system[0] == 'p' ? "db-primary" : "cache-0");
        } else {
          child.attributes.Add("code.function", ck.name);
          child.attributes.Add("code.namespace", kServiceList[s].resource);
        }
      }
    }
  }
  return out;
}

// ---- logs ----------------------------------------------------------------------

LogRequest LoadGenerator::Logs(uint64_t index) const {
  const Catalogue& cat = Cat();
  Rng rng(Mix64(options_.seed) ^ Mix64(index * 3 + 1));
  int first = 0, count = 0;
  ServicesFor(options_, index, &first, &count);
  const int64_t window = options_.time_step_ns;  // each request covers one step of data time
  const int64_t window_start = TimeAt(options_.base_time_ns, index, window);
  uint64_t ordinal = 0;
  LogRequest out;
  out.scope = {"io.opentelemetry.logs", "1.21.0"};
  out.rows.reserve(options_.batch);
  for (int k = 0; k < count; ++k) {
    const int s = first + k;
    const size_t n = Share(options_.batch, static_cast<size_t>(count), static_cast<size_t>(k));
    for (size_t i = 0; i < n; ++i) {
      LogRow& r = out.rows.emplace_back();
      r.resource = &cat.resources[s];
      r.time_ns = window_start + static_cast<int64_t>((static_cast<uint64_t>(window) * i) / n) + rng.Range(0, 999);
      int roll = static_cast<int>(rng.Below(100));
      const Severity* sev = &kSeverities[0];
      for (const Severity& candidate : kSeverities) {
        sev = &candidate;
        if (roll < candidate.weight) break;
        roll -= candidate.weight;
      }
      r.severity_number = sev->number;
      r.severity_text = sev->text;
      const int words = static_cast<int>(rng.Range(6, 14));
      for (int w = 0; w < words; ++w) {
        if (w > 0) r.body.push_back(' ');
        r.body += kWords[rng.Below(kWordCount)];
        if (w == 2) {
          r.body += " #";
          r.body += std::to_string(rng.Range(1000, 999999));
        }
      }
      r.observed_time_ns = r.time_ns + rng.Range(100000, 5000000);
      r.attributes.Add("log.logger", kServiceList[s].resource);
      r.attributes.Add("thread.id", rng.Range(1, 32));
      r.attributes.Add("code.function", kWords[rng.Below(kWordCount)]);
      if (rng.Percent(80)) {
        r.has_trace = true;
        r.flags = 1;
        UniqueId16(index, ordinal, kLogTraceSalt, r.trace_id.data());
        UniqueId8(index, ordinal, kLogTraceSalt ^ kSpanIdSalt, r.span_id.data());
      }
      ++ordinal;
    }
  }
  return out;
}

// ---- metrics -------------------------------------------------------------------

MetricRequest LoadGenerator::Metrics(uint64_t index) const {
  const Catalogue& cat = Cat(options_.bounded_gauges);
  Rng rng(Mix64(options_.seed) ^ Mix64(index * 3 + 2));
  int first = 0, count = 0;
  ServicesFor(options_, index, &first, &count);
  const size_t series_per_service = cat.series[0].size();
  const size_t total_series = series_per_service * static_cast<size_t>(count);
  // Points per series in this request; successive requests continue each
  // series' timeline, one point per step of data time.
  const size_t per_series_max = (options_.batch + total_series - 1) / total_series;
  const uint64_t first_step = index * per_series_max;
  const int64_t start_ns = options_.base_time_ns - 3600 * kNsPerSecond;  // cumulative start
  MetricRequest out;
  out.scope = {"io.opentelemetry.runtime", "1.21.0"};
  out.rows.reserve(options_.batch);
  size_t series_no = 0;
  for (int k = 0; k < count; ++k) {
    for (const MetricSeries& series : cat.series[first + k]) {
      const MetricDef& def = *series.metric;
      const size_t n = Share(options_.batch, total_series, series_no++);
      for (size_t p = 0; p < n; ++p) {
        const uint64_t step = first_step + p;
        MetricPoint& point = out.rows.emplace_back();
        point.series = &series;
        point.time_ns = TimeAt(options_.base_time_ns, step, options_.point_step_ns);
        if (def.kind != MetricKind::kGauge) point.start_time_ns = start_ns;
        if (def.kind == MetricKind::kHistogram) {
          uint64_t total = 0;
          for (size_t b = 0; b < kHistogramBuckets; ++b) total += point.bucket_counts[b] = rng.Below(b < 6 ? 60 : 8);
          point.count = total;
          point.sum = static_cast<double>(total) * (0.02 + 0.2 * rng.Unit());
          point.explicit_bounds = kBounds;
          point.min = 0.001 + 0.004 * rng.Unit();
          point.max = 0.5 + 9.0 * rng.Unit();
        } else if (def.kind == MetricKind::kSum) {
          // Cumulative and monotonic: grows with the step.
          point.int_value = static_cast<int64_t>(step) * 40 + rng.Range(0, 39);
        } else if (def.is_int) {
          point.int_value = rng.Range(0, 4000000);
        } else if (options_.bounded_gauges) {
          point.double_value = static_cast<double>(rng.Range(0, 100000)) / 100;
        } else {
          point.double_value = rng.Unit();
        }
      }
    }
  }
  return out;
}

// ---- public --------------------------------------------------------------------

LoadGenerator::LoadGenerator(GeneratorOptions options) : options_(options) {
  if (options_.base_time_ns == 0) {
    auto now = std::chrono::system_clock::now().time_since_epoch();
    options_.base_time_ns = std::chrono::duration_cast<std::chrono::seconds>(now).count() * kNsPerSecond;
  }
  options_.batch = std::clamp<size_t>(options_.batch, 1, kMaxGeneratorBatch);
  options_.time_step_ns = std::max<int64_t>(options_.time_step_ns, 1);
  if (options_.point_step_ns <= 0) options_.point_step_ns = options_.time_step_ns;
  (void)Cat();
}

std::string LoadGenerator::BuildRaw(Signal signal, uint64_t index, uint32_t* items) const {
  auto encode = [&](const auto& request) {
    if (items != nullptr) *items = static_cast<uint32_t>(request.rows.size());
    return EncodeOtlp(request, options_.format);
  };
  switch (signal) {
    case Signal::kSpans: return encode(Spans(index));
    case Signal::kLogs: return encode(Logs(index));
    case Signal::kMetrics: return encode(Metrics(index));
  }
  return encode(Spans(index));
}

namespace {

struct CompressorDeleter {
  void operator()(libdeflate_compressor* c) const { libdeflate_free_compressor(c); }
};

libdeflate_compressor* ThreadCompressor(int level) {
  thread_local int cached_level = -1;
  thread_local std::unique_ptr<libdeflate_compressor, CompressorDeleter> c;
  if (cached_level != level) {
    c.reset(libdeflate_alloc_compressor(level));
    cached_level = level;
  }
  return c.get();
}

}  // namespace

Payload LoadGenerator::Build(Signal signal, uint64_t index) const {
  Payload p;
  p.signal = signal;
  p.index = index;
  std::string raw = BuildRaw(signal, index, &p.items);
  p.raw_bytes = raw.size();
  if (options_.gzip_level <= 0) {
    p.body = std::move(raw);
    return p;
  }
  libdeflate_compressor* c = ThreadCompressor(std::min(options_.gzip_level, 12));
  p.body.resize(libdeflate_gzip_compress_bound(c, raw.size()));
  size_t n = libdeflate_gzip_compress(c, raw.data(), raw.size(), p.body.data(), p.body.size());
  p.body.resize(n);
  p.body.shrink_to_fit();
  return p;
}

const char* ContentTypeFor(WireFormat format) {
  return format == WireFormat::kProtobuf ? "application/x-protobuf" : "application/json";
}

const char* ContentEncodingFor(const GeneratorOptions& options) { return options.gzip_level > 0 ? "gzip" : ""; }

const char* OtlpPath(Signal signal) {
  switch (signal) {
    case Signal::kSpans: return "/v1/traces";
    case Signal::kLogs: return "/v1/logs";
    case Signal::kMetrics: return "/v1/metrics";
  }
  return "/v1/traces";
}

}  // namespace sightline::bench
