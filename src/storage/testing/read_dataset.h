#pragma once

// The read conformance dataset: a fixed set of spans, logs and metric points
// built as model batches and written through an engine's sinks, so every
// engine holds exactly the same rows. storage/read_conformance_test.cc queries
// it; its hand-written expectations refer to the names below.
//
// Edge cases, and the rows that carry them (times are kT0 + milliseconds, see At()):
// - Project isolation: project B reuses trace ids (kTrace1, kTrace2), a
//   resource id and a series id (11) of project A with other content.
// - Ranges: spans, logs and points 1 ns before kRange and exactly at its
//   (exclusive) end; a log without a timestamp (time 0).
// - Ties: two (service, endpoint) pairs with equal count, errors and
//   percentiles; equal start times inside a trace (a2/a3, c0/c5, e1/e2) and between
//   trace starts (kTrace2/kTrace3); equal log times across two writes (L1, L2
//   and L3) and within one (L6, L7); exception groups with equal counts, one
//   with an absent type; equal gauge points.
// - Exceptions from logs: L2 joins the spans' PaymentError group; L6 and L7
//   form a group only because their messages normalise alike (ids, hex);
//   L4 has no type and no trace; LB1 is project B's.
// - 64-bit ids: trace ids with a zero high half that differ only in the low
//   half (kTrace2, kTrace3, kTrace5), halves and span ids with the top bit set
//   (kTrace4, kTrace5, a3, c5), where signed and unsigned order disagree; a
//   root and a child with a smaller id starting together (e1, e2).
// - Absent values: no http.route (endpoint is the name), no exception type
//   (b2, c4) or message (b1, b3, e1), roots by kind INTERNAL (e1) and a span
//   whose parent starts later (c0), a JSON null attribute, a histogram point
//   without bucket counts, gauge points without a value.
// - Unicode in service, span, metric and unit names, bodies and attributes
//   (also as a JSON \u escape); log bodies that differ only in the case of a
//   non-ASCII letter (É/é, Greek capitals); LIKE wildcards in a body.
// - Attribute values of every JSON type: string, bool, integer, negative
//   integer, decimal written with a trailing zero (2.50), exponent (1e+21).
// - Metrics: cumulative and delta histograms (a counter reset, a change of
//   bucket layout), monotonic cumulative and delta sums with a reset, a
//   non-monotonic sum, gauges, one catalog row made of several series, a
//   series written twice with other content (the first stays).

#include <cstdint>
#include <vector>

#include "common/status.h"
#include "model/batch.h"
#include "storage/telemetry_reader.h"
#include "storage/telemetry_store.h"

