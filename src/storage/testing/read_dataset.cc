#include "storage/testing/read_dataset.h"

#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "common/exception_group.h"

namespace sightline::read_dataset {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr TraceId kNoTrace{};

// Span resources: (resource, scope) rows, by id.
constexpr int64_t kResourceFrontend = 101;
constexpr int64_t kResourceCheckout = 102;
constexpr int64_t kResourceWorker = 103;
constexpr int64_t kResourceNaive = 104;

struct ResourceSpec {
  int64_t id;
  const char* attributes;
  const char* scope_name;
  const char* scope_version;
};

void AddResource(ResourceTable* t, const ResourceSpec& r) {
  t->resource_id.push_back(r.id);
  t->resource_attributes.Append(r.attributes);
  t->scope_name.Append(r.scope_name);
  t->scope_version.Append(r.scope_version);
  t->scope_attributes.Append("{}");
}

struct SpanSpec {
  TraceId trace;
  uint64_t span = 0;
  uint64_t parent = 0;
  const char* service = "";
  const char* name = "";
  int32_t kind = 0;
  int64_t start = 0;
  int64_t duration = 0;
  int32_t status = 0;
  const char* status_message = "";
  const char* route = "";
  const char* exception_type = "";
  const char* exception_message = "";
  const char* attributes = "{}";
  const char* events = "";
  const char* links = "";
  const char* trace_state = "";
  int64_t resource = kResourceFrontend;
};

void AddSpan(SpanBatch* b, const SpanSpec& s) {
  b->trace_id_high.push_back(s.trace.high);
  b->trace_id_low.push_back(s.trace.low);
  b->span_id.push_back(s.span);
  b->parent_span_id.push_back(s.parent);
  b->trace_state.Append(s.trace_state);
  b->flags.push_back(1);
  b->name.Append(s.name);
  b->kind.push_back(s.kind);
  b->start_time_ns.push_back(s.start);
  b->end_time_ns.push_back(s.start + s.duration);
  b->status_code.push_back(s.status);
  b->status_message.Append(s.status_message);
  b->service_name.Append(s.service);
  b->http_route.Append(s.route);
  b->http_method.Append("");
  b->http_status_code.push_back(0);
  b->db_system.Append("");
  b->exception_type.Append(s.exception_type);
  b->exception_message.Append(s.exception_message);
  b->exception_group.Append(NormalizeExceptionMessage(s.exception_message));
  b->attributes.Append(s.attributes);
  b->events.Append(s.events);
  b->links.Append(s.links);
  b->dropped_attributes_count.push_back(0);
  b->dropped_events_count.push_back(0);
  b->dropped_links_count.push_back(0);
  b->resource_id.push_back(s.resource);
}

constexpr int32_t kInternal = 1, kServer = 2, kClient = 3, kConsumer = 5;

std::vector<SpanBatch> Spans() {
  std::vector<SpanBatch> out(3);
  SpanBatch& a1 = out[0];
  a1.project_id = kProjectA;
  AddResource(&a1.resources, {kResourceFrontend, R"({"service.name":"frontend","host.name":"web-1"})",
                              "io.opentelemetry.http", "1.2.3"});
  AddResource(&a1.resources, {kResourceCheckout, R"({"service.name":"checkout"})", "checkout-lib", "0.1"});
  AddResource(&a1.resources, {kResourceWorker, R"({"service.name":"worker"})", "", ""});
  // Rows that tie in an order are written in the opposite order to the
  // tie-break, so an engine that leaves ties in storage order fails: a3
  // before a2, kTrace3 before kTrace2, c5 before c0, e1 before e2.
  // kTrace1: a root, a client child and a server grandchild starting together.
  AddSpan(&a1, {.trace = kTrace1,
                .span = kSpanA1,
                .service = "frontend",
                .name = "GET /api/items",
                .kind = kServer,
                .start = At(1000),
                .duration = Ms(10),
                .route = "/api/items",
                .attributes = R"({"http.request.method":"GET","http.response.status_code":200,"retry":false,)"
                              R"("user.name":"caf\u00e9"})",
                .trace_state = "congo=t61rcWkgMzE"});
  AddSpan(&a1, {.trace = kTrace1,
                .span = kSpanA3,
                .parent = kSpanA2,
                .service = "checkout",
                .name = "POST /api/pay",
                .kind = kServer,
                .start = At(1002),
                .duration = Ms(10),
                .status = 2,
                .status_message = "card declined",
                .route = "/api/pay",
                .exception_type = "PaymentError",
                .exception_message = "card declined ✗",
                .attributes = R"({"amount":12.5,"currency":"EUR","vip":true})",
                .events = R"([{"time_unix_nano":1700000001005000000,"name":"exception","attributes":)"
                          R"({"exception.type":"PaymentError","exception.message":"card declined ✗"},)"
                          R"("dropped_attributes_count":0}])",
                .links = R"([{"trace_id":"00000000000000001111111111111111","span_id":"00000000000000b1",)"
                         R"("trace_state":"","attributes":{},"dropped_attributes_count":0,"flags":0}])",
                .resource = kResourceCheckout});
  AddSpan(&a1, {.trace = kTrace1,
                .span = kSpanA2,
                .parent = kSpanA1,
                .service = "frontend",
                .name = "HTTP POST",
                .kind = kClient,
                .start = At(1002),
                .duration = Ms(6),
                .attributes = R"({"http.request.method":"POST"})"});
  // kTrace3: starts with kTrace2 in the range; c5 and c0, neither a root,
  // start together before it.
  AddSpan(&a1, {.trace = kTrace3,
                .span = kSpanC5,
                .parent = kSpanC1,
                .service = "worker",
                .name = "prefetch again",
                .kind = kInternal,
                .start = At(-5000),
                .duration = Ms(1),
                .resource = kResourceWorker});
  AddSpan(&a1, {.trace = kTrace3,
                .span = kSpanC0,
                .parent = kSpanC1,
                .service = "worker",
                .name = "prefetch",
                .kind = kInternal,
                .start = At(-5000),
                .duration = Ms(1),
                .resource = kResourceWorker});
  AddSpan(&a1, {.trace = kTrace3,
                .span = kSpanC1,
                .service = "frontend",
                .name = "GET /api/items",
                .kind = kServer,
                .start = At(5000),
                .duration = Ms(30),
                .route = "/api/items",
                .attributes = R"({"http.response.status_code":200,"ratio":2.50,"k":null})"});
  AddSpan(&a1, {.trace = kTrace3,
                .span = kSpanC2,
                .parent = kSpanC1,
                .service = "checkout",
                .name = "POST /api/pay",
                .kind = kServer,
                .start = At(5010),
                .duration = Ms(20),
                .route = "/api/pay",
                .exception_type = "PaymentError",
                .exception_message = "card declined ✗",
                .attributes = R"({"amount":7,"currency":"EUR","vip":false})",
                .resource = kResourceCheckout});
  AddSpan(&a1, {.trace = kTrace3,
                .span = kSpanC4,
                .parent = kSpanC1,
                .service = "frontend",
                .name = "SELECT items",
                .kind = kClient,
                .start = At(5001),
                .duration = Ms(2),
                .exception_message = "connection reset"});
  // kTrace2: an error root with an exception type only, and children with a
  // message only and a type only.
  AddSpan(&a1, {.trace = kTrace2,
                .span = kSpanB1,
                .service = "frontend",
                .name = "GET /api/items",
                .kind = kServer,
                .start = At(5000),
                .duration = Ms(20),
                .status = 2,
                .route = "/api/items",
                .exception_type = "TimeoutError",
                .attributes = R"({"http.response.status_code":504,"big":1e+21})"});
  AddSpan(&a1, {.trace = kTrace2,
                .span = kSpanB2,
                .parent = kSpanB1,
                .service = "frontend",
                .name = "SELECT items",
                .kind = kClient,
                .start = At(5001),
                .duration = Ms(3),
                .exception_message = "connection reset",
                .attributes = R"({"db.system":"postgresql"})"});
  AddSpan(&a1, {.trace = kTrace2,
                .span = kSpanB3,
                .parent = kSpanB1,
                .service = "worker",
                .name = "checkout-job",
                .kind = kConsumer,
                .start = At(5002),
                .duration = Ms(5),
                .exception_type = "TimeoutError",
                .resource = kResourceWorker});
  // kTrace4: the high half has its top bit set (negative as signed).
  AddSpan(&a1, {.trace = kTrace4,
                .span = kSpanD1,
                .service = "frontend",
                .name = "GET /api/items",
                .kind = kServer,
                .start = At(9000),
                .duration = Ms(40),
                .route = "/api/items",
                .attributes = R"({"http.response.status_code":200})"});
  AddSpan(&a1, {.trace = kTrace4,
                .span = kSpanD2,
                .parent = kSpanD1,
                .service = "checkout",
                .name = "POST /api/pay",
                .kind = kServer,
                .start = At(9005),
                .duration = Ms(40),
                .route = "/api/pay",
                .exception_type = "PaymentError",
                .exception_message = "card declined ✗",
                .resource = kResourceCheckout});
  AddSpan(&a1, {.trace = kTrace4,
                .span = kSpanD3,
                .parent = kSpanD1,
                .service = "checkout",
                .name = "POST /api/pay",
                .kind = kServer,
                .start = At(9010),
                .duration = Ms(30),
                .route = "/api/pay",
                .resource = kResourceCheckout});
  // kTrace7: 1 ns before the range.
  AddSpan(&a1, {.trace = kTrace7,
                .span = kSpanG1,
                .service = "frontend",
                .name = "GET /api/items",
                .kind = kServer,
                .start = kT0 - 1,
                .duration = Ms(1000),
                .route = "/api/items",
                .exception_type = "OldError",
                .exception_message = "x"});

  SpanBatch& a2 = out[1];
  a2.project_id = kProjectA;
  // Resource 101 again with other content: the first one written stays.
  AddResource(&a2.resources,
              {kResourceFrontend, R"({"service.name":"frontend","host.name":"CHANGED"})", "changed", "9"});
  AddResource(&a2.resources, {kResourceWorker, R"({"service.name":"worker"})", "", ""});
  AddResource(&a2.resources,
              {kResourceNaive, R"({"service.name":"naïve-svc","région":"île-de-France"})", "überwachung", "2.0"});
  // kTrace5: an INTERNAL root (an entry span by having no parent) and a
  // CONSUMER child with a smaller id starting at the same time.
  AddSpan(&a2, {.trace = kTrace5,
                .span = kSpanE1,
                .service = "worker",
                .name = "cron tick",
                .kind = kInternal,
                .start = At(20000),
                .duration = Ms(7),
                .exception_type = "TimeoutError",
                .resource = kResourceWorker});
  AddSpan(&a2, {.trace = kTrace5,
                .span = kSpanE2,
                .parent = kSpanE1,
                .service = "worker",
                .name = "checkout-job",
                .kind = kConsumer,
                .start = At(20000),
                .duration = Ms(5),
                .resource = kResourceWorker});
  AddSpan(&a2, {.trace = kTrace6,
                .span = kSpanF1,
                .service = "naïve-svc",
                .name = "Überprüfung ✓",
                .kind = kServer,
                .start = At(30000),
                .duration = Ms(15),
                .status = 1,
                .exception_type = "ÄrgerError",
                .exception_message = "kaputt ✗",
                .attributes = R"({"note":"Grüße","n":-7})",
                .resource = kResourceNaive});
  // kTrace8: exactly at the range's exclusive end.
  AddSpan(&a2, {.trace = kTrace8,
                .span = kSpanH1,
                .service = "frontend",
                .name = "GET /api/items",
                .kind = kServer,
                .start = At(60000),
                .duration = Ms(1),
                .route = "/api/items"});

  SpanBatch& b = out[2];
  b.project_id = kProjectB;
  AddResource(&b.resources, {kResourceFrontend, R"({"service.name":"frontend","host.name":"b-host"})", "b-scope", ""});
  AddSpan(&b, {.trace = kTrace1,
               .span = kSpanP1,
               .service = "frontend",
               .name = "GET /api/items",
               .kind = kServer,
               .start = At(1000),
               .duration = Ms(999),
               .status = 2,
               .route = "/api/items",
               .exception_type = "PaymentError",
               .exception_message = "card declined ✗",
               .attributes = R"({"http.response.status_code":200,"user.name":"café"})"});
  AddSpan(&b, {.trace = kTrace2,
               .span = kSpanP2,
               .service = "secret-b",
               .name = "hidden",
               .kind = kServer,
               .start = At(5000),
               .duration = Ms(1)});
  return out;
}

struct LogSpec {
  int64_t time = 0;
  int32_t severity = 0;
  const char* severity_text = "";
  const char* body = "";
  const char* service = "";
  TraceId trace;
  uint64_t span = 0;
  const char* attributes = "{}";
  const char* event_name = "";
  // A log-based exception event (what ingest reads from the exception.*
  // attributes; the attributes above need not carry them here).
  const char* exception_type = "";
  const char* exception_message = "";
};

void AddLog(LogBatch* b, const LogSpec& l) {
  b->time_ns.push_back(l.time);
  b->observed_time_ns.push_back(l.time == 0 ? At(0) : l.time);
  b->severity_number.push_back(l.severity);
  b->severity_text.Append(l.severity_text);
  b->body.Append(l.body);
  b->body_type.push_back(static_cast<uint8_t>(AnyValueType::kString));
  b->trace_id_high.push_back(l.trace.high);
  b->trace_id_low.push_back(l.trace.low);
  b->span_id.push_back(l.span);
  b->flags.push_back(0);
  b->service_name.Append(l.service);
  b->attributes.Append(l.attributes);
  b->dropped_attributes_count.push_back(0);
  b->resource_id.push_back(201);
  b->event_name.Append(l.event_name);
  b->exception_type.Append(l.exception_type);
  b->exception_message.Append(l.exception_message);
  b->exception_group.Append(NormalizeExceptionMessage(l.exception_message));
}

std::vector<LogBatch> Logs() {
  std::vector<LogBatch> out(3);
  for (LogBatch& b : out) {
    b.resources.resource_id.push_back(201);
    b.resources.resource_attributes.Append("{}");
    b.resources.scope_name.Append("logger");
    b.resources.scope_version.Append("");
    b.resources.scope_attributes.Append("{}");
  }
  // Record names (L1 ...) are what the test calls them; insertion order is
  // the order below, batch by batch.
  LogBatch& a1 = out[0];
  a1.project_id = kProjectA;
  AddLog(&a1, {At(1000), 9, "INFO", "request started", "frontend", kTrace1, kSpanA1,  // L1
               R"({"http.request.method":"GET"})"});
  AddLog(&a1, {At(1000), 17, "ERROR", "Payment FAILED for order 42", "checkout", kTrace1, kSpanA3,  // L2
               R"({"order.id":"A-17","amount":12.5,"retry":true})", "", "PaymentError", "card declined ✗"});
  AddLog(&a1, {At(2000), 5, "DEBUG", "échec mineur", "checkout", kNoTrace, 0, "{}", "", "",  // L4
               "retry 3 of order 42 failed"});
  AddLog(&a1, {At(3000), 0, "", "", "frontend", kNoTrace, 0, "{}"});  // L5: no severity, empty body
  AddLog(&a1, {At(4000), 13, "WARN", R"(promo 50%_off\path)", "frontend", kNoTrace, 0, "{}"});        // L13
  AddLog(&a1, {At(4001), 9, "INFO", "promo 50Xyoff", "frontend", kNoTrace, 0, "{}"});                 // L14
  AddLog(&a1, {At(5000), 21, "FATAL", "ΣΦΆΛΜΑ κρίσιμο", "worker", kTrace2, kSpanB3, R"({"k":null})",  // L6
               "worker.crash", "PanicError", "worker 7 crashed at 0x7ffd5e8a"});
  AddLog(&a1, {At(5000), 1, "TRACE", "σφάλμα trace", "worker", kTrace3, kSpanC1, R"({"lang":"el"})", "",  // L7
               "PanicError", "worker 12 crashed at 0x1a2b3c4d"});
  AddLog(&a1, {kT0 - 1, 9, "INFO", "too early", "frontend", kTrace1, kSpanA1});  // L10
  AddLog(&a1, {0, 9, "INFO", "no timestamp", "frontend", kNoTrace, 0, "{}"});    // L12

  LogBatch& a2 = out[1];
  a2.project_id = kProjectA;
  AddLog(&a2, {At(1000), 13, "WARN", "ÉCHEC du paiement", "checkout", kTrace1, kSpanA3, R"({"lang":"fr"})"});  // L3
  AddLog(&a2, {At(30000), 12, "INFO", "Grüße aus Köln", "naïve-svc", kTrace6, kSpanF1, R"({"n":-7})",          // L8
               "app.greeting"});
  AddLog(&a2, {At(60000) - 1, 24, "FATAL", "last one", "frontend", kNoTrace, 0, "{}"});  // L9
  AddLog(&a2, {At(60000), 9, "INFO", "too late", "frontend", kNoTrace, 0, "{}"});        // L11

  LogBatch& b = out[2];
  b.project_id = kProjectB;
  AddLog(&b, {At(1000), 17, "ERROR", "Payment FAILED (project B)", "checkout", kTrace1, kSpanP1,  // LB1
              R"({"order.id":"A-17"})", "", "PaymentError", "card declined ✗"});
  return out;
}

struct SeriesSpec {
  int64_t id;
  const char* name;
  MetricType type;
  const char* unit;
  const char* description;
  int32_t temporality;
  bool monotonic;
  const char* service;
  const char* attributes;
};

void AddSeries(MetricBatch* b, const SeriesSpec& s) {
  b->series_id.push_back(s.id);
  b->metric_name.Append(s.name);
  b->metric_type.push_back(static_cast<int32_t>(s.type));
  b->unit.Append(s.unit);
  b->description.Append(s.description);
  b->temporality.push_back(s.temporality);
  b->is_monotonic.push_back(s.monotonic ? 1 : 0);
  b->service_name.Append(s.service);
  b->AddSeriesResource(std::string(R"({"service.name":")") + s.service + R"("})", "meter", "");
  b->attributes.Append(s.attributes);
}

struct PointSpec {
  int64_t series;
  int64_t time;
  double value = kNaN;  // NaN: no value (a distribution, or flags 1)
  bool is_int = false;
  //! With is_int: the exact int when it differs from `value` (past 2^53 the
  //! double is its nearest conversion, as the OTLP decoder stores it).
  std::optional<int64_t> exact = std::nullopt;
  const char* bucket_counts = "";  // histograms
  const char* bounds = "";
  const char* exp = "";        // exponential histograms: the exp_histogram JSON
  const char* quantiles = "";  // summaries
  uint64_t count = 0;
  double sum = kNaN;
};

void AddPoint(MetricBatch* b, const PointSpec& p) {
  b->point_series_id.push_back(p.series);
  b->time_ns.push_back(p.time);
  b->start_time_ns.push_back(kT0 - Ms(60'000));
  b->value.push_back(p.value);
  b->int_value.push_back(p.is_int ? p.exact.value_or(static_cast<int64_t>(p.value)) : 0);
  b->is_int.push_back(p.is_int ? 1 : 0);
  b->count.push_back(p.count);
  b->sum.push_back(p.sum);
  b->min.push_back(kNaN);
  b->max.push_back(kNaN);
  b->bucket_counts.Append(p.bucket_counts);
  b->explicit_bounds.Append(p.bounds);
  b->exp_histogram.Append(p.exp);
  b->quantiles.Append(p.quantiles);
  b->exemplars.Append("");
  b->flags.push_back(std::isnan(p.value) && p.bucket_counts[0] == '\0' && p.count == 0 ? 1 : 0);
}

std::vector<MetricBatch> Metrics() {
  constexpr MetricType kGauge = MetricType::kGauge, kSum = MetricType::kSum, kHistogram = MetricType::kHistogram,
                       kExponential = MetricType::kExponentialHistogram, kSummary = MetricType::kSummary;
  std::vector<MetricBatch> out(3);
  MetricBatch& a1 = out[0];
  a1.project_id = kProjectA;
  AddSeries(&a1, {kSeriesLatencyFrontend, "http.server.duration", kHistogram, "ms", "Server latency", 2, false,
                  "frontend", R"({"http.route":"/api/items"})"});
  AddSeries(&a1, {kSeriesLatencyCheckout, "http.server.duration", kHistogram, "ms", "Server latency", 1, false,
                  "checkout", R"({"http.route":"/api/pay"})"});
  AddSeries(&a1, {kSeriesRequests200, "requests", kSum, "1", "Requests", 2, true, "frontend", R"({"code":200})"});
  AddSeries(&a1,
            {kSeriesRequestsCheckout, "requests", kSum, "1", "Requests", 1, true, "checkout", R"({"code":"200"})"});
  AddSeries(&a1, {kSeriesQueueDepth, "queue.depth", kSum, "1", "Queue depth", 2, false, "worker", "{}"});
  AddSeries(&a1,
            {kSeriesTempCore0, "cpu.temp", kGauge, "°C", "Température CPU", 0, false, "naïve-svc", R"({"core":0})"});
  AddSeries(&a1,
            {kSeriesTempCore1, "cpu.temp", kGauge, "°C", "Température CPU", 0, false, "naïve-svc", R"({"core":1})"});
  AddSeries(&a1, {kSeriesRequests500, "requests", kSum, "1", "Requests", 2, true, "frontend", R"({"code":500})"});
  AddSeries(&a1, {kSeriesRequests404, "requests", kSum, "1", "Requests", 1, false, "frontend", R"({"code":404})"});
  AddSeries(&a1, {kSeriesRequestsGauge, "requests", kGauge, "1", "Requests", 0, false, "frontend", "{}"});
  AddSeries(&a1, {kSeriesOverflow, "überlauf", kGauge, "", "", 0, false, "worker", "{}"});
  AddSeries(&a1, {kSeriesRpcFrontend, "rpc.duration", kExponential, "s", "RPC duration", 2, false, "frontend", "{}"});
  AddSeries(&a1, {kSeriesRpcCheckout, "rpc.duration", kExponential, "s", "RPC duration", 1, false, "checkout", "{}"});
  AddSeries(&a1, {kSeriesGcPause, "gc.pause", kSummary, "ms", "GC pause", 0, false, "worker", "{}"});

  AddPoint(&a1, {.series = kSeriesTempCore0, .time = kT0 - 1, .value = 1000});
  AddPoint(&a1, {.series = kSeriesTempCore0, .time = At(1000), .value = 40});
  AddPoint(&a1, {.series = kSeriesTempCore0, .time = At(2000), .value = 45});
  AddPoint(&a1, {.series = kSeriesTempCore0, .time = At(59000), .value = -3.5});
  AddPoint(&a1, {.series = kSeriesTempCore0, .time = At(60000), .value = 2000});
  AddPoint(&a1, {.series = kSeriesTempCore1, .time = At(1000), .value = 7});
  AddPoint(&a1, {.series = kSeriesTempCore1, .time = At(1000), .value = 7});
  AddPoint(&a1, {.series = kSeriesTempCore1, .time = At(3000), .value = 9, .is_int = true});
  // Ints past 2^53 beside a double, a NULL value and a histogram-shaped point
  // in one gauge: ints are read from int_value (the value column is NULL for
  // them), converted to the nearest double as the reference does.
  constexpr int64_t kBig = (int64_t{1} << 53) + 1;
  AddPoint(&a1, {.series = kSeriesRequestsGauge,
                 .time = At(1000),
                 .value = static_cast<double>(kBig),
                 .is_int = true,
                 .exact = kBig});
  AddPoint(&a1, {.series = kSeriesRequestsGauge,
                 .time = At(2000),
                 .value = static_cast<double>(-kBig - 2),
                 .is_int = true,
                 .exact = -kBig - 2});
  AddPoint(&a1, {.series = kSeriesRequestsGauge, .time = At(3000), .value = 0.25});
  AddPoint(&a1, {.series = kSeriesRequestsGauge, .time = At(4000)});  // flags 1: no value
  AddPoint(&a1, {.series = kSeriesRequestsGauge, .time = At(12000), .value = 3, .is_int = true});
  AddPoint(&a1, {.series = kSeriesRequestsGauge, .time = At(13000)});  // newest of its bucket, no value
  AddPoint(&a1, {.series = kSeriesRequestsGauge,
                 .time = At(14000),
                 .value = static_cast<double>(INT64_MAX),
                 .is_int = true,
                 .exact = INT64_MAX});
  AddPoint(&a1, {.series = kSeriesRequestsGauge, .time = At(22000), .count = 2, .sum = 5});
  AddPoint(&a1, {.series = kSeriesRequests200, .time = At(1000), .value = 100});
  AddPoint(&a1, {.series = kSeriesRequests200, .time = At(11000), .value = 150});
  AddPoint(&a1, {.series = kSeriesRequests200, .time = At(21000), .value = 30});  // reset
  AddPoint(&a1, {.series = kSeriesRequests200, .time = At(31000), .value = 60});
  AddPoint(&a1, {.series = kSeriesRequestsCheckout, .time = At(1000), .value = 5});
  AddPoint(&a1, {.series = kSeriesRequestsCheckout, .time = At(2000), .value = 7});
  AddPoint(&a1, {.series = kSeriesRequestsCheckout, .time = At(12000), .value = 1});
  AddPoint(&a1, {.series = kSeriesQueueDepth, .time = At(1000), .value = 10});
  AddPoint(&a1, {.series = kSeriesQueueDepth, .time = At(11000), .value = -4});
  // Cumulative exponential histogram: scale 1 at 1 s, scale 0 at 12 s, a
  // reset at 21 s.
  AddPoint(&a1, {.series = kSeriesRpcFrontend,
                 .time = At(1000),
                 .exp = R"({"scale":1,"zero_count":1,"zero_threshold":0,)"
                        R"("positive":{"offset":0,"bucket_counts":[1,2]},"negative":{"offset":0,"bucket_counts":[]}})",
                 .count = 4});
  AddPoint(&a1, {.series = kSeriesRpcFrontend,
                 .time = At(12000),
                 .exp = R"({"scale":0,"zero_count":1,"zero_threshold":0,)"
                        R"("positive":{"offset":0,"bucket_counts":[3,4]},"negative":{"offset":0,"bucket_counts":[]}})",
                 .count = 8});
  AddPoint(&a1, {.series = kSeriesRpcFrontend,
                 .time = At(21000),
                 .exp = R"({"scale":0,"zero_count":0,"zero_threshold":0,)"
                        R"("positive":{"offset":0,"bucket_counts":[1]},"negative":{"offset":0,"bucket_counts":[]}})",
                 .count = 1});
  // Summary: two points in bucket 0 (the newest counts), one in bucket 2.
  AddPoint(&a1, {.series = kSeriesGcPause,
                 .time = At(1000),
                 .quantiles = R"([{"quantile":0.5,"value":1},{"quantile":0.99,"value":9}])",
                 .count = 10});
  AddPoint(&a1, {.series = kSeriesGcPause,
                 .time = At(4000),
                 .quantiles = R"([{"quantile":0.5,"value":2},{"quantile":0.9,"value":4},{"quantile":0.99,"value":20}])",
                 .count = 20});
  AddPoint(&a1, {.series = kSeriesGcPause,
                 .time = At(25000),
                 .quantiles = R"([{"quantile":0.5,"value":3},{"quantile":0.95,"value":7}])",
                 .count = 30});
  // Delta exponential histogram: negative values, then a coarser scale.
  AddPoint(&a1, {.series = kSeriesRpcCheckout,
                 .time = At(2000),
                 .exp = R"({"scale":0,"zero_count":0,"zero_threshold":0,)"
                        R"("positive":{"offset":1,"bucket_counts":[2]},"negative":{"offset":0,"bucket_counts":[2]}})",
                 .count = 4});
  AddPoint(&a1, {.series = kSeriesRpcCheckout,
                 .time = At(3000),
                 .exp = R"({"scale":-1,"zero_count":0,"zero_threshold":0,)"
                        R"("positive":{"offset":1,"bucket_counts":[4]},"negative":{"offset":0,"bucket_counts":[]}})",
                 .count = 4});
  // Cumulative histogram: a reset at 22 s, a point without bucket counts at
  // 23 s, another bucket layout at 31 s.
  AddPoint(&a1, {.series = kSeriesLatencyFrontend,
                 .time = At(1000),
                 .bucket_counts = "[1,2,0]",
                 .bounds = "[10,100]",
                 .count = 3,
                 .sum = 60});
  AddPoint(&a1, {.series = kSeriesLatencyFrontend,
                 .time = At(5000),
                 .bucket_counts = "[2,3,1]",
                 .bounds = "[10,100]",
                 .count = 6,
                 .sum = 250});
  AddPoint(&a1, {.series = kSeriesLatencyFrontend,
                 .time = At(12000),
                 .bucket_counts = "[3,3,1]",
                 .bounds = "[10,100]",
                 .count = 7,
                 .sum = 255});
  AddPoint(&a1, {.series = kSeriesLatencyFrontend,
                 .time = At(22000),
                 .bucket_counts = "[0,1,0]",
                 .bounds = "[10,100]",
                 .count = 1,
                 .sum = 20});
  AddPoint(&a1, {.series = kSeriesLatencyFrontend, .time = At(23000), .count = 5, .sum = 50});
  AddPoint(&a1, {.series = kSeriesLatencyFrontend,
                 .time = At(31000),
                 .bucket_counts = "[1,1,1,1]",
                 .bounds = "[5,10,100]",
                 .count = 4,
                 .sum = 300});
  // Delta histogram: the bucket layout changes at 12 s.
  AddPoint(&a1, {.series = kSeriesLatencyCheckout,
                 .time = At(1000),
                 .bucket_counts = "[1,0,0]",
                 .bounds = "[10,100]",
                 .count = 1,
                 .sum = 5});
  AddPoint(&a1, {.series = kSeriesLatencyCheckout,
                 .time = At(2000),
                 .bucket_counts = "[0,2,1]",
                 .bounds = "[10,100]",
                 .count = 3,
                 .sum = 250});
  AddPoint(&a1, {.series = kSeriesLatencyCheckout,
                 .time = At(11000),
                 .bucket_counts = "[1,1,1]",
                 .bounds = "[10,100]",
                 .count = 3,
                 .sum = 165});
  AddPoint(&a1, {.series = kSeriesLatencyCheckout,
                 .time = At(12000),
                 .bucket_counts = "[2,0,0,0]",
                 .bounds = "[5,10,100]",
                 .count = 2,
                 .sum = 4});
  AddPoint(&a1, {.series = kSeriesLatencyCheckout,
                 .time = At(13000),
                 .bucket_counts = "[1,1,1,1]",
                 .bounds = "[5,10,100]",
                 .count = 4,
                 .sum = 300});

  MetricBatch& a2 = out[1];
  a2.project_id = kProjectA;
  // Series -16 again with another description: the first one written stays.
  AddSeries(&a2, {kSeriesTempCore0, "cpu.temp", kGauge, "°C", "CHANGED", 0, false, "naïve-svc", R"({"core":0})"});
  AddPoint(&a2, {.series = kSeriesTempCore0, .time = At(12000), .value = 50});
  AddPoint(&a2, {.series = kSeriesTempCore0, .time = At(15000)});  // no value, newest of its bucket
  AddPoint(&a2, {.series = kSeriesTempCore0, .time = At(25000)});  // the only point of its bucket
  // Hours from kT0's hour (kHour0, 800 s before kT0), for the rollup cases:
  // whole minutes and hours, raw edges, late points (older than this
  // write's others), an int, a delta histogram of one layout, a delta
  // exponential histogram (which rollups cannot sum).
  constexpr int64_t kHour0 = kT0 - Ms(800'000), kH = Ms(3'600'000), kS = Ms(1000);
  for (const PointSpec& p : std::initializer_list<PointSpec>{
           {.series = kSeriesTempCore0, .time = kHour0 + 2 * kH + 5 * kS, .value = 3},
           {.series = kSeriesTempCore0, .time = kHour0 + 2 * kH + 65 * kS, .value = 4.5},
           {.series = kSeriesTempCore0, .time = kHour0 + 2 * kH + 70 * kS, .value = 6, .is_int = true},
           {.series = kSeriesTempCore0, .time = kHour0 + 2 * kH + 125 * kS, .value = 9},
           {.series = kSeriesTempCore0, .time = kHour0 + 3 * kH + 10 * kS, .value = 1},
           {.series = kSeriesTempCore0, .time = kHour0 - kH / 2, .value = 8},
           {.series = kSeriesTempCore1, .time = kHour0 + 2 * kH + 6 * kS, .value = -2},
           {.series = kSeriesTempCore1, .time = kHour0 + 2 * kH + 6 * kS + 1, .value = -1},
           {.series = kSeriesRequests200, .time = kHour0 + 2 * kH + 4 * kS, .value = 500},
           {.series = kSeriesRequests200, .time = kHour0 + 3 * kH + 4 * kS, .value = 900},
           {.series = kSeriesLatencyCheckout,
           .time = kHour0 + 2 * kH + 1 * kS,
           .bucket_counts = "[1,2,0,0]",
           .bounds = "[5,10,100]",
           .count = 3,
           .sum = 20},
           {.series = kSeriesLatencyCheckout,
           .time = kHour0 + 2 * kH + 61 * kS,
           .bucket_counts = "[0,1,1,0]",
           .bounds = "[5,10,100]",
           .count = 2,
           .sum = 60},
           {.series = kSeriesLatencyCheckout,
           .time = kHour0 + 3 * kH + 30 * kS,
           .bucket_counts = "[2,0,0,1]",
           .bounds = "[5,10,100]",
           .count = 3,
           .sum = 300},
           {.series = kSeriesLatencyFrontend,
           .time = kHour0 + 2 * kH + 2 * kS,
           .bucket_counts = "[4,4,4,4]",
           .bounds = "[5,10,100]",
           .count = 16,
           .sum = 400},
           {.series = kSeriesLatencyFrontend,
           .time = kHour0 + 2 * kH + 62 * kS,
           .bucket_counts = "[5,5,5,5]",
           .bounds = "[5,10,100]",
           .count = 20,
           .sum = 500},
           {.series = kSeriesLatencyFrontend,
           .time = kHour0 + 3 * kH + 40 * kS,
           .bucket_counts = "[6,6,6,6]",
           .bounds = "[5,10,100]",
           .count = 24,
           .sum = 600},
           {.series = kSeriesRpcCheckout,
           .time = kHour0 + 2 * kH + 3 * kS,
           .exp = R"({"scale":0,"zero_count":1,"zero_threshold":0,)"
                  R"("positive":{"offset":0,"bucket_counts":[1]},"negative":{"offset":0,"bucket_counts":[]}})",
           .count = 2},
       }) {
    AddPoint(&a2, p);
  }

  MetricBatch& b = out[2];
  b.project_id = kProjectB;
  AddSeries(&b, {kSeriesProjectB, "b.only.metric", kGauge, "", "", 0, false, "secret-b", "{}"});
  AddPoint(&b, {.series = kSeriesProjectB, .time = At(1000), .value = 99});
  return out;
}

template <typename Batch>
std::vector<const Batch*> Pointers(const std::vector<Batch>& batches, size_t from, size_t to) {
  std::vector<const Batch*> out;
  for (size_t i = from; i < to && i < batches.size(); ++i) out.push_back(&batches[i]);
  return out;
}

//! Writes batches[0] in one call and the rest in a second.
template <typename Batch, typename WriteFn>
Status WriteInTwoCalls(TelemetryStore* store, Signal signal, const std::vector<Batch>& batches, WriteFn write) {
  Result<std::unique_ptr<SignalSink>> sink = store->NewSink(signal);
  if (!sink.ok()) return sink.status();
  SL_RETURN_IF_ERROR(write(**sink, Pointers(batches, 0, 1)));
  return write(**sink, Pointers(batches, 1, batches.size()));
}

}  // namespace

ReadDataset BuildReadDataset() { return {Spans(), Logs(), Metrics()}; }

std::vector<SpanBatch> ServiceMapSpans() {
  std::vector<SpanBatch> out(2);
  SpanBatch& b = out[0];
  b.project_id = kProjectMap;
  AddResource(&b.resources, {kResourceFrontend, R"({"service.name":"web"})", "", ""});
  struct Row {
    TraceId trace;
    uint64_t span, parent;
    const char* service;
    int32_t kind;
    int64_t start_ms, duration_ms;
    int32_t status;
  };
  const Row rows[] = {
      {kTraceM1, 0x1, 0, "web", kServer, 1000, 100, 0},     {kTraceM1, 0x2, 0x1, "web", kClient, 1001, 50, 0},
      {kTraceM1, 0x3, 0x2, "api", kServer, 1002, 40, 1},    {kTraceM1, 0x4, 0x3, "api", kClient, 1003, 20, 0},
      {kTraceM1, 0x5, 0x4, "db-svc", kServer, 1004, 10, 2}, {kTraceM2, 0x1, 0, "web", kServer, 2000, 30, 0},
      {kTraceM2, 0x2, 0x1, "api", kServer, 2001, 20, 0},    {kTraceM2, 0x3, 0x2, "db-svc", kServer, 2002, 30, 0},
      {kTraceM3, 0x1, 0xdead, "api", kServer, 3000, 10, 0}, {kTraceM4, 0x1, 0, "web", kServer, -500, 2000, 0},
      {kTraceM4, 0x2, 0x1, "api", kServer, 100, 60, 0},     {kTraceM5, 0x1, 0, "web", kServer, -120000, 200000, 0},
      {kTraceM5, 0x2, 0x1, "api", kServer, 500, 70, 0},     {kTraceM6, 0x1, 0, "web", kServer, 59000, 5, 0},
      {kTraceM6, 0x2, 0x1, "api", kServer, 60000, 5, 0},    {kTraceM7, 0x1, 0, "web", kServer, 60010, 5, 0},
      {kTraceM7, 0x2, 0x1, "api", kServer, 59990, 5, 0},    {kTraceM0, 0x1, 0, "web", kServer, 4000, 5, 0},
  };
  for (const Row& r : rows) {
    AddSpan(&b, {.trace = r.trace,
                 .span = r.span,
                 .parent = r.parent,
                 .service = r.service,
                 .name = r.kind == kClient ? "call" : "handle",
                 .kind = r.kind,
                 .start = At(r.start_ms),
                 .duration = Ms(r.duration_ms),
                 .status = r.status});
  }
  SpanBatch& other = out[1];
  other.project_id = kProjectMapOther;
  AddResource(&other.resources, {kResourceFrontend, R"({"service.name":"other-svc"})", "", ""});
  AddSpan(&other, {.trace = kTraceM1,
                   .span = 0x6,
                   .parent = 0x1,
                   .service = "other-svc",
                   .name = "handle",
                   .kind = kServer,
                   .start = At(1005),
                   .duration = Ms(5)});
  return out;
}

namespace {

//! A new log batch of `step`: the project's, with resource 201 and no scope.
LogBatch& AddLogBatch(WriteStep* step, int64_t project_id, const char* resource_attributes) {
  LogBatch& b = step->logs.emplace_back();
  b.project_id = project_id;
  b.resources.resource_id.push_back(201);
  b.resources.resource_attributes.Append(resource_attributes);
  b.resources.scope_name.Append("");
  b.resources.scope_version.Append("");
  b.resources.scope_attributes.Append("{}");
  return b;
}

}  // namespace

std::vector<WriteStep> SeverityPagingWrites() {
  std::vector<WriteStep> out(2);
  for (WriteStep& step : out) AddLogBatch(&step, kProjectSeverity, R"({"service.name":"a"})");
  const int64_t m = 60'000;
  const int64_t start = kSeverityRange.from_ns;
  LogBatch& l1 = out[0].logs[0];
  for (int64_t t = -180; t <= 0; ++t) {
    AddLog(&l1, {.time = At(t * m + 500), .severity = 9, .body = "all well", .service = "a", .trace = kNoTrace});
  }
  AddLog(&l1, {.time = start - 1, .severity = 17, .body = "before the range", .service = "a", .trace = kNoTrace});
  AddLog(&l1, {.time = start, .severity = 17, .body = "at the range's first ns", .service = "b", .trace = kNoTrace});
  AddLog(&l1,
         {.time = start + 3, .severity = 21, .body = "fatal in the first minute", .service = "a", .trace = kNoTrace});
  for (int i = 0; i < 3; ++i)
    AddLog(&l1, {.time = At(-150 * m), .severity = 17, .body = "one time, three", .service = "a", .trace = kNoTrace});
  for (int64_t t : {-140, -120, -100, -91}) {
    AddLog(&l1, {.time = At(t * m + 10),
                 .severity = t == -120 ? 21 : 17,
                 .body = "error",
                 .service = t == -100 ? "b" : "a",
                 .trace = kNoTrace});
  }
  AddLog(&out[1].logs[0],
         {.time = At(-130 * m), .severity = 17, .body = "late error", .service = "b", .trace = kNoTrace});
  return out;
}

std::vector<WriteStep> IndexedLookupWrites() {
  std::vector<WriteStep> out(3);
  auto spans = [](WriteStep* step) -> SpanBatch& {
    SpanBatch& b = step->spans.emplace_back();
    b.project_id = kProjectIndex;
    AddResource(&b.resources, {kResourceFrontend, R"({"service.name":"indexed"})", "", ""});
    return b;
  };
  auto logs = [](WriteStep* step) -> LogBatch& {
    return AddLogBatch(step, kProjectIndex, R"({"service.name":"indexed"})");
  };
  const int64_t h = kHourMs;
  SpanBatch& s1 = spans(&out[0]);
  AddSpan(&s1, {.trace = kTraceLong,
                .span = 0x11,
                .service = "indexed",
                .name = "root",
                .kind = kServer,
                .start = At(-3 * h),
                .duration = Ms(5)});
  LogBatch& l1 = logs(&out[0]);
  AddLog(&l1, {.time = At(-4 * h),
               .severity = 9,
               .body = "Zebrafish Rare-Word spotted near the ЖУРНАЛ dock",
               .service = "indexed",
               .trace = kNoTrace});
  AddLog(&l1, {.time = At(-3 * h),
               .severity = 9,
               .body = "opened the long trace",
               .service = "indexed",
               .trace = kTraceLong,
               .span = 0x11});
  AddLog(
      &l1,
      {.time = At(-2 * h), .severity = 13, .body = "an orphan record", .service = "indexed", .trace = kTraceLogsOnly});

  SpanBatch& s2 = spans(&out[1]);
  AddSpan(&s2, {.trace = kTraceLong,
                .span = 0x12,
                .parent = 0x11,
                .service = "indexed",
                .name = "child",
                .kind = kClient,
                .start = At(1000),
                .duration = Ms(5)});
  AddSpan(&s2, {.trace = kTraceOther,
                .span = 0x31,
                .service = "indexed",
                .name = "other",
                .kind = kServer,
                .start = At(2000),
                .duration = Ms(5)});
  LogBatch& l2 = logs(&out[1]);
  AddLog(&l2, {.time = At(1000),
               .severity = 17,
               .body = "request failed: card_declined for ÉMILE",
               .service = "indexed",
               .trace = kTraceLong,
               .span = 0x12});
  AddLog(&l2, {.time = At(2000),
               .severity = 9,
               .body = "blob x0123456789abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 done",
               .service = "indexed",
               .trace = kNoTrace});
  static const std::string kManyWords = [] {
    std::string body;
    for (int i = 1; i <= 70; ++i) body += "w" + std::to_string(i) + " ";
    return body + "needleinoverflow";
  }();
  AddLog(&l2, {.time = At(-1 * h), .severity = 9, .body = kManyWords.c_str(), .service = "indexed", .trace = kNoTrace});

  SpanBatch& s3 = spans(&out[2]);
  AddSpan(&s3, {.trace = kTraceLong,
                .span = 0x13,
                .parent = 0x11,
                .service = "indexed",
                .name = "late",
                .kind = kInternal,
                .start = At(-2 * h),
                .duration = Ms(5)});
  LogBatch& l3 = logs(&out[2]);
  AddLog(&l3,
         {.time = At(-1000), .severity = 9, .body = "the orphan again", .service = "indexed", .trace = kTraceLogsOnly});
  return out;
}

Status WriteReadDataset(const ReadDataset& d, TelemetryStore* store) {
  SL_RETURN_IF_ERROR(
      WriteInTwoCalls(store, Signal::kSpans, d.spans, [](SignalSink& s, const auto& b) { return s.WriteSpans(b); }));
  SL_RETURN_IF_ERROR(
      WriteInTwoCalls(store, Signal::kLogs, d.logs, [](SignalSink& s, const auto& b) { return s.WriteLogs(b); }));
  return WriteInTwoCalls(store, Signal::kMetrics, d.metrics,
                         [](SignalSink& s, const auto& b) { return s.WriteMetrics(b); });
}

}  // namespace sightline::read_dataset
