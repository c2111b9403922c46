#include "storage/memory/memory_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace sightline::memory {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr std::array<double, 3> kFractions = {0.5, 0.95, 0.99};
constexpr std::string_view kCursorPrefix = "memory-log:";

bool InRange(int64_t t, const TimeRange& r) { return t >= r.from_ns && t < r.to_ns; }

//! The bucket holding t, [origin + i*step, origin + (i+1)*step), when i is in
//! [0, count): floor division, so a time just before the origin is in bucket
//! -1 (and dropped), not in bucket 0.
std::optional<int64_t> BucketOf(int64_t t, const Buckets& b) {
  const int64_t offset = t - b.origin_ns;
  int64_t i = offset / b.step_ns;
  if (offset % b.step_ns != 0 && offset < 0) --i;
  if (i < 0 || i >= b.count) return std::nullopt;
  return i;
}

Status CheckBuckets(const Buckets& b) {
  if (b.step_ns <= 0) return Status::InvalidArgument("bucket step must be positive");
  return Status::Ok();
}

Status CheckLimit(int64_t limit) {
  if (limit < 1) return Status::InvalidArgument("limit must be at least 1");
  return Status::Ok();
}

//! Linear interpolation between the closest ranks of sorted values: numpy's
//! default method and DuckDB's quantile_cont. `sorted` is not empty.
double Percentile(const std::vector<int64_t>& sorted, double fraction) {
  const double position = fraction * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(std::floor(position));
  const size_t above = std::min(below + 1, sorted.size() - 1);
  const double low = static_cast<double>(sorted[below]);
  const double high = static_cast<double>(sorted[above]);
  return low + (high - low) * (position - static_cast<double>(below));
}

// ------------------------------------------------------------- text folding

//! Decodes one UTF-8 character at s[*i] and advances *i. Text in the store is
//! valid UTF-8; a stray byte (only possible in a needle) decodes as itself.
char32_t NextCodePoint(std::string_view s, size_t* i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(*i);
  size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (len == 0 || *i + len > s.size()) {
    ++*i;
    return c;
  }
  char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (byte(*i + k) & 0x3F);
  *i += len;
  return cp;
}