namespace sightline::read_dataset {

inline constexpr int64_t kProjectA = 1;
inline constexpr int64_t kProjectB = 2;
inline constexpr int64_t kProjectEmpty = 3;  // nothing stored

inline constexpr int64_t kT0 = 1'700'000'000'000'000'000;
inline constexpr int64_t kNsPerMs = 1'000'000;
//! kT0 plus `ms` milliseconds.
constexpr int64_t At(int64_t ms) { return kT0 + ms * kNsPerMs; }
constexpr int64_t Ms(int64_t ms) { return ms * kNsPerMs; }
//! The range most queries read: one minute from kT0.
inline constexpr TimeRange kRange{kT0, At(60'000)};
//! Six 10-second buckets over kRange.
inline constexpr Buckets kTenSeconds{kT0, Ms(10'000), 6};

inline constexpr TraceId kTrace1{0x0af7651916cd43ddull, 0x8448eb211c80319cull};
inline constexpr TraceId kTrace2{0, 0x1111111111111111ull};
inline constexpr TraceId kTrace3{0, 0x2222222222222222ull};
inline constexpr TraceId kTrace4{0xfedcba9876543210ull, 0x0123456789abcdefull};
inline constexpr TraceId kTrace5{0, 0xffffffffffffffffull};
inline constexpr TraceId kTrace6{0x0af7651916cd43ddull, 0x0000000000000001ull};
inline constexpr TraceId kTrace7{1, 1};  // every span before kRange
inline constexpr TraceId kTrace8{0, 3};  // one span exactly at kRange's end
inline constexpr TraceId kTraceMissing{0x1234, 0x5678};

// Span ids (project A unless noted); the trace is the letter: a = kTrace1,
// b = kTrace2, c = kTrace3, d = kTrace4, e = kTrace5, f = kTrace6.
inline constexpr uint64_t kSpanA1 = 0xa1;
inline constexpr uint64_t kSpanA2 = 0xa2;
inline constexpr uint64_t kSpanA3 = 0xf0000000000000a3ull;
inline constexpr uint64_t kSpanB1 = 0xb1;
inline constexpr uint64_t kSpanB2 = 0xb2;
inline constexpr uint64_t kSpanB3 = 0xb3;
inline constexpr uint64_t kSpanC0 = 0xc0;
inline constexpr uint64_t kSpanC1 = 0xc1;
inline constexpr uint64_t kSpanC2 = 0xc2;
inline constexpr uint64_t kSpanC4 = 0xc4;
inline constexpr uint64_t kSpanC5 = 0x80000000000000c5ull;
inline constexpr uint64_t kSpanD1 = 0xd1;
inline constexpr uint64_t kSpanD2 = 0xd2;
inline constexpr uint64_t kSpanD3 = 0xd3;
inline constexpr uint64_t kSpanE1 = 0xe1;
inline constexpr uint64_t kSpanE2 = 0x0e;
inline constexpr uint64_t kSpanF1 = 0xf1;
inline constexpr uint64_t kSpanG1 = 0x91;  // kTrace7
inline constexpr uint64_t kSpanH1 = 0x81;  // kTrace8
inline constexpr uint64_t kSpanP1 = 0x51;  // project B, kTrace1
inline constexpr uint64_t kSpanP2 = 0x52;  // project B, kTrace2

// Metric series ids (project A; project B has its own series 11).
inline constexpr int64_t kSeriesLatencyFrontend = 11;   // cumulative histogram
inline constexpr int64_t kSeriesLatencyCheckout = -12;  // delta histogram
inline constexpr int64_t kSeriesRequests200 = 13;       // monotonic cumulative sum
inline constexpr int64_t kSeriesRequestsCheckout = 14;  // monotonic delta sum
inline constexpr int64_t kSeriesQueueDepth = 15;        // non-monotonic sum
inline constexpr int64_t kSeriesTempCore0 = -16;        // gauge
inline constexpr int64_t kSeriesTempCore1 = 17;         // gauge
inline constexpr int64_t kSeriesRequests500 = 18;
inline constexpr int64_t kSeriesRequests404 = 19;  // non-monotonic delta
inline constexpr int64_t kSeriesRequestsGauge = 20;
inline constexpr int64_t kSeriesOverflow = 21;      // no points
inline constexpr int64_t kSeriesRpcFrontend = 22;   // cumulative exponential histogram
inline constexpr int64_t kSeriesRpcCheckout = -23;  // delta exponential histogram
inline constexpr int64_t kSeriesGcPause = 24;       // summary
inline constexpr int64_t kSeriesProjectB = 11;

// --- The service map's spans (ServiceMapSpans), apart from BuildReadDataset
// so the answers of the other operations stay as they are. Times are At(ms).
// kProjectMap, every span SERVER unless noted:
// - kTraceM1: web m1 (1000, 100 ms) -> web m2 CLIENT (1001, 50) -> api m3
//   (1002, 40) -> api m4 CLIENT (1003, 20) -> db-svc m5 (1004, 10, error).
// - kTraceM2: web n1 (2000, 30) -> api n2 (2001, 20) -> db-svc n3 (2002, 30).
// - kTraceM3: api o1 (3000, 10) whose parent is not stored.
// - kTraceM4: web q1 (-500, 2000) -> api q2 (100, 60): parent before the range.
// - kTraceM5: web r1 (-120000, 200000) -> api r2 (500, 70): parent 2 min before.
// - kTraceM6: web s1 (59000, 5) -> api s2 (60000, 5): child at the range's end.
// - kTraceM7: web t1 (60010, 5) -> api t2 (59990, 5): parent after the range.
// - kTraceM0: web u1 (4000, 5), a root alone, written last: in the range it
//   lasts 5 ms, as kTraceM6 and kTraceM7 do, and its id is the smallest.
// kProjectMapOther: other-svc x1 (1005, 5) whose parent id is m1 of kTraceM1
// (stored only in kProjectMap).
inline constexpr int64_t kProjectMap = 4;
inline constexpr int64_t kProjectMapOther = 5;
inline constexpr TraceId kTraceM1{0x4d, 1};
inline constexpr TraceId kTraceM2{0x4d, 2};
inline constexpr TraceId kTraceM3{0x4d, 3};
inline constexpr TraceId kTraceM4{0x4d, 4};
inline constexpr TraceId kTraceM5{0x4d, 5};
inline constexpr TraceId kTraceM6{0x4d, 6};
inline constexpr TraceId kTraceM7{0x4d, 7};
inline constexpr TraceId kTraceM0{0x4d, 0};

//! Two batches: kProjectMap's spans and kProjectMapOther's.
std::vector<SpanBatch> ServiceMapSpans();

// --- The indexed lookups' project (IndexedLookupWrites), apart from
// BuildReadDataset as the service map is: a trace and log records spread
// over hours and written in three steps, for the engines' own indexes
// (DuckDB's trace ranges and log tokens). Times are At(ms).
// - kTraceLong: spans at -3 h (step 1), +1 s (step 2) and a late span at
//   -2 h written last (step 3); log records at -3 h and +1 s.
// - kTraceLogsOnly: log records at -2 h and -1 s, no span.
// - kTraceOther: one span at +2 s, no log record.
// - Bodies: a word only in the oldest record (-4 h, "Zebrafish Rare-Word"),
//   an underscore and a non-ASCII capital ("card_declined", "ÉMILE"), an
//   80-character token, a record of 70 words whose last word is past any
//   per-record token cap.
inline constexpr int64_t kProjectIndex = 6;
inline constexpr TraceId kTraceLong{0x1d, 1};
inline constexpr TraceId kTraceLogsOnly{0x1d, 2};
inline constexpr TraceId kTraceOther{0x1d, 3};
inline constexpr int64_t kHourMs = 3'600'000;
//! Every row of the indexed lookups' project.
inline constexpr TimeRange kIndexRange{At(-5 * kHourMs), At(60'000)};

//! One Write call of spans, then one of log records.
struct WriteStep {
  std::vector<SpanBatch> spans;
  std::vector<LogBatch> logs;
};
//! The three steps, in order.
std::vector<WriteStep> IndexedLookupWrites();

// --- Severity pages past the newest window (SeverityPagingWrites): log
// records of kProjectSeverity over kSeverityRange (three hours, starting
// 7 ns into a minute), every ERROR (17) or FATAL (21) in its oldest 90
// minutes and an INFO (9) each minute throughout, so a severity page is not
// in the range's newest window. Step 1: errors at the range's first ns-es
// (one before it), three sharing a time, services "a" and "b"; step 2: a
// late error between step 1's.
inline constexpr int64_t kProjectSeverity = 8;
inline constexpr TimeRange kSeverityRange{At(-180 * 60'000) + 7, At(60'000)};
std::vector<WriteStep> SeverityPagingWrites();

struct ReadDataset {
  std::vector<SpanBatch> spans;
  std::vector<LogBatch> logs;
  std::vector<MetricBatch> metrics;
};

ReadDataset BuildReadDataset();

//! Writes the dataset through one sink per signal: the first batch of each
//! signal in one Write call, the rest together in a second (so ties in
//! insertion order span two writes). The sinks are closed on return.
Status WriteReadDataset(const ReadDataset& dataset, TelemetryStore* store);

}  // namespace sightline::read_dataset
