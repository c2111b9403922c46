#include "bench/load_generator.h"

#include <libdeflate.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <memory>
#include <string_view>
#include <vector>

#include "bench/otlp_emitter.h"

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
    {"frontend", "nodejs", "2.14.0", "pages"},      {"checkout", "go", "1.9.3", "orders"},
    {"cart", "dotnet", "3.2.1", "carts"},           {"payment", "java", "5.0.7", "payments"},
    {"shipping", "go", "1.4.0", "shipments"},       {"inventory", "java", "2.8.12", "items"},
    {"catalog", "python", "0.33.1", "products"},    {"auth", "go", "4.1.0", "sessions"},
    {"search", "rust", "0.9.4", "queries"},         {"recommendation", "python", "1.0.2", "suggestions"},
};

struct Endpoint {
  std::string method;
  std::string route;
  std::string span_name;  // "GET /api/v1/orders/{id}"
};

struct ChildKind {
  const char* name;
  int kind;            // OTLP SpanKind: 1 internal, 3 client
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

constexpr const char* kUserAgents[] = {
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_2) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.2 Safari/605.1.15",
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
    "request", "completed", "failed",   "user",     "order",   "payment", "retry",    "timeout",  "cache",
    "miss",    "hit",       "session",  "created",  "updated", "deleted", "queue",    "message",  "processed",
    "latency", "exceeded",  "threshold", "connection", "pool", "exhausted", "opened", "closed",   "token",
    "expired", "refreshed", "invalid",  "input",    "rejected", "accepted", "shipment", "dispatched", "warehouse",
    "item",    "reserved",  "released", "price",    "updated", "inventory", "low",    "stock",    "search",
    "index",   "rebuilt",   "query",    "slow",     "plan",    "scan",    "rows",     "returned", "worker",
    "started", "stopped",   "heartbeat", "missed",  "leader",  "elected", "config",   "reloaded", "disk",
    "usage",
};
constexpr int kWordCount = static_cast<int>(sizeof(kWords) / sizeof(kWords[0]));

struct Severity {
  int number;
  const char* text;
  int weight;  // percent
};
constexpr Severity kSeverities[] = {{5, "DEBUG", 15}, {9, "INFO", 70}, {13, "WARN", 10}, {17, "ERROR", 5}};

enum class Kind { kGauge, kSum, kHistogram };
struct MetricDef {
  const char* name;
  const char* description;
  const char* unit;
  Kind kind;
  bool is_int;
};
// Per service: 20 series (label sets below).
constexpr MetricDef kMetricDefs[] = {
    {"http.server.request.duration", "Duration of HTTP server requests.", "s", Kind::kHistogram, false},
    {"http.server.request.count", "Number of HTTP server requests.", "{request}", Kind::kSum, true},
    {"process.cpu.utilization", "CPU utilization of the process.", "1", Kind::kGauge, false},
    {"process.memory.usage", "Resident memory of the process.", "By", Kind::kGauge, true},
    {"db.client.connections.usage", "Connections in the pool by state.", "{connection}", Kind::kGauge, true},
    {"system.network.io", "Bytes transferred.", "By", Kind::kSum, true},
    {"runtime.gc.count", "Garbage collections.", "{collection}", Kind::kSum, true},
    {"messaging.queue.depth", "Messages waiting in the queue.", "{message}", Kind::kGauge, true},
};
constexpr int kMetricDefCount = static_cast<int>(sizeof(kMetricDefs) / sizeof(kMetricDefs[0]));
constexpr double kBounds[] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};
constexpr int kBucketCount = static_cast<int>(sizeof(kBounds) / sizeof(kBounds[0])) + 1;

struct Label {
  std::string key;
  std::string value;  // string labels
  int64_t int_value = 0;
  bool is_int = false;
};
struct Series {
  int metric;  // index into kMetricDefs
  std::vector<Label> labels;
};

//! Everything fixed about the data, built once.
struct Catalogue {
  std::array<std::array<Endpoint, kEndpointsPerService>, kServices> endpoints;
  std::array<std::vector<std::string>, kServices> statements;  // per child kind, table substituted
  std::array<std::vector<Series>, kServices> series;           // 20 per service, grouped by metric
  std::array<std::string, kServices> host;