void AppendUtf8(char32_t cp, std::string* out) {
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

//! Unicode's simple lowercase mapping for the blocks TextFolding documents.
char32_t SimpleLower(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 0x20;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 0x20;                       // Latin-1: À-Þ, not ×
  if (c == 0x386) return 0x3AC;                                                   // Ά
  if (c >= 0x388 && c <= 0x38A) return c + 0x25;                                  // Έ Ή Ί
  if (c == 0x38C) return 0x3CC;                                                   // Ό
  if (c == 0x38E || c == 0x38F) return c + 0x3F;                                  // Ύ Ώ
  if ((c >= 0x391 && c <= 0x3A1) || (c >= 0x3A3 && c <= 0x3AB)) return c + 0x20;  // Α-Ϋ (no U+03A2)
  if (c >= 0x400 && c <= 0x40F) return c + 0x50;                                  // Ѐ-Џ
  if (c >= 0x410 && c <= 0x42F) return c + 0x20;                                  // А-Я
  return c;
}

std::string Fold(std::string_view s, TextFolding folding) {
  std::string out;
  out.reserve(s.size());
  if (folding == TextFolding::kAscii) {
    for (char c : s) out.push_back(c >= 'A' && c <= 'Z' ? static_cast<char>(c + 0x20) : c);
    return out;
  }
  for (size_t i = 0; i < s.size();) AppendUtf8(SimpleLower(NextCodePoint(s, &i)), &out);
  return out;
}

// ------------------------------------------------------------------ JSON

//! A JSON value as AttributeText renders it; nullopt for null.
std::optional<std::string> ValueText(simdjson::dom::element value) {
  switch (value.type()) {
    case simdjson::dom::element_type::STRING: return std::string(value.get_string().value_unsafe());
    case simdjson::dom::element_type::BOOL: return value.get_bool().value_unsafe() ? "true" : "false";
    case simdjson::dom::element_type::INT64: return std::to_string(value.get_int64().value_unsafe());
    case simdjson::dom::element_type::UINT64: return std::to_string(value.get_uint64().value_unsafe());
    case simdjson::dom::element_type::DOUBLE: {
      char buf[32];
      auto r = std::to_chars(buf, buf + sizeof(buf), value.get_double().value_unsafe());
      return std::string(buf, r.ptr);
    }
    case simdjson::dom::element_type::NULL_VALUE: return std::nullopt;
    case simdjson::dom::element_type::ARRAY:
    case simdjson::dom::element_type::OBJECT: return simdjson::minify(value);
  }
  return std::nullopt;
}

//! A JSON array of numbers (histogram bucket counts and bounds).
Result<std::vector<double>> NumberArray(simdjson::dom::parser& parser, std::string_view json) {
  simdjson::dom::element doc;
  simdjson::dom::array array;
  if (parser.parse(json.data(), json.size()).get(doc) != simdjson::SUCCESS ||
      doc.get_array().get(array) != simdjson::SUCCESS) {
    return Status::Internal("stored histogram text is not a JSON array: " + std::string(json));
  }
  std::vector<double> out;
  for (simdjson::dom::element e : array) {
    switch (e.type()) {
      case simdjson::dom::element_type::INT64: out.push_back(static_cast<double>(e.get_int64().value_unsafe())); break;
      case simdjson::dom::element_type::UINT64:
        out.push_back(static_cast<double>(e.get_uint64().value_unsafe()));
        break;
      case simdjson::dom::element_type::DOUBLE: out.push_back(e.get_double().value_unsafe()); break;
      default: return Status::Internal("stored histogram array holds a non-number: " + std::string(json));
    }
  }
  return out;
}

// ------------------------------------------------------------------ reader

class MemoryReader final : public TelemetryReader {
 public:
  MemoryReader(const MemoryStore* store, MemoryReaderOptions options) : store_(store), options_(options) {}

  Result<SpanGroups> GroupSpans(const SpanGroupQuery& q) override;
  Result<TraceSummaries> SearchTraces(const TraceSearchQuery& q) override;
  Result<TraceDetail> GetTrace(const TraceQuery& q) override;
  Result<ExceptionGroups> GroupExceptions(const ExceptionQuery& q) override;
  Result<SpanRefs> ExceptionSpans(const ExceptionSpansQuery& q) override;
  Result<ServiceCalls> GroupServiceCalls(const ServiceCallQuery& q) override;
  Result<DurationHistogram> HistogramDurations(const DurationHistogramQuery& q) override;
  Result<AttributeSuggestions> SuggestAttributes(const AttributeSuggestionQuery& q) override;
  Result<LogPage> Logs(const LogPageQuery& q) override;
  Result<LogVolume> CountLogs(const LogVolumeQuery& q) override;
  Result<LogFacets> FacetLogs(const LogFacetsQuery& q) override;
  Result<MetricCatalog> ListMetrics(const MetricCatalogQuery& q) override;
  Result<MetricSeriesList> FindSeries(const MetricSeriesLookup& q) override;
  Result<MetricBuckets> AggregateSeries(const MetricSeriesQuery& q) override;

 protected:
  //! Nothing to stop: operations poll interrupted() per row.
  void InterruptEngine() override {}

 private:
  //! Cancelled once interrupted; operations call it per row.
  Status Poll() {
    if (interrupted()) return Status::Cancelled("memory: the read was interrupted");
    return Status::Ok();
  }
  bool AttributesMatch(std::string_view json, const std::vector<AttrFilter>& filters);
  //! The span matches every part of the filter (its resource looked up in t).
  bool Matches(const Tables& t, const SpanRow& s, const SpanFilter& f);
  bool ResourceMatches(const Tables& t, const SpanRow& s, const SpanFilter& f);
  bool Matches(const LogRow& l, const LogFilter& f);
  //! A log-based exception event: an exception type or message.
  static bool IsException(const LogRow& l);
  //! The part of an exception query's span filter that log records have:
  //! project, range (on time_ns) and service.
  static bool MatchesExceptionLog(const LogRow& l, const SpanFilter& f);

  const MemoryStore* const store_;
  const MemoryReaderOptions options_;
  simdjson::dom::parser parser_;
};

bool MemoryReader::AttributesMatch(std::string_view json, const std::vector<AttrFilter>& filters) {
  if (filters.empty()) return true;
  simdjson::dom::element doc;
  simdjson::dom::object object;
  if (parser_.parse(json.data(), json.size()).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(object) != simdjson::SUCCESS) {
    return false;
  }
  for (const AttrFilter& f : filters) {
    simdjson::dom::element value;
    if (object.at_key(f.key).get(value) != simdjson::SUCCESS) return false;
    const simdjson::dom::element_type type = value.type();
    if (type == simdjson::dom::element_type::NULL_VALUE) return false;
    switch (f.op) {
      case AttrOp::kExists: break;
      case AttrOp::kEq:
      case AttrOp::kNe: {
        if ((ValueText(value) == f.value) != (f.op == AttrOp::kEq)) return false;
        break;
      }
      case AttrOp::kGt:
      case AttrOp::kLt: {
        double number = 0;
        switch (type) {
          case simdjson::dom::element_type::INT64:
            number = static_cast<double>(value.get_int64().value_unsafe());
            break;
          case simdjson::dom::element_type::UINT64:
            number = static_cast<double>(value.get_uint64().value_unsafe());
            break;
          case simdjson::dom::element_type::DOUBLE: number = value.get_double().value_unsafe(); break;
          default: return false;
        }
        if (f.op == AttrOp::kGt ? !(number > f.number) : !(number < f.number)) return false;
        break;
      }
    }
  }
  return true;
}

bool MemoryReader::ResourceMatches(const Tables& t, const SpanRow& s, const SpanFilter& f) {
  if (f.resource_attributes.empty()) return true;
  auto it = t.span_resources.find({s.project_id, s.resource_id});
  return it != t.span_resources.end() && AttributesMatch(it->second.resource_attributes, f.resource_attributes);
}

bool MemoryReader::Matches(const Tables& t, const SpanRow& s, const SpanFilter& f) {
  if (s.project_id != f.project_id || !InRange(s.start_time_ns, f.range)) return false;
  if (f.entry_only && !s.is_entry) return false;
  if (f.service && s.service_name != *f.service) return false;
  if (f.endpoint && s.endpoint != *f.endpoint) return false;
  if (f.status_code && s.status_code != *f.status_code) return false;
  if (f.min_duration_ns && s.duration_ns < *f.min_duration_ns) return false;
  if (f.max_duration_ns && s.duration_ns > *f.max_duration_ns) return false;
  return AttributesMatch(s.attributes, f.attributes) && ResourceMatches(t, s, f);
}

bool MemoryReader::IsException(const LogRow& l) { return !l.exception_type.empty() || !l.exception_message.empty(); }

bool MemoryReader::MatchesExceptionLog(const LogRow& l, const SpanFilter& f) {
  return l.project_id == f.project_id && InRange(l.time_ns, f.range) && (!f.service || l.service_name == *f.service);
}

bool MemoryReader::Matches(const LogRow& l, const LogFilter& f) {
  if (l.project_id != f.project_id || !InRange(l.time_ns, f.range)) return false;
  if (f.severity_min > 0 && l.severity_number < f.severity_min) return false;
  if (f.service && l.service_name != *f.service) return false;
  if (f.text) {
    const std::string body = Fold(l.body, options_.text_folding);
    if (body.find(Fold(*f.text, options_.text_folding)) == std::string::npos) return false;
  }
  // An absent (zero) trace id equals nothing, not even another absent one.
  if (f.trace_id && (f.trace_id->empty() || l.trace_id != *f.trace_id)) return false;
  return AttributesMatch(l.attributes, f.attributes);
}

// ------------------------------------------------------------------- spans

Result<SpanGroups> MemoryReader::GroupSpans(const SpanGroupQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  const bool bucketed =
      std::find(q.dimensions.begin(), q.dimensions.end(), SpanDimension::kBucket) != q.dimensions.end();
  if (bucketed) SL_RETURN_IF_ERROR(CheckBuckets(q.buckets));
  return store_->Read([&](const Tables& t) -> Result<SpanGroups> {
    struct Group {
      int64_t errors = 0;
      std::vector<int64_t> durations;
    };
    std::map<std::vector<std::string>, Group> groups;
    for (const SpanRow& s : t.spans) {
      SL_RETURN_IF_ERROR(Poll());
      if (!Matches(t, s, q.filter)) continue;
      std::vector<std::string> keys;
      bool in_buckets = true;
      for (SpanDimension d : q.dimensions) {
        switch (d) {
          case SpanDimension::kService: keys.push_back(s.service_name); break;
          case SpanDimension::kEndpoint: keys.push_back(s.endpoint); break;
          case SpanDimension::kBucket: {
            std::optional<int64_t> b = BucketOf(s.start_time_ns, q.buckets);
            in_buckets = in_buckets && b.has_value();
            keys.push_back(b ? std::to_string(*b) : "");
            break;
          }
          case SpanDimension::kLabel: {
            // The first label that names the span's (service, endpoint).
            auto it = std::find(q.labels.begin(), q.labels.end(), std::make_pair(s.service_name, s.endpoint));
            keys.push_back(it == q.labels.end() ? "-1" : std::to_string(it - q.labels.begin()));
            break;
          }
        }
      }
      if (!in_buckets) continue;
      Group& g = groups[keys];
      if (s.status_code == 2) ++g.errors;
      g.durations.push_back(s.duration_ns);
    }
    SpanGroups out;
    for (auto& [keys, g] : groups) {
      SpanGroup r;
      r.keys = keys;
      r.count = static_cast<int64_t>(g.durations.size());
      r.errors = g.errors;
      std::sort(g.durations.begin(), g.durations.end());
      for (size_t i = 0; i < 3; ++i) {
        r.percentiles_ns[i] = q.percentiles[i] ? Percentile(g.durations, kFractions[i]) : kNaN;
      }
      out.push_back(std::move(r));
    }
    // The cap keeps max_groups + 1 of them (which ones is unspecified).
    if (static_cast<int64_t>(out.size()) > q.max_groups) out.resize(static_cast<size_t>(q.max_groups) + 1);
    return out;
  });
}

Result<TraceSummaries> MemoryReader::SearchTraces(const TraceSearchQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  SL_RETURN_IF_ERROR(CheckLimit(q.limit));
  if (q.offset < 0) return Status::InvalidArgument("offset must not be negative");
  return store_->Read([&](const Tables& t) -> Result<TraceSummaries> {
    const int64_t project = q.filter.project_id;
    std::set<TraceId> matched;
    for (const SpanRow& s : t.spans) {
      SL_RETURN_IF_ERROR(Poll());
      if (!s.trace_id.empty() && Matches(t, s, q.filter)) matched.insert(s.trace_id);
    }
    // A trace's place in the list: its earliest start and its latest end
    // among all its spans in the range, whichever of them matched.
    std::map<TraceId, std::pair<int64_t, int64_t>> span_in_range;
    for (const SpanRow& s : t.spans) {
      if (s.project_id != project || !InRange(s.start_time_ns, q.filter.range) || !matched.count(s.trace_id)) continue;
      auto [it, inserted] = span_in_range.emplace(s.trace_id, std::pair{s.start_time_ns, s.end_time_ns});
      if (!inserted) {
        it->second.first = std::min(it->second.first, s.start_time_ns);
        it->second.second = std::max(it->second.second, s.end_time_ns);
      }
    }
    // (sort key, trace): the key is the start, or the duration.
    std::vector<std::pair<int64_t, TraceId>> order;
    for (const auto& [trace, span] : span_in_range) {
      order.emplace_back(q.order == TraceOrder::kStartDesc ? span.first : span.second - span.first, trace);
    }
    const bool ascending = q.order == TraceOrder::kDurationAsc;
    std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return ascending ? a.first < b.first : a.first > b.first;
      return a.second < b.second;
    });
    const size_t skip = std::min(order.size(), static_cast<size_t>(q.offset));
    order.erase(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(skip));
    if (order.size() > static_cast<size_t>(q.limit)) order.resize(static_cast<size_t>(q.limit));
    TraceSummaries out;
    for (const auto& [unused, trace] : order) {
      TraceSummary sum;
      sum.trace_id = trace;
      // The earliest span names the trace; among equal starts a root first,
      // then the smallest span id (unsigned).
      auto naming_order = [](const SpanRow& s) {
        return std::make_tuple(s.start_time_ns, s.parent_span_id != 0, s.span_id);
      };
      const SpanRow* earliest = nullptr;
      for (const SpanRow& s : t.spans) {
        SL_RETURN_IF_ERROR(Poll());
        if (s.project_id != project || s.trace_id != trace) continue;
        if (earliest == nullptr || naming_order(s) < naming_order(*earliest)) earliest = &s;
        sum.end_ns = sum.span_count == 0 ? s.end_time_ns : std::max(sum.end_ns, s.end_time_ns);
        ++sum.span_count;
        sum.error = sum.error || s.status_code == 2;
      }
      sum.service = earliest->service_name;
      sum.name = earliest->name;
      sum.start_ns = earliest->start_time_ns;
      out.push_back(std::move(sum));
    }
    return out;
  });
}

