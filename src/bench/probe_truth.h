#pragma once

// What the read probe's dashboard calls must answer, computed from the rows
// it sent (`sightline bench probe --check`). The probe feeds the generator's
// own rows of every accepted request here (generated_rows.h: what it chose to
// send, never the server's decoding of it, so a decoder that loses or
// changes a value makes the answer differ from the truth); each Check* then
// diffs one API answer (the JSON text) against these tallies and returns
// "ok", "skipped: <why>" or "mismatch: <what>".
//
// Independent of the server's code: the API's meaning (docs/API.md: an entry
// span is SERVER or CONSUMER or has no parent; its endpoint is http.route,
// else url.path or http.target, else the span name; an exception is the
// first "exception" event's type and message) is applied to the rows here;
// counts, error counts, top-N orderings and the newest page of each log
// filter are recomputed; percentiles use linear interpolation between closest
// ranks (DuckDB quantile_cont, which the SQLite engine reproduces in C++,
// docs/API.md) and are only compared while every duration is kept (up to
// exact_percentile_rows entry spans).
//
// Assumes the project held no other rows in the queried range (a spawned
// server). Not thread-safe.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "bench/generated_rows.h"

namespace sightline::bench {

struct ProbeTruthOptions {
  int64_t from_ns = 0, to_ns = 0;         // the queried range [from, to)
  size_t page = 50;                       // limit= of the list calls
  size_t top = 10;                        // endpoints/series top=
  size_t exact_percentile_rows = 100000;  // per signal: entry spans, metric points
  //! The server's --rollup-exact-spans: past this many entry spans in range,
  //! span percentiles may come from the rollups, which promise 1%
  //! (docs/API.md); below it they must be exact.
  uint64_t rollup_exact_spans = 1000000;
  int severity_min = 17;
  std::string word;      // logs q=
  std::string trace_id;  // logs trace_id= (hex)
  TraceId span_trace;    // traces/{id}: a trace the spans hold
};

//! Linear-interpolation percentile (q in [0,1]) of sorted values; NaN when empty.
double InterpolatedPercentile(const std::vector<int64_t>& sorted, double q);

class ProbeTruth {
 public:
  explicit ProbeTruth(ProbeTruthOptions options) : o_(std::move(options)) {}

  void AddSpans(const SpanRequest& request);
  void AddLogs(const LogRequest& request);
  void AddMetrics(const MetricRequest& request);

  //! GET /api/v1/endpoints?limit=page: total, and per row count, errors and
  //! (exact level) p50/p95/p99; rows are the top counts.
  std::string CheckEndpoints(std::string_view json) const;
  //! GET /api/v1/endpoints/series?metric=p95&top=N: the series names in
  //! order and, at an exact level, every bucket's p95 (in the answer's step_ms).
  std::string CheckEndpointSeries(std::string_view json) const;
  //! GET /api/v1/exceptions?limit=page: (type, message, service, count) rows in order.
  std::string CheckExceptions(std::string_view json) const;
  enum class LogFilter { kSeverity, kWord, kTraceId };
  //! GET /api/v1/logs?limit=page with one filter: the times of the newest page.
  std::string CheckLogs(std::string_view json, LogFilter filter) const;
  //! GET /api/v1/traces/{span_trace}: every span sent with that trace id
  //! (at any time), as (span id, start) in the answer's order.
  std::string CheckTrace(std::string_view json) const;
  //! GET /api/v1/metrics: the set of metric names.
  std::string CheckMetricList(std::string_view json) const;
  //! GET /api/v1/metrics/series?name=N&group_by=K: the set of values of K;
  //! with avg, also (at an exact level) each group's mean per bucket, pooled
  //! over its series' points, in the answer's step_ms.
  std::string CheckMetricGroups(std::string_view json, const std::string& name, const std::string& key,
                                bool avg = false) const;

  uint64_t entry_spans() const { return entry_spans_; }
  uint64_t log_rows() const { return log_rows_; }
  uint64_t metric_points() const { return metric_points_; }
  //! Entry spans (for percentiles) and metric points (for bucket means) are
  //! kept while there are at most exact_percentile_rows of them.
  bool ExactSpans() const { return entry_spans_ <= o_.exact_percentile_rows; }
  //! The relative error span percentiles may have (see rollup_exact_spans).
  double SpanPercentileTolerance() const;
  bool ExactPoints() const { return metric_points_ <= o_.exact_percentile_rows; }
  //! Log rows matching a filter (all of them, not just the newest page).
  uint64_t LogMatches(LogFilter f) const { return logs_[static_cast<int>(f)].matches; }
  const ProbeTruthOptions& options() const { return o_; }

 private:
  struct EndpointTally {
    uint64_t count = 0, errors = 0;
    std::vector<std::pair<int64_t, int64_t>> spans;  // (start, duration) ns, while Exact()
  };
  //! The newest `page` times of the rows matching one log filter.
  struct NewestPage {
    uint64_t matches = 0;
    std::multiset<int64_t> times;
  };
  bool InRange(int64_t t) const { return t >= o_.from_ns && t < o_.to_ns; }
  void Keep(NewestPage* p, int64_t t) const;

  ProbeTruthOptions o_;
  uint64_t entry_spans_ = 0, log_rows_ = 0, metric_points_ = 0;
  std::map<std::pair<std::string, std::string>, EndpointTally> endpoints_;            // (service, endpoint)
  std::map<std::tuple<std::string, std::string, std::string>, uint64_t> exceptions_;  // (type, message, service)
  NewestPage logs_[3];
  std::multiset<std::pair<int64_t, std::string>> trace_spans_;  // (start, span id hex) of o_.span_trace
  // metric name -> (service, point attributes as "k=v\n..." in sent order) ->
  // the label values by key (service.name included), for every series with a
  // point in range. Map nodes never move: points refer to their series' key.
  using SeriesKey = std::pair<std::string, std::string>;
  using Labels = std::map<std::string, std::string>;
  std::map<std::string, std::map<SeriesKey, Labels>, std::less<>> series_;
  struct Point {
    int64_t time_ns;
    double value;
    const SeriesKey* series;  // a key of series_
  };
  std::map<std::string, std::vector<Point>, std::less<>> points_;  // gauge / sum points by metric name, while Exact()
};

}  // namespace sightline::bench