  Catalogue() {
    static const char* kMethods[kEndpointsPerService] = {"GET", "GET", "POST", "PUT", "DELETE"};
    static const char* kSuffix[kEndpointsPerService] = {"", "/{id}", "", "/{id}", "/{id}"};
    for (int s = 0; s < kServices; ++s) {
      const Service& svc = kServiceList[s];
      for (int e = 0; e < kEndpointsPerService; ++e) {
        Endpoint& ep = endpoints[s][e];
        ep.method = kMethods[e];
        ep.route = std::string("/api/v1/") + svc.resource + kSuffix[e];
        if (e == 1 && s % 2 == 0) ep.route += "/history";
        ep.span_name = ep.method + " " + ep.route;
      }
      for (const ChildKind& c : kChildren) {
        std::string st = c.statement ? c.statement : "";
        size_t at = st.find("{t}");
        if (at != std::string::npos) st.replace(at, 3, svc.resource);
        statements[s].push_back(st);
      }
      host[s] = std::string(svc.name) + "-7d9f8b6c5-" + std::to_string(10 + s * 7);
      auto& out = series[s];
      for (int e = 0; e < kEndpointsPerService; ++e) {  // duration histogram: one per endpoint
        out.push_back({0, {{"http.request.method", endpoints[s][e].method}, {"http.route", endpoints[s][e].route},
                           {"http.response.status_code", "", 200, true}}});
      }
      for (int e = 0; e < kEndpointsPerService; ++e) {  // request count: one per endpoint
        out.push_back({1, {{"http.request.method", endpoints[s][e].method}, {"http.route", endpoints[s][e].route},
                           {"http.response.status_code", "", 200, true}}});
      }
      out.push_back({2, {{"cpu.mode", "user"}}});
      out.push_back({2, {{"cpu.mode", "system"}}});
      out.push_back({3, {}});
      out.push_back({4, {{"pool.name", "main"}, {"state", "idle"}}});
      out.push_back({4, {{"pool.name", "main"}, {"state", "used"}}});
      out.push_back({5, {{"network.io.direction", "receive"}, {"network.interface.name", "eth0"}}});
      out.push_back({5, {{"network.io.direction", "transmit"}, {"network.interface.name", "eth0"}}});
      out.push_back({6, {{"gc", "minor"}}});
      out.push_back({6, {{"gc", "major"}}});
      out.push_back({7, {{"messaging.destination.name", std::string(svc.resource) + ".events"}}});
    }
  }
};

const Catalogue& Cat() {
  static const Catalogue* c = new Catalogue();
  return *c;
}

// ---- common message pieces -----------------------------------------------------

template <typename E>
void StringAttr(E* e, std::string_view key, std::string_view value) {
  e->BeginElement();
  e->String(1, "key", key);
  e->BeginMessage(2, "value");
  e->String(1, "stringValue", value);
  e->EndMessage();
  e->EndMessage();
}

template <typename E>
void IntAttr(E* e, std::string_view key, int64_t value) {
  e->BeginElement();
  e->String(1, "key", key);
  e->BeginMessage(2, "value");
  e->OneofInt(3, "intValue", value);
  e->EndMessage();
  e->EndMessage();
}

template <typename E>
void Resource(E* e, int service) {
  const Service& svc = kServiceList[service];
  e->BeginMessage(1, "resource");
  e->BeginRepeated(1, "attributes");
  StringAttr(e, "service.name", svc.name);
  StringAttr(e, "service.version", svc.version);
  StringAttr(e, "service.namespace", "shop");
  StringAttr(e, "deployment.environment", "production");
  StringAttr(e, "host.name", Cat().host[service]);
  StringAttr(e, "telemetry.sdk.name", "opentelemetry");
  StringAttr(e, "telemetry.sdk.language", svc.language);
  e->EndRepeated();
  e->EndMessage();
}