Result<TraceDetail> MemoryReader::GetTrace(const TraceQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  return store_->Read([&](const Tables& t) -> Result<TraceDetail> {
    TraceDetail out;
    if (q.trace_id.empty()) return Status::NotFound("no trace with an absent id");
    std::vector<const SpanRow*> spans;
    for (const SpanRow& s : t.spans) {
      SL_RETURN_IF_ERROR(Poll());
      if (s.project_id == q.project_id && s.trace_id == q.trace_id) spans.push_back(&s);
    }
    if (spans.empty()) return Status::NotFound("no such trace in this project");
    std::sort(spans.begin(), spans.end(), [](const SpanRow* a, const SpanRow* b) {
      return std::tie(a->start_time_ns, a->span_id) < std::tie(b->start_time_ns, b->span_id);
    });
    for (const SpanRow* s : spans) {
      SpanRecord r;
      r.span_id = s->span_id;
      r.parent_span_id = s->parent_span_id;
      r.service = s->service_name;
      r.name = s->name;
      r.kind = s->kind;
      r.start_ns = s->start_time_ns;
      r.end_ns = s->end_time_ns;
      r.duration_ns = s->duration_ns;
      r.status_code = s->status_code;
      r.status_message = s->status_message;
      r.trace_state = s->trace_state;
      r.attributes = s->attributes;
      r.events = s->events;
      r.links = s->links;
      auto resource = t.span_resources.find({s->project_id, s->resource_id});
      if (resource != t.span_resources.end()) {
        r.resource_attributes = resource->second.resource_attributes;
        r.scope_name = resource->second.scope_name;
      }
      out.spans.push_back(std::move(r));
    }
    std::vector<const LogRow*> logs;
    for (const LogRow& l : t.logs) {
      if (l.project_id == q.project_id && l.trace_id == q.trace_id) logs.push_back(&l);
    }
    std::sort(logs.begin(), logs.end(), [](const LogRow* a, const LogRow* b) {
      return std::tie(a->time_ns, a->sequence) < std::tie(b->time_ns, b->sequence);
    });
    for (const LogRow* l : logs) {
      out.logs.push_back({l->time_ns, l->severity_number, l->severity_text, l->body, l->service_name, l->trace_id,
                          l->span_id, l->attributes, l->event_name});
    }
    if (static_cast<int64_t>(out.spans.size()) > q.max_spans) {
      out.spans.resize(static_cast<size_t>(q.max_spans));
      out.spans_truncated = true;
    }
    if (static_cast<int64_t>(out.logs.size()) > q.max_logs) {
      out.logs.resize(static_cast<size_t>(q.max_logs));
      out.logs_truncated = true;
    }
    return out;
  });
}

