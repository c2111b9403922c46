#include "bench/probe_truth.h"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "common/exception_group.h"

namespace sightline::bench {

double InterpolatedPercentile(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return NAN;
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return static_cast<double>(sorted[lo]) + (static_cast<double>(sorted[hi]) - static_cast<double>(sorted[lo])) * frac;
}

namespace {

//! The start of the series grid the server answers on: `from` floored to a
//! multiple of the step (docs/API.md, series).
int64_t GridOrigin(int64_t from_ns, int64_t step_ms) {
  const int64_t from_ms = from_ns / 1000000;
  return (from_ms / step_ms) * step_ms * 1000000;
}

constexpr size_t kMaxReported = 3;  // differences listed per mismatch

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

//! Collects differences; "ok" when there were none.
class Diff {
 public:
  template <typename... Args>
  void Add(const Args&... parts) {
    if (++count_ > kMaxReported) return;
    std::ostringstream s;
    s.precision(12);  // enough digits to see a near miss
    (s << ... << parts);
    if (!text_.empty()) text_ += "; ";
    text_ += s.str();
  }
  std::string Verdict() const {
    if (count_ == 0) return "ok";
    std::string out = "mismatch: " + text_;
    if (count_ > kMaxReported) out += " (+" + std::to_string(count_ - kMaxReported) + " more)";
    return out;
  }