template <typename E>
void Scope(E* e, const char* name) {
  e->BeginMessage(1, "scope");
  e->String(1, "name", name);
  e->String(2, "version", "1.21.0");
  e->EndMessage();
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

template <typename E>
uint32_t LoadGenerator::Spans(E* e, uint64_t index) const {
  const Catalogue& cat = Cat();
  Rng rng(Mix64(options_.seed) ^ Mix64(index * 3 + 0));
  int first = 0, count = 0;
  ServicesFor(options_, index, &first, &count);
  const int64_t window = options_.time_step_ns;  // each request covers one step of data time
  const int64_t window_start = TimeAt(options_.base_time_ns, index, window);
  uint64_t ordinal = 0;   // span ordinal within the request: part of the span id
  uint64_t trace_no = 0;  // trace ordinal within the request: part of the trace id
  e->BeginRoot();
  e->BeginRepeated(1, "resourceSpans");
  for (int k = 0; k < count; ++k) {
    const int s = first + k;
    size_t spans_left = Share(options_.batch, static_cast<size_t>(count), static_cast<size_t>(k));
    if (spans_left == 0) continue;
    e->BeginElement();
    Resource(e, s);
    e->BeginRepeated(2, "scopeSpans");
    e->BeginElement();
    Scope(e, "io.opentelemetry.http");
    e->BeginRepeated(2, "spans");
    while (spans_left > 0) {
      // One trace: a SERVER root and 0..7 children, all in this request.
      size_t size = std::min<size_t>(spans_left, static_cast<size_t>(rng.Range(1, 8)));
      spans_left -= size;
      uint8_t trace_id[16], root_id[8];
      UniqueId16(index, trace_no++, kTraceIdSalt, trace_id);
      const Endpoint& ep = cat.endpoints[s][rng.Below(kEndpointsPerService)];
      int64_t start = window_start + rng.Range(0, window - 1);
      int64_t duration = rng.Range(1000000, 500000000);  // 1..500 ms
      bool error = rng.Percent(5);
      const ErrorKind& err = kErrors[rng.Below(5)];
      int status = error ? err.status : (rng.Percent(3) ? 404 : (ep.method == "POST" ? 201 : 200));
      UniqueId8(index, ordinal++, kSpanIdSalt, root_id);

      e->BeginElement();
      e->Id(1, "traceId", trace_id, 16);
      e->Id(2, "spanId", root_id, 8);
      e->String(5, "name", ep.span_name);
      e->Uint(6, "kind", 2);  // SERVER
      e->Fixed64(7, "startTimeUnixNano", static_cast<uint64_t>(start));
      e->Fixed64(8, "endTimeUnixNano", static_cast<uint64_t>(start + duration));
      e->BeginRepeated(9, "attributes");
      StringAttr(e, "http.request.method", ep.method);
      StringAttr(e, "http.route", ep.route);
      IntAttr(e, "http.response.status_code", status);
      StringAttr(e, "url.scheme", "https");
      StringAttr(e, "server.address", kServiceList[s].name);
      StringAttr(e, "user_agent.original", kUserAgents[rng.Below(5)]);
      e->EndRepeated();
      if (error) {
        e->BeginRepeated(11, "events");
        e->BeginElement();
        e->Fixed64(1, "timeUnixNano", static_cast<uint64_t>(start + duration - 1000));
        e->String(2, "name", "exception");
        e->BeginRepeated(3, "attributes");
        StringAttr(e, "exception.type", err.exception_type);
        StringAttr(e, "exception.message", err.message);
        e->EndRepeated();
        e->EndMessage();
        e->EndRepeated();
        e->BeginMessage(15, "status");
        e->String(2, "message", err.message);
        e->Uint(3, "code", 2);  // ERROR
        e->EndMessage();
      }
      e->EndMessage();

      for (size_t c = 1; c < size; ++c) {
        const size_t child_kind = rng.Below(sizeof(kChildren) / sizeof(kChildren[0]));
        const ChildKind& ck = kChildren[child_kind];
        uint8_t span_id[8];
        UniqueId8(index, ordinal++, kSpanIdSalt, span_id);
        int64_t offset = rng.Range(0, duration / 2);
        int64_t child_duration = rng.Range(1000, std::max<int64_t>(1000, duration - offset));
        e->BeginElement();
        e->Id(1, "traceId", trace_id, 16);
        e->Id(2, "spanId", span_id, 8);
        e->Id(4, "parentSpanId", root_id, 8);
        if (ck.db_system != nullptr) {
          std::string name = std::string(ck.name) + " " + kServiceList[s].resource;
          e->String(5, "name", name);
        } else {
          e->String(5, "name", ck.name);
        }
        e->Uint(6, "kind", static_cast<uint64_t>(ck.kind));
        e->Fixed64(7, "startTimeUnixNano", static_cast<uint64_t>(start + offset));
        e->Fixed64(8, "endTimeUnixNano", static_cast<uint64_t>(start + offset + child_duration));
        e->BeginRepeated(9, "attributes");
        if (ck.db_system != nullptr) {
          StringAttr(e, "db.system", ck.db_system);
          StringAttr(e, "db.name", kServiceList[s].name);
          StringAttr(e, "db.statement", cat.statements[s][child_kind]);
          StringAttr(e, "server.address", ck.db_system[0] == 'p' ? "db-primary" : "cache-0");
        } else {
          StringAttr(e, "code.function", ck.name);
          StringAttr(e, "code.namespace", kServiceList[s].resource);
        }
        e->EndRepeated();
        e->EndMessage();
      }
    }
    e->EndRepeated();  // spans
    e->EndMessage();   // scope spans
    e->EndRepeated();
    e->EndMessage();  // resource spans
  }
  e->EndRepeated();
  e->EndRoot();
  return static_cast<uint32_t>(ordinal);
}

// ---- logs ----------------------------------------------------------------------

template <typename E>
uint32_t LoadGenerator::Logs(E* e, uint64_t index) const {
  Rng rng(Mix64(options_.seed) ^ Mix64(index * 3 + 1));
  int first = 0, count = 0;
  ServicesFor(options_, index, &first, &count);
  const int64_t window = options_.time_step_ns;  // each request covers one step of data time
  const int64_t window_start = TimeAt(options_.base_time_ns, index, window);
  uint64_t ordinal = 0;
  std::string body;
  e->BeginRoot();
  e->BeginRepeated(1, "resourceLogs");
  for (int k = 0; k < count; ++k) {
    const int s = first + k;
    size_t n = Share(options_.batch, static_cast<size_t>(count), static_cast<size_t>(k));
    if (n == 0) continue;
    e->BeginElement();
    Resource(e, s);
    e->BeginRepeated(2, "scopeLogs");
    e->BeginElement();
    Scope(e, "io.opentelemetry.logs");
    e->BeginRepeated(2, "logRecords");
    for (size_t i = 0; i < n; ++i) {
      int64_t t = window_start + static_cast<int64_t>((static_cast<uint64_t>(window) * i) / n) +
                  rng.Range(0, 999);
      int roll = static_cast<int>(rng.Below(100));
      const Severity* sev = &kSeverities[0];
      for (const Severity& candidate : kSeverities) {
        sev = &candidate;
        if (roll < candidate.weight) break;
        roll -= candidate.weight;
      }
      body.clear();
      int words = static_cast<int>(rng.Range(6, 14));
      for (int w = 0; w < words; ++w) {
        if (w > 0) body.push_back(' ');
        body += kWords[rng.Below(kWordCount)];
        if (w == 2) {
          body += " #";
          body += std::to_string(rng.Range(1000, 999999));
        }
      }
      e->BeginElement();
      e->Fixed64(1, "timeUnixNano", static_cast<uint64_t>(t));
      e->Fixed64(11, "observedTimeUnixNano", static_cast<uint64_t>(t + rng.Range(100000, 5000000)));
      e->Uint(2, "severityNumber", static_cast<uint64_t>(sev->number));
      e->String(3, "severityText", sev->text);
      e->BeginMessage(5, "body");
      e->String(1, "stringValue", body);
      e->EndMessage();
      e->BeginRepeated(6, "attributes");
      StringAttr(e, "log.logger", kServiceList[s].resource);
      IntAttr(e, "thread.id", rng.Range(1, 32));
      StringAttr(e, "code.function", kWords[rng.Below(kWordCount)]);
      e->EndRepeated();
      if (rng.Percent(80)) {
        uint8_t trace_id[16], span_id[8];
        UniqueId16(index, ordinal, kLogTraceSalt, trace_id);
        UniqueId8(index, ordinal, kLogTraceSalt ^ kSpanIdSalt, span_id);
        e->Fixed32(8, "flags", 1);
        e->Id(9, "traceId", trace_id, 16);
        e->Id(10, "spanId", span_id, 8);
      }
      e->EndMessage();
      ++ordinal;
    }
    e->EndRepeated();
    e->EndMessage();
    e->EndRepeated();
    e->EndMessage();
  }
  e->EndRepeated();
  e->EndRoot();
  return static_cast<uint32_t>(ordinal);
}

// ---- metrics -------------------------------------------------------------------

template <typename E>
uint32_t LoadGenerator::Metrics(E* e, uint64_t index) const {
  const Catalogue& cat = Cat();
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
  uint32_t points = 0;
  uint64_t buckets[kBucketCount];
  e->BeginRoot();
  e->BeginRepeated(1, "resourceMetrics");
  size_t series_no = 0;
  for (int k = 0; k < count; ++k) {
    const int s = first + k;
    e->BeginElement();
    Resource(e, s);
    e->BeginRepeated(2, "scopeMetrics");
    e->BeginElement();
    Scope(e, "io.opentelemetry.runtime");
    e->BeginRepeated(2, "metrics");
    const auto& list = cat.series[s];
    for (size_t i = 0; i < list.size();) {
      const MetricDef& def = kMetricDefs[list[i].metric];
      size_t end = i;
      while (end < list.size() && list[end].metric == list[i].metric) ++end;
      e->BeginElement();
      e->String(1, "name", def.name);
      e->String(2, "description", def.description);
      e->String(3, "unit", def.unit);
      const int data_field = def.kind == Kind::kGauge ? 5 : def.kind == Kind::kSum ? 7 : 9;
      const char* data_name = def.kind == Kind::kGauge ? "gauge" : def.kind == Kind::kSum ? "sum" : "histogram";
      e->BeginMessage(data_field, data_name);
      e->BeginRepeated(1, "dataPoints");
      for (; i < end; ++i, ++series_no) {
        const size_t n = Share(options_.batch, total_series, series_no);
        for (size_t p = 0; p < n; ++p) {
          const uint64_t step = first_step + p;
          const int64_t t = TimeAt(options_.base_time_ns, step, options_.point_step_ns);
          e->BeginElement();
          const int attr_field = def.kind == Kind::kHistogram ? 9 : 7;
          if (!list[i].labels.empty()) {
            e->BeginRepeated(attr_field, "attributes");
            for (const Label& l : list[i].labels) {
              if (l.is_int) IntAttr(e, l.key, l.int_value);
              else StringAttr(e, l.key, l.value);
            }
            e->EndRepeated();
          }
          if (def.kind != Kind::kGauge) e->Fixed64(2, "startTimeUnixNano", static_cast<uint64_t>(start_ns));
          e->Fixed64(3, "timeUnixNano", static_cast<uint64_t>(t));
          if (def.kind == Kind::kHistogram) {
            uint64_t total = 0;
            for (int b = 0; b < kBucketCount; ++b) total += buckets[b] = rng.Below(b < 6 ? 60 : 8);
            double sum = static_cast<double>(total) * (0.02 + 0.2 * rng.Unit());
            e->Fixed64(4, "count", total);
            e->Double(5, "sum", sum);
            e->PackedFixed64(6, "bucketCounts", std::span<const uint64_t>(buckets, kBucketCount));
            e->PackedDouble(7, "explicitBounds", std::span<const double>(kBounds, kBucketCount - 1));
            e->Double(11, "min", 0.001 + 0.004 * rng.Unit());
            e->Double(12, "max", 0.5 + 9.0 * rng.Unit());
          } else if (def.kind == Kind::kSum) {
            // Cumulative and monotonic: grows with the step.
            e->SFixed64(6, "asInt", static_cast<int64_t>(step) * 40 + rng.Range(0, 39));
          } else if (def.is_int) {
            e->SFixed64(6, "asInt", rng.Range(0, 4000000));
          } else {
            e->Double(4, "asDouble", rng.Unit());
          }
          e->EndMessage();
          ++points;
        }
      }
      e->EndRepeated();  // data points
      if (def.kind != Kind::kGauge) {
        e->Uint(2, "aggregationTemporality", 2);  // CUMULATIVE
        if (def.kind == Kind::kSum) e->Bool(3, "isMonotonic", true);
      }
      e->EndMessage();  // gauge / sum / histogram
      e->EndMessage();  // metric
    }
    e->EndRepeated();
    e->EndMessage();
    e->EndRepeated();
    e->EndMessage();
  }
  e->EndRepeated();
  e->EndRoot();
  return points;
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
  std::string out;
  out.reserve(options_.batch * (signal == Signal::kMetrics ? 120 : 400) + 4096);
  auto build = [&](auto* e) {
    switch (signal) {
      case Signal::kSpans: return Spans(e, index);
      case Signal::kLogs: return Logs(e, index);
      case Signal::kMetrics: return Metrics(e, index);
    }
    return 0u;
  };
  uint32_t n = 0;
  if (options_.format == WireFormat::kProtobuf) {
    ProtoEmitter e(&out);
    n = build(&e);
  } else {
    JsonEmitter e(&out);
    n = build(&e);
  }
  if (items != nullptr) *items = n;
  return out;
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