Result<ExceptionGroups> MemoryReader::GroupExceptions(const ExceptionQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  SL_RETURN_IF_ERROR(CheckLimit(q.limit));
  return store_->Read([&](const Tables& t) -> Result<ExceptionGroups> {
    std::map<std::tuple<std::string, std::string, std::string>, ExceptionGroup> groups;
    auto add = [&](const std::string& type, const std::string& group, const std::string& service, int64_t time_ns,
                   const TraceId& trace_id, bool log) {
      auto [it, inserted] = groups.try_emplace({type, group, service});
      ExceptionGroup& g = it->second;
      if (inserted) {
        g.type = type;
        g.message = group;
        g.service = service;
        g.first_ns = g.last_ns = time_ns;
      }
      ++g.count;
      if (log) ++g.log_count;
      g.first_ns = std::min(g.first_ns, time_ns);
      g.last_ns = std::max(g.last_ns, time_ns);
      g.sample_trace_id = std::max(g.sample_trace_id, trace_id);
    };
    for (const SpanRow& s : t.spans) {
      SL_RETURN_IF_ERROR(Poll());
      if (!s.has_exception || !Matches(t, s, q.filter)) continue;
      add(s.exception_type, s.exception_group, s.service_name, s.start_time_ns, s.trace_id, false);
    }
    for (const LogRow& l : t.logs) {
      SL_RETURN_IF_ERROR(Poll());
      if (!IsException(l) || !MatchesExceptionLog(l, q.filter)) continue;
      add(l.exception_type, l.exception_group, l.service_name, l.time_ns, l.trace_id, true);
    }
    ExceptionGroups out;
    for (auto& [key, g] : groups) out.push_back(std::move(g));
    std::sort(out.begin(), out.end(), [](const ExceptionGroup& a, const ExceptionGroup& b) {
      if (a.count != b.count) return a.count > b.count;
      return std::tie(a.type, a.message, a.service) < std::tie(b.type, b.message, b.service);
    });
    if (out.size() > static_cast<size_t>(q.limit)) out.resize(static_cast<size_t>(q.limit));
    return out;
  });
}