 private:
  size_t count_ = 0;
  std::string text_;
};

//! Parses an API answer; the error text doubles as the mismatch reason.
bool Parse(simdjson::dom::parser* parser, std::string_view json, simdjson::dom::element* doc, std::string* error) {
  simdjson::padded_string padded(json);
  if (parser->parse(padded).get(*doc) != simdjson::SUCCESS) {
    *error = "mismatch: answer is not JSON";
    return false;
  }
  return true;
}

std::string Str(simdjson::dom::element e, const char* key) {
  std::string_view v;
  if (e[key].get_string().get(v) != simdjson::SUCCESS) return "";
  return std::string(v);
}

int64_t Int(simdjson::dom::element e, const char* key, int64_t missing = -1) {
  int64_t v;
  if (e[key].get_int64().get(v) == simdjson::SUCCESS) return v;
  std::string_view s;  // *_ns fields are integers in strings
  if (e[key].get_string().get(s) == simdjson::SUCCESS &&
      std::from_chars(s.data(), s.data() + s.size(), v).ec == std::errc()) {
    return v;
  }
  return missing;
}

double Num(simdjson::dom::element e, const char* key) {
  double v;
  return e[key].get_double().get(v) == simdjson::SUCCESS ? v : NAN;
}

//! Equal to a millisecond rounding: the server converts ns to ms doubles.
bool CloseMs(double got, double want, double relative = 1e-9) {
  return std::fabs(got - want) <= 1e-6 + relative * std::fabs(want);
}

}  // namespace

// ---- tallies ------------------------------------------------------------------

void ProbeTruth::AddSpans(const SpanRequest& request) {
  for (const SpanRow& span : request.rows) {
    const int64_t start = span.start_time_ns;
    if (span.trace_id == o_.span_trace && !IsZero(span.trace_id)) trace_spans_.insert({start, IdHex(span.span_id)});
    if (!InRange(start)) continue;
    const std::string service(span.resource->service_name);
    if (span.event && span.event->name == "exception") {
      const Attribute* type = span.event->attributes.Find("exception.type");
      const Attribute* message = span.event->attributes.Find("exception.message");
      std::string t(type ? type->string_value : ""), m(message ? message->string_value : "");
      // Grouped by the normalised message, as the server groups them.
      if (!t.empty() || !m.empty()) ++exceptions_[{std::move(t), NormalizeExceptionMessage(m), service}];
    }
    const bool entry = span.kind == 2 || span.kind == 5 || IsZero(span.parent_span_id);
    if (!entry) continue;
    ++entry_spans_;
    std::string_view endpoint = span.name;
    for (const char* key : {"http.route", "url.path", "http.target"}) {
      const Attribute* a = span.attributes.Find(key);
      if (a != nullptr && !a->is_int && !a->string_value.empty()) {
        endpoint = a->string_value;
        break;
      }
    }
    EndpointTally& t = endpoints_[{service, std::string(endpoint)}];
    ++t.count;
    if (span.status_code == 2) ++t.errors;
    if (ExactSpans()) t.spans.emplace_back(start, span.end_time_ns - start);
  }
  if (!ExactSpans()) {
    for (auto& [key, t] : endpoints_) std::vector<std::pair<int64_t, int64_t>>().swap(t.spans);
  }
}

void ProbeTruth::Keep(NewestPage* p, int64_t t) const {
  ++p->matches;
  if (p->times.size() < o_.page) {
    p->times.insert(t);
  } else if (t > *p->times.begin()) {
    p->times.erase(p->times.begin());
    p->times.insert(t);
  }
}

void ProbeTruth::AddLogs(const LogRequest& request) {
  const std::string word = Lower(o_.word);
  for (const LogRow& r : request.rows) {
    const int64_t t = r.time_ns;
    if (!InRange(t)) continue;
    ++log_rows_;
    if (r.severity_number >= o_.severity_min) Keep(&logs_[static_cast<int>(LogFilter::kSeverity)], t);
    if (!word.empty() && Lower(r.body).find(word) != std::string::npos) {
      Keep(&logs_[static_cast<int>(LogFilter::kWord)], t);
    }
    if (!o_.trace_id.empty() && r.has_trace && IdHex(r.trace_id) == o_.trace_id) {
      Keep(&logs_[static_cast<int>(LogFilter::kTraceId)], t);
    }
  }
}

void ProbeTruth::AddMetrics(const MetricRequest& request) {
  // A request repeats each series for many points: look each up once.
  struct Known {
    const SeriesKey* key;
    std::vector<Point>* points;  // nullptr for histograms (no value to average)
  };
  std::unordered_map<const MetricSeries*, Known> known;
  for (const MetricPoint& p : request.rows) {
    if (!InRange(p.time_ns)) continue;
    ++metric_points_;
    const MetricSeries& s = *p.series;
    const MetricDef& def = *s.metric;
    auto [it, added] = known.try_emplace(&s);
    if (added) {
      Labels labels{{"service.name", std::string(s.resource->service_name)}};
      std::string attributes;
      for (const Attribute& a : s.labels) {
        std::string value = a.is_int ? std::to_string(a.int_value) : std::string(a.string_value);
        attributes += std::string(a.key) + "=" + value + "\n";
        labels[std::string(a.key)] = std::move(value);
      }
      auto metric = series_.find(def.name);
      if (metric == series_.end()) metric = series_.emplace(std::string(def.name), std::map<SeriesKey, Labels>{}).first;
      auto entry =
          metric->second
              .emplace(SeriesKey{std::string(s.resource->service_name), std::move(attributes)}, std::move(labels))
              .first;
      it->second.key = &entry->first;
      it->second.points = nullptr;
      if (def.kind != MetricKind::kHistogram) {
        auto pts = points_.find(def.name);
        if (pts == points_.end()) pts = points_.emplace(std::string(def.name), std::vector<Point>{}).first;
        it->second.points = &pts->second;
      }
    }
    if (ExactPoints() && it->second.points != nullptr) {
      const double value = def.is_int ? static_cast<double>(p.int_value) : p.double_value;
      it->second.points->push_back({p.time_ns, value, it->second.key});
    }
  }
  if (!ExactPoints()) {
    for (auto& [name, points] : points_) std::vector<Point>().swap(points);
  }
}

// ---- diffs --------------------------------------------------------------------

double ProbeTruth::SpanPercentileTolerance() const {
  // docs/API.md's promise for rollup-served span percentiles (the bench talks
  // to the server over HTTP only, so it states the number itself).
  constexpr double kRollupRelativeError = 0.01;
  return entry_spans_ >= o_.rollup_exact_spans ? kRollupRelativeError : 1e-9;
}

std::string ProbeTruth::CheckEndpoints(std::string_view json) const {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string error;
  if (!Parse(&parser, json, &doc, &error)) return error;
  Diff d;
  const int64_t total = Int(doc, "total");
  if (total != static_cast<int64_t>(endpoints_.size())) d.Add("total ", total, " != ", endpoints_.size());
  simdjson::dom::array rows;
  if (doc["endpoints"].get_array().get(rows) != simdjson::SUCCESS) return "mismatch: no endpoints array";
  std::vector<uint64_t> want_counts, got_counts;
  for (const auto& [key, t] : endpoints_) want_counts.push_back(t.count);
  std::sort(want_counts.rbegin(), want_counts.rend());
  if (want_counts.size() > o_.page) want_counts.resize(o_.page);
  for (simdjson::dom::element row : rows) {
    const std::string service = Str(row, "service"), endpoint = Str(row, "endpoint");
    auto it = endpoints_.find({service, endpoint});
    if (it == endpoints_.end()) {
      d.Add("unknown endpoint '", service, " ", endpoint, "'");
      continue;
    }
    const EndpointTally& t = it->second;
    const int64_t count = Int(row, "count"), errors = Int(row, "errors");
    got_counts.push_back(static_cast<uint64_t>(count));
    if (count != static_cast<int64_t>(t.count)) d.Add(service, " ", endpoint, " count ", count, " != ", t.count);
    if (errors != static_cast<int64_t>(t.errors)) d.Add(service, " ", endpoint, " errors ", errors, " != ", t.errors);
    if (!ExactSpans() || t.spans.empty()) continue;
    std::vector<int64_t> sorted;
    for (const auto& [start, duration] : t.spans) sorted.push_back(duration);
    std::sort(sorted.begin(), sorted.end());
    for (auto [name, q] : {std::pair{"p50_ms", 0.5}, std::pair{"p95_ms", 0.95}, std::pair{"p99_ms", 0.99}}) {
      const double want = InterpolatedPercentile(sorted, q) / 1e6, got = Num(row, name);
      if (!CloseMs(got, want, SpanPercentileTolerance())) {
        d.Add(service, " ", endpoint, " ", name, " ", got, " != ", want);
      }
    }
  }
  if (got_counts != want_counts) d.Add("rows are not the top ", want_counts.size(), " by count");
  return d.Verdict();
}

std::string ProbeTruth::CheckEndpointSeries(std::string_view json) const {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string error;
  if (!Parse(&parser, json, &doc, &error)) return error;
  // The server's order: count desc, then (service, endpoint); the rest is "other".
  std::vector<std::pair<uint64_t, std::pair<std::string, std::string>>> groups;
  for (const auto& [key, t] : endpoints_) groups.push_back({t.count, key});
  std::stable_sort(groups.begin(), groups.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> want;
  for (size_t i = 0; i < groups.size() && i < o_.top; ++i)
    want.push_back(groups[i].second.first + " " + groups[i].second.second);
  if (groups.size() > o_.top) want.push_back("other");
  std::vector<std::string> got;
  simdjson::dom::array series;
  if (doc["series"].get_array().get(series) != simdjson::SUCCESS) return "mismatch: no series array";
  for (simdjson::dom::element s : series) got.push_back(Str(s, "name"));
  Diff d;
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    const std::string g = i < got.size() ? got[i] : "(none)", w = i < want.size() ? want[i] : "(none)";
    if (g != w) d.Add("series ", i, " '", g, "' != '", w, "'");
  }
  if (got != want || !ExactSpans()) return d.Verdict();

  // Each series' p95 per bucket; "other" pools every group past the top N.
  int64_t step_ms = 0;
  if (doc["step_ms"].get_int64().get(step_ms) != simdjson::SUCCESS || step_ms <= 0) return "mismatch: no step_ms";
  const int64_t step_ns = step_ms * 1000000;
  const int64_t origin_ns = GridOrigin(o_.from_ns, step_ms);
  size_t i = 0;
  for (simdjson::dom::element s : series) {
    std::map<int64_t, std::vector<int64_t>> buckets;  // bucket -> durations
    for (size_t g = (want[i] == "other" ? o_.top : i); g < (want[i] == "other" ? groups.size() : i + 1); ++g) {
      for (const auto& [start, duration] : endpoints_.at(groups[g].second).spans) {
        buckets[(start - origin_ns) / step_ns].push_back(duration);
      }
    }
    simdjson::dom::array values;
    if (s["values"].get_array().get(values) != simdjson::SUCCESS) return "mismatch: no values array";
    int64_t b = 0;
    for (simdjson::dom::element v : values) {
      double got_ms = NAN;
      if (!v.is_null() && v.get_double().get(got_ms) != simdjson::SUCCESS) got_ms = NAN;
      auto it = buckets.find(b);
      double want_ms = NAN;
      if (it != buckets.end()) {
        std::sort(it->second.begin(), it->second.end());
        want_ms = InterpolatedPercentile(it->second, 0.95) / 1e6;
      }
      if (std::isnan(got_ms) != std::isnan(want_ms) ||
          (!std::isnan(want_ms) && !CloseMs(got_ms, want_ms, SpanPercentileTolerance()))) {
        d.Add(want[i], " bucket ", b, " p95 ", got_ms, " != ", want_ms);
      }
      ++b;
    }
    ++i;
  }
  return d.Verdict();
}

std::string ProbeTruth::CheckExceptions(std::string_view json) const {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string error;
  if (!Parse(&parser, json, &doc, &error)) return error;
  // ORDER BY count DESC, type, message, service (byte order, as in SQL).
  std::vector<std::pair<uint64_t, std::tuple<std::string, std::string, std::string>>> want;
  for (const auto& [key, n] : exceptions_) want.push_back({n, key});
  std::stable_sort(want.begin(), want.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  if (want.size() > o_.page) want.resize(o_.page);
  simdjson::dom::array rows;
  if (doc["exceptions"].get_array().get(rows) != simdjson::SUCCESS) return "mismatch: no exceptions array";
  Diff d;
  size_t i = 0;
  for (simdjson::dom::element row : rows) {
    if (i >= want.size()) {
      d.Add("extra row ", i);
      ++i;
      continue;
    }
    const auto& [n, key] = want[i];
    const std::string type = Str(row, "type"), message = Str(row, "message"), service = Str(row, "service");
    const int64_t count = Int(row, "count");
    if (std::tie(type, message, service) != key || count != static_cast<int64_t>(n)) {
      d.Add("row ", i, " (", type, ", ", service, ", ", count, ") != (", std::get<0>(key), ", ", std::get<2>(key), ", ",
            n, ")");
    }
    ++i;
  }
  if (i < want.size()) d.Add(want.size() - i, " rows missing");
  return d.Verdict();
}

std::string ProbeTruth::CheckLogs(std::string_view json, LogFilter filter) const {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string error;
  if (!Parse(&parser, json, &doc, &error)) return error;
  simdjson::dom::array rows;
  if (doc["logs"].get_array().get(rows) != simdjson::SUCCESS) return "mismatch: no logs array";
  const NewestPage& page = logs_[static_cast<int>(filter)];
  std::vector<int64_t> want(page.times.rbegin(), page.times.rend()), got;
  Diff d;
  for (simdjson::dom::element row : rows) {
    got.push_back(Int(row, "time_ns"));
    if (filter == LogFilter::kSeverity && Int(row, "severity_number") < o_.severity_min) {
      d.Add("severity ", Int(row, "severity_number"), " < ", o_.severity_min);
    }
    if (filter == LogFilter::kTraceId && Str(row, "trace_id") != o_.trace_id) d.Add("trace_id ", Str(row, "trace_id"));
    if (filter == LogFilter::kWord && Lower(Str(row, "body")).find(Lower(o_.word)) == std::string::npos) {
      d.Add("body without '", o_.word, "'");
    }
  }
  if (got.size() != want.size()) {
    d.Add(got.size(), " rows != ", want.size(), " (", page.matches, " match)");
  } else if (got != want) {
    size_t i = 0;
    while (got[i] == want[i]) ++i;
    d.Add("row ", i, " time_ns ", got[i], " != ", want[i], " (not the newest ", want.size(), ")");
  }
  return d.Verdict();
}

std::string ProbeTruth::CheckTrace(std::string_view json) const {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string error;
  if (!Parse(&parser, json, &doc, &error)) return error;
  simdjson::dom::array rows;
  if (doc["spans"].get_array().get(rows) != simdjson::SUCCESS) return "mismatch: no spans array";
  std::vector<std::pair<int64_t, std::string>> got;
  for (simdjson::dom::element row : rows) got.emplace_back(Int(row, "start_time_ns"), Str(row, "span_id"));
  // By start; ties by span id as the API orders them (unsigned, which the
  // fixed-width hex sorts alike).
  const std::vector<std::pair<int64_t, std::string>> want(trace_spans_.begin(), trace_spans_.end());
  Diff d;
  if (got.size() != want.size()) {
    d.Add(got.size(), " spans != ", want.size());
  } else if (got != want) {
    size_t i = 0;
    while (got[i] == want[i]) ++i;
    d.Add("span ", i, " (", got[i].first, ", ", got[i].second, ") != (", want[i].first, ", ", want[i].second, ")");
  }
  return d.Verdict();
}

std::string ProbeTruth::CheckMetricList(std::string_view json) const {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string error;
  if (!Parse(&parser, json, &doc, &error)) return error;
  simdjson::dom::array rows;
  if (doc["metrics"].get_array().get(rows) != simdjson::SUCCESS) return "mismatch: no metrics array";
  std::set<std::string> got, want;
  for (simdjson::dom::element row : rows) got.insert(Str(row, "name"));
  for (const auto& [name, series] : series_) want.insert(name);
  Diff d;
  for (const auto& n : want) {
    if (!got.count(n)) d.Add("missing ", n);
  }
  for (const auto& n : got) {
    if (!want.count(n)) d.Add("unexpected ", n);
  }
  return d.Verdict();
}

std::string ProbeTruth::CheckMetricGroups(std::string_view json, const std::string& name, const std::string& key,
                                          bool avg) const {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  std::string error;
  if (!Parse(&parser, json, &doc, &error)) return error;
  std::set<std::string> want, got;
  std::map<const SeriesKey*, std::string> group_of;  // series -> its value of `key`
  auto it = series_.find(name);
  if (it != series_.end()) {
    for (const auto& [series, labels] : it->second) {
      auto value = labels.find(key);
      const std::string& group = group_of[&series] = value == labels.end() ? "" : value->second;
      want.insert(group);
    }
  }
  simdjson::dom::array series;
  if (doc["series"].get_array().get(series) != simdjson::SUCCESS) return "mismatch: no series array";
  for (simdjson::dom::element s : series) {
    simdjson::dom::element labels;
    if (s["labels"].get(labels) != simdjson::SUCCESS) continue;
    got.insert(Str(labels, key.c_str()));
  }
  Diff d;
  for (const auto& v : want) {
    if (!got.count(v)) d.Add("missing ", key, "=", v);
  }
  for (const auto& v : got) {
    if (!want.count(v)) d.Add("unexpected ", key, "=", v);
  }
  auto pts = points_.find(name);
  if (!avg || got != want || !ExactPoints() || pts == points_.end() || pts->second.empty()) return d.Verdict();

  // Pooled mean per (group, bucket): sum of values / number of points.
  int64_t step_ms = 0;
  if (doc["step_ms"].get_int64().get(step_ms) != simdjson::SUCCESS || step_ms <= 0) return "mismatch: no step_ms";
  std::map<std::pair<std::string, int64_t>, std::pair<double, uint64_t>> sums;
  const int64_t origin_ns = GridOrigin(o_.from_ns, step_ms);
  for (const Point& p : pts->second) {
    auto& [sum, n] = sums[{group_of[p.series], (p.time_ns - origin_ns) / (step_ms * 1000000)}];
    sum += p.value;
    ++n;
  }
  for (simdjson::dom::element s : series) {
    simdjson::dom::element labels;
    simdjson::dom::array values;
    if (s["labels"].get(labels) != simdjson::SUCCESS || s["values"].get_array().get(values) != simdjson::SUCCESS) {
      return "mismatch: a series without labels or values";
    }
    const std::string group = Str(labels, key.c_str());
    int64_t b = 0;
    for (simdjson::dom::element v : values) {
      double got_v = NAN;
      if (!v.is_null() && v.get_double().get(got_v) != simdjson::SUCCESS) got_v = NAN;
      auto w = sums.find({group, b});
      const double want_v = w == sums.end() ? NAN : w->second.first / static_cast<double>(w->second.second);
      // Sums in another order differ in the last bits.
      if (std::isnan(got_v) != std::isnan(want_v) ||
          (!std::isnan(want_v) && std::fabs(got_v - want_v) > 1e-9 * std::max(1.0, std::fabs(want_v)))) {
        d.Add(key, "=", group, " bucket ", b, " avg ", got_v, " != ", want_v);
      }
      ++b;
    }
  }
  return d.Verdict();
}

}  // namespace sightline::bench