Result<SpanRefs> MemoryReader::ExceptionSpans(const ExceptionSpansQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  SL_RETURN_IF_ERROR(CheckLimit(q.limit));
  return store_->Read([&](const Tables& t) -> Result<SpanRefs> {
    SpanRefs out;
    for (const SpanRow& s : t.spans) {
      SL_RETURN_IF_ERROR(Poll());
      if (!s.has_exception || !Matches(t, s, q.filter)) continue;
      // An absent type or message is stored as "", so "" matches it.
      if (q.type && s.exception_type != *q.type) continue;
      if (q.message && s.exception_group != *q.message) continue;
      out.push_back({s.trace_id, s.span_id, s.service_name, s.name, s.start_time_ns, s.duration_ns, false});
    }
    for (const LogRow& l : t.logs) {
      SL_RETURN_IF_ERROR(Poll());
      if (!IsException(l) || !MatchesExceptionLog(l, q.filter)) continue;
      if (q.type && l.exception_type != *q.type) continue;
      if (q.message && l.exception_group != *q.message) continue;
      out.push_back({l.trace_id, l.span_id, l.service_name, l.event_name, l.time_ns, 0, true});
    }
    std::sort(out.begin(), out.end(), [](const SpanRef& a, const SpanRef& b) {
      if (a.start_ns != b.start_ns) return a.start_ns > b.start_ns;
      return std::tie(a.log, a.trace_id, a.span_id) < std::tie(b.log, b.trace_id, b.span_id);
    });
    if (out.size() > static_cast<size_t>(q.limit)) out.resize(static_cast<size_t>(q.limit));
    return out;
  });
}

// ------------------------------------------------------------- service map

namespace {

//! a - b and a + b clamped to int64_t (b >= 0).
int64_t SaturatingSub(int64_t a, int64_t b) { return a < INT64_MIN + b ? INT64_MIN : a - b; }
int64_t SaturatingAdd(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

}  // namespace

Result<ServiceCalls> MemoryReader::GroupServiceCalls(const ServiceCallQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  if (q.parent_margin_ns < 0) return Status::InvalidArgument("parent margin must not be negative");
  if (q.max_calls < 0) return Status::InvalidArgument("max_calls must not be negative");
  return store_->Read([&](const Tables& t) -> Result<ServiceCalls> {
    const TimeRange parents{SaturatingSub(q.range.from_ns, q.parent_margin_ns),
                            SaturatingAdd(q.range.to_ns, q.parent_margin_ns)};
    // Every candidate parent's service by (trace, span id); a span id stored
    // twice keeps both rows, as a join would.
    std::map<std::pair<TraceId, uint64_t>, std::vector<const std::string*>> by_id;
    for (const SpanRow& s : t.spans) {
      SL_RETURN_IF_ERROR(Poll());
      if (s.project_id != q.project_id || s.trace_id.empty() || !InRange(s.start_time_ns, parents)) continue;
      by_id[{s.trace_id, s.span_id}].push_back(&s.service_name);
    }
    struct Group {
      int64_t errors = 0;
      std::vector<int64_t> durations;
    };
    std::map<std::pair<std::string, std::string>, Group> groups;
    for (const SpanRow& s : t.spans) {
      SL_RETURN_IF_ERROR(Poll());
      if (s.project_id != q.project_id || s.trace_id.empty() || s.parent_span_id == 0 ||
          !InRange(s.start_time_ns, q.range)) {
        continue;
      }
      auto it = by_id.find({s.trace_id, s.parent_span_id});
      if (it == by_id.end()) continue;
      for (const std::string* caller : it->second) {
        if (*caller == s.service_name) continue;
        if (q.service && *caller != *q.service && s.service_name != *q.service) continue;
        Group& g = groups[{*caller, s.service_name}];
        if (s.status_code == 2) ++g.errors;
        g.durations.push_back(s.duration_ns);
      }
    }
    ServiceCalls out;
    for (auto& [key, g] : groups) {
      ServiceCall c;
      c.caller = key.first;
      c.callee = key.second;
      c.count = static_cast<int64_t>(g.durations.size());
      c.errors = g.errors;
      std::sort(g.durations.begin(), g.durations.end());
      for (size_t i = 0; i < 3; ++i) c.percentiles_ns[i] = Percentile(g.durations, kFractions[i]);
      out.push_back(std::move(c));
    }
    std::stable_sort(out.begin(), out.end(),
                     [](const ServiceCall& a, const ServiceCall& b) { return a.count > b.count; });
    if (static_cast<int64_t>(out.size()) > q.max_calls) out.resize(static_cast<size_t>(q.max_calls) + 1);
    return out;
  });
}

// -------------------------------------------------------------------- logs

//! The memory engine's log cursor: "memory-log:<time_ns>:<sequence>" of the
//! last record returned.
struct LogCursor {
  int64_t time_ns = 0;
  int64_t sequence = 0;
};

std::string EncodeCursor(const LogRow& last) {
  return std::string(kCursorPrefix) + std::to_string(last.time_ns) + ":" + std::to_string(last.sequence);
}

Result<LogCursor> DecodeCursor(std::string_view text) {
  const Status malformed = Status::InvalidArgument("malformed log cursor");
  if (!text.starts_with(kCursorPrefix)) return malformed;
  text.remove_prefix(kCursorPrefix.size());
  const size_t colon = text.find(':');
  if (colon == std::string_view::npos) return malformed;
  LogCursor c;
  for (auto [part, out] :
       {std::pair{text.substr(0, colon), &c.time_ns}, std::pair{text.substr(colon + 1), &c.sequence}}) {
    auto r = std::from_chars(part.data(), part.data() + part.size(), *out);
    if (part.empty() || r.ec != std::errc() || r.ptr != part.data() + part.size()) return malformed;
  }
  return c;
}

Result<LogPage> MemoryReader::Logs(const LogPageQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  SL_RETURN_IF_ERROR(CheckLimit(q.limit));
  std::optional<LogCursor> cursor;
  if (!q.cursor.empty()) {
    Result<LogCursor> c = DecodeCursor(q.cursor);
    if (!c.ok()) return c.status();
    cursor = *c;
  }
  return store_->Read([&](const Tables& t) -> Result<LogPage> {
    std::vector<const LogRow*> rows;
    for (const LogRow& l : t.logs) {
      SL_RETURN_IF_ERROR(Poll());
      if (!Matches(l, q.filter)) continue;
      // Strictly after the cursor in newest-first order.
      if (cursor && std::tie(l.time_ns, l.sequence) >= std::tie(cursor->time_ns, cursor->sequence)) continue;
      rows.push_back(&l);
    }
    std::sort(rows.begin(), rows.end(), [](const LogRow* a, const LogRow* b) {
      return std::tie(a->time_ns, a->sequence) > std::tie(b->time_ns, b->sequence);
    });
    LogPage page;
    for (size_t i = 0; i < rows.size() && i < static_cast<size_t>(q.limit); ++i) {
      const LogRow& l = *rows[i];
      page.records.push_back({l.time_ns, l.severity_number, l.severity_text, l.body, l.service_name, l.trace_id,
                              l.span_id, l.attributes, l.event_name});
    }
    if (rows.size() > static_cast<size_t>(q.limit)) {
      page.next_cursor = EncodeCursor(*rows[static_cast<size_t>(q.limit) - 1]);
    }
    return page;
  });
}

Result<LogVolume> MemoryReader::CountLogs(const LogVolumeQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  SL_RETURN_IF_ERROR(CheckBuckets(q.buckets));
  return store_->Read([&](const Tables& t) -> Result<LogVolume> {
    std::map<std::pair<int64_t, int32_t>, int64_t> counts;
    for (const LogRow& l : t.logs) {
      SL_RETURN_IF_ERROR(Poll());
      if (!Matches(l, q.filter)) continue;
      std::optional<int64_t> b = BucketOf(l.time_ns, q.buckets);
      if (b) ++counts[{*b, SeverityLevel(l.severity_number)}];
    }
    LogVolume out;
    for (const auto& [key, n] : counts) out.push_back({key.first, key.second, n});
    return out;
  });
}

// -------------------------------------------------------------- log facets

//! The scalar attributes of a JSON object as (key, text) pairs: strings,
//! booleans and numbers as AttributeText renders them; null, arrays and
//! objects skipped.
std::vector<std::pair<std::string, std::string>> ScalarAttributes(simdjson::dom::parser& parser,
                                                                  std::string_view json) {
  std::vector<std::pair<std::string, std::string>> out;
  simdjson::dom::element doc;
  simdjson::dom::object object;
  if (parser.parse(json.data(), json.size()).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(object) != simdjson::SUCCESS) {
    return out;
  }
  std::set<std::string_view> seen;  // a repeated key counts once, with its first value (as at_key finds it)
  for (auto field : object) {
    if (!seen.insert(field.key).second) continue;
    switch (field.value.type()) {
      case simdjson::dom::element_type::NULL_VALUE:
      case simdjson::dom::element_type::ARRAY:
      case simdjson::dom::element_type::OBJECT: continue;
      default: break;
    }
    std::optional<std::string> text = ValueText(field.value);
    if (text) out.emplace_back(std::string(field.key), std::move(*text));
  }
  return out;
}

//! The first `cap` + 1 entries of a count map by count descending, then key.
std::vector<FacetCount> TopCounts(const std::map<std::string, int64_t>& counts, int64_t cap) {
  std::vector<FacetCount> all;
  for (const auto& [value, n] : counts) all.push_back({value, n});
  std::stable_sort(all.begin(), all.end(), [](const FacetCount& a, const FacetCount& b) { return a.count > b.count; });
  if (static_cast<int64_t>(all.size()) > cap + 1) all.resize(static_cast<size_t>(cap + 1));
  return all;
}

Result<LogFacets> MemoryReader::FacetLogs(const LogFacetsQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  if (q.max_services < 1 || q.sample < 1 || q.max_keys < 1 || q.max_values < 1) {
    return Status::InvalidArgument("log facet caps and sample must be at least 1");
  }
  return store_->Read([&](const Tables& t) -> Result<LogFacets> {
    LogFacets out;
    std::map<std::string, int64_t> services;
    std::vector<const LogRow*> rows;
    for (const LogRow& l : t.logs) {
      SL_RETURN_IF_ERROR(Poll());
      if (!Matches(l, q.filter)) continue;
      ++out.total;
      ++out.levels[static_cast<size_t>(SeverityLevel(l.severity_number))];
      ++services[l.service_name];
      rows.push_back(&l);
    }
    out.services = TopCounts(services, q.max_services);
    std::sort(rows.begin(), rows.end(), [](const LogRow* a, const LogRow* b) {
      return std::tie(a->time_ns, a->sequence) > std::tie(b->time_ns, b->sequence);
    });
    if (static_cast<int64_t>(rows.size()) > q.sample) rows.resize(static_cast<size_t>(q.sample));
    out.sampled = static_cast<int64_t>(rows.size());
    std::map<std::string, std::map<std::string, int64_t>> values;
    std::map<std::string, int64_t> keys;
    for (const LogRow* l : rows) {
      SL_RETURN_IF_ERROR(Poll());
      for (auto& [key, text] : ScalarAttributes(parser_, l->attributes)) {
        ++keys[key];
        ++values[key][text];
      }
    }
    for (const FacetCount& k : TopCounts(keys, q.max_keys)) {
      out.attributes.push_back({k.value, k.count, TopCounts(values[k.value], q.max_values)});
    }
    return out;
  });
}

// ------------------------------------------ trace search: distribution, suggestions

Result<DurationHistogram> MemoryReader::HistogramDurations(const DurationHistogramQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  if (q.bounds_ns.empty() ||
      std::adjacent_find(q.bounds_ns.begin(), q.bounds_ns.end(), std::greater_equal<>()) != q.bounds_ns.end()) {
    return Status::InvalidArgument("duration bounds must be strictly ascending and not empty");
  }
  return store_->Read([&](const Tables& t) -> Result<DurationHistogram> {
    DurationHistogram out;
    out.counts.assign(q.bounds_ns.size() + 1, 0);
    for (const SpanRow& s : t.spans) {
      SL_RETURN_IF_ERROR(Poll());
      if (!Matches(t, s, q.filter)) continue;
      // The first bound above the duration is the bucket's end.
      const auto above = std::upper_bound(q.bounds_ns.begin(), q.bounds_ns.end(), s.duration_ns);
      ++out.counts[static_cast<size_t>(above - q.bounds_ns.begin())];
      out.min_ns = out.total == 0 ? s.duration_ns : std::min(out.min_ns, s.duration_ns);
      out.max_ns = out.total == 0 ? s.duration_ns : std::max(out.max_ns, s.duration_ns);
      ++out.total;
    }
    return out;
  });
}

Result<AttributeSuggestions> MemoryReader::SuggestAttributes(const AttributeSuggestionQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  if (q.sample < 1 || q.max_keys < 1 || q.max_values < 1) {
    return Status::InvalidArgument("attribute suggestion caps and sample must be at least 1");
  }
  return store_->Read([&](const Tables& t) -> Result<AttributeSuggestions> {
    std::vector<const SpanRow*> rows;
    for (const SpanRow& s : t.spans) {
      SL_RETURN_IF_ERROR(Poll());
      if (Matches(t, s, q.filter)) rows.push_back(&s);
    }
    std::stable_sort(rows.begin(), rows.end(), [](const SpanRow* a, const SpanRow* b) {
      if (a->start_time_ns != b->start_time_ns) return a->start_time_ns > b->start_time_ns;
      return std::tie(a->trace_id, a->span_id) < std::tie(b->trace_id, b->span_id);
    });
    if (static_cast<int64_t>(rows.size()) > q.sample) rows.resize(static_cast<size_t>(q.sample));
    AttributeSuggestions out;
    out.sampled = static_cast<int64_t>(rows.size());
    struct Counts {
      std::map<std::string, int64_t> keys;
      std::map<std::string, std::map<std::string, int64_t>> values;
      void Add(std::vector<std::pair<std::string, std::string>> attributes, const std::optional<std::string>& only) {
        for (auto& [key, text] : attributes) {
          if (only && key != *only) continue;
          ++keys[key];
          ++values[key][text];
        }
      }
      std::vector<AttributeFacet> Top(int64_t max_keys, int64_t max_values) {
        std::vector<AttributeFacet> facets;
        for (const FacetCount& k : TopCounts(keys, max_keys)) {
          facets.push_back({k.value, k.count, TopCounts(values[k.value], max_values)});
        }
        return facets;
      }
    } span, resource;
    for (const SpanRow* s : rows) {
      SL_RETURN_IF_ERROR(Poll());
      span.Add(ScalarAttributes(parser_, s->attributes), q.key);
      auto r = t.span_resources.find({s->project_id, s->resource_id});
      if (r != t.span_resources.end()) resource.Add(ScalarAttributes(parser_, r->second.resource_attributes), q.key);
    }
    out.span = span.Top(q.max_keys, q.max_values);
    out.resource = resource.Top(q.max_keys, q.max_values);
    return out;
  });
}

// ----------------------------------------------------------------- metrics

Result<MetricCatalog> MemoryReader::ListMetrics(const MetricCatalogQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  return store_->Read([&](const Tables& t) -> Result<MetricCatalog> {
    using Key = std::tuple<std::string, int32_t, std::string, std::string, std::string>;
    std::map<Key, MetricCatalogRow> rows;
    for (const auto& [key, s] : t.series) {
      SL_RETURN_IF_ERROR(Poll());
      if (key.first != q.project_id) continue;
      auto [it, inserted] = rows.try_emplace(
          Key{s.metric_name, static_cast<int32_t>(s.metric_type), s.unit, s.description, s.service_name});
      MetricCatalogRow& r = it->second;
      if (inserted) {
        r.name = s.metric_name;
        r.type = s.metric_type;
        r.unit = s.unit;
        r.description = s.description;
        r.service = s.service_name;
        r.temporality = s.temporality;
      }
      r.monotonic = r.monotonic || s.monotonic;
      r.temporality = std::max(r.temporality, s.temporality);
    }
    MetricCatalog out;
    for (auto& [key, r] : rows) {
      if (static_cast<int64_t>(out.size()) > q.max_rows) break;
      out.push_back(std::move(r));
    }
    return out;
  });
}

Result<MetricSeriesList> MemoryReader::FindSeries(const MetricSeriesLookup& q) {
  SL_RETURN_IF_ERROR(Poll());
  return store_->Read([&](const Tables& t) -> Result<MetricSeriesList> {
    MetricSeriesList out;  // t.series is ordered by (project_id, series_id)
    for (const auto& [key, s] : t.series) {
      SL_RETURN_IF_ERROR(Poll());
      if (key.first != q.project_id || s.metric_name != q.name) continue;
      if (static_cast<int64_t>(out.size()) > q.max_series) break;
      out.push_back({key.second, s.metric_type, s.temporality, s.monotonic, s.service_name, s.attributes});
    }
    return out;
  });
}

Result<MetricBuckets> MemoryReader::AggregateSeries(const MetricSeriesQuery& q) {
  SL_RETURN_IF_ERROR(Poll());
  SL_RETURN_IF_ERROR(CheckBuckets(q.buckets));
  const std::set<int64_t> wanted(q.series_ids.begin(), q.series_ids.end());
  const std::set<int64_t> delta(q.delta_series_ids.begin(), q.delta_series_ids.end());
  return store_->Read([&](const Tables& t) -> Result<MetricBuckets> {
    // The points of each (series, bucket), oldest first: by time, then commit order.
    std::map<std::pair<int64_t, int64_t>, std::vector<const PointRow*>> cells;
    for (const PointRow& p : t.points) {
      SL_RETURN_IF_ERROR(Poll());
      if (p.project_id != q.project_id || !wanted.count(p.series_id) || !InRange(p.time_ns, q.range)) continue;
      std::optional<int64_t> b = BucketOf(p.time_ns, q.buckets);
      if (b) cells[{p.series_id, *b}].push_back(&p);
    }
    MetricBuckets out;
    for (auto& [key, points] : cells) {
      std::sort(points.begin(), points.end(), [](const PointRow* a, const PointRow* b) {
        return std::tie(a->time_ns, a->sequence) < std::tie(b->time_ns, b->sequence);
      });
      MetricBucket m;
      m.series_id = key.first;
      m.bucket = key.second;
      if (q.want != MetricSeriesQuery::Want::kHistograms) {
        for (const PointRow* p : points) {
          if (!p->value) continue;
          const double v = *p->value;
          m.min = m.count == 0 ? v : std::min(m.min, v);
          m.max = m.count == 0 ? v : std::max(m.max, v);
          m.sum += v;
          m.last = v;  // points are oldest first: the newest valued point wins
          ++m.count;
        }
        if (m.count > 0) out.push_back(std::move(m));
        continue;
      }
      bool any = false;
      for (const PointRow* p : points) {
        if (p->quantiles) {
          m.quantiles = *p->quantiles;  // the newest point wins
          any = true;
          continue;
        }
        if (p->exp_histogram) {
          if (!delta.count(key.first)) m.exp_histograms.clear();  // cumulative: the newest point wins
          m.exp_histograms.push_back(*p->exp_histogram);
          any = true;
          continue;
        }
        if (!p->bucket_counts) continue;
        Result<std::vector<double>> counts = NumberArray(parser_, *p->bucket_counts);
        if (!counts.ok()) return counts.status();
        Result<std::vector<double>> bounds = NumberArray(parser_, p->explicit_bounds.value_or("[]"));
        if (!bounds.ok()) return bounds.status();
        if (delta.count(key.first)) {
          if (m.counts.size() != counts->size()) m.counts.assign(counts->size(), 0);
          for (size_t i = 0; i < counts->size(); ++i) m.counts[i] += (*counts)[i];
        } else {
          m.counts = std::move(*counts);  // cumulative: the newest point wins
        }
        m.bounds = std::move(*bounds);
        any = true;
      }
      if (any) out.push_back(std::move(m));
    }
    return out;
  });
}

}  // namespace

std::unique_ptr<TelemetryReader> NewMemoryReader(const MemoryStore* store, MemoryReaderOptions options) {
  return std::make_unique<MemoryReader>(store, options);
}

}  // namespace sightline::memory
