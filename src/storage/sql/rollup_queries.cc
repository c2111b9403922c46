// GroupSpans, GroupExceptions, CountLogs and AggregateSeries from the rollups (storage/rollup/): whole
// hours from the hour table, whole minutes at the range's edges from the
// minute table, what no fold has moved yet from the delta table, and the
// partial minutes at the very edges from raw rows. Span counts and errors
// are exact and their percentiles come from the merged latency sketches
// (LatencySketch::kRelativeError); exception groups, log counts and metric
// buckets are exact.

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <unordered_map>

#include "storage/rollup/exception_rollup.h"
#include "storage/rollup/log_rollup.h"
#include "storage/rollup/metric_rollup.h"
#include "storage/rollup/span_rollup.h"
#include "storage/sql/sql_reader.h"

namespace sightline {

namespace {

using rollup::FloorTo;
using rollup::kHourNs;
using rollup::kMinuteNs;

constexpr double kFractions[3] = {0.5, 0.95, 0.99};

int64_t CeilTo(int64_t t, int64_t width) {
  const int64_t f = FloorTo(t, width);
  return f == t ? t : f + width;
}

bool ByBucket(const SpanGroupQuery& q) {
  return std::find(q.dimensions.begin(), q.dimensions.end(), SpanDimension::kBucket) != q.dimensions.end();
}

//! Whether every span the query reads is described by a rollup key: no
//! filter the rollups do not keep, and chart buckets of whole minutes.
bool RollupsCanAnswer(const SpanGroupQuery& q) {
  const SpanFilter& f = q.filter;
  if (f.status_code || f.min_duration_ns || f.max_duration_ns || !f.attributes.empty() ||
      !f.resource_attributes.empty()) {
    return false;
  }
  if (ByBucket(q) &&
      (q.buckets.step_ns % kMinuteNs != 0 || FloorTo(q.buckets.origin_ns, kMinuteNs) != q.buckets.origin_ns)) {
    return false;
  }
  return true;
}

struct Group {
  std::vector<std::string> keys;
  rollup::SpanRollupValue value;
};

//! Groups rows by the query's dimensions, as GroupSpans keys them.
class Grouper {
 public:
  explicit Grouper(const SpanGroupQuery& q)
      : q_(q), most_(static_cast<size_t>(std::min<int64_t>(q.max_groups, INT64_MAX - 1) + 1)) {
    for (size_t i = 0; i < q.labels.size(); ++i) labels_.try_emplace(q.labels[i], static_cast<int64_t>(i));
  }

  //! The group of a span (or rollup row) starting at `t`; nullptr when its
  //! chart bucket lies outside [0, count) or the group cap is reached.
  Group* Find(const std::string& service, const std::string& endpoint, int64_t t) {
    joined_.clear();
    keys_.clear();
    for (SpanDimension d : q_.dimensions) {
      switch (d) {
        case SpanDimension::kService: keys_.push_back(service); break;
        case SpanDimension::kEndpoint: keys_.push_back(endpoint); break;
        case SpanDimension::kBucket: {
          if (t < q_.buckets.origin_ns) return nullptr;
          const int64_t b = (t - q_.buckets.origin_ns) / q_.buckets.step_ns;
          if (b >= q_.buckets.count) return nullptr;
          keys_.push_back(std::to_string(b));
          break;
        }
        case SpanDimension::kLabel: {
          auto it = labels_.find({service, endpoint});
          keys_.push_back(std::to_string(it == labels_.end() ? -1 : it->second));
          break;
        }
      }
      joined_ += keys_.back();
      joined_.push_back('\0');
    }
    if (groups_.size() >= most_ && !groups_.contains(joined_)) return nullptr;
    auto [it, inserted] = groups_.try_emplace(joined_);
    if (inserted) it->second.keys = keys_;
    return &it->second;
  }

  SpanGroups Take() {
    SpanGroups out;
    for (auto& [unused, g] : groups_) {
      SpanGroup s;
      s.keys = std::move(g.keys);
      s.count = g.value.count;
      s.errors = g.value.errors;
      for (int i = 0; i < 3; ++i) {
        s.percentiles_ns[i] = q_.percentiles[i]
                                  ? g.value.sketch.Percentile(kFractions[i], g.value.duration_min, g.value.duration_max)
                                  : NAN;
      }
      if (s.count > 0) out.push_back(std::move(s));
    }
    return out;
  }

 private:
  const SpanGroupQuery& q_;
  const size_t most_;
  std::map<std::pair<std::string, std::string>, int64_t> labels_;
  std::unordered_map<std::string, Group> groups_;
  std::string joined_;
  std::vector<std::string> keys_;
};

//! The parts of a range: whole hours [h0, h1), whole minutes [m0, h0) and
//! [h1, m1) around them (or all of [m0, m1) when hours cannot be used), and
//! raw rows for the rest. Empty (m0 == m1) when the range holds no whole
//! minute the rollups are complete for.
struct RangePlan {
  int64_t m0 = 0, m1 = 0, h0 = 0, h1 = 0;
  bool empty() const { return m0 >= m1; }
};

RangePlan PlanRange(const TimeRange& range, int64_t complete_from, bool hours) {
  RangePlan p;
  const int64_t from = std::max(range.from_ns, complete_from);
  if (from >= range.to_ns) return p;
  p.m0 = CeilTo(from, kMinuteNs);
  p.m1 = FloorTo(range.to_ns, kMinuteNs);
  if (p.m0 >= p.m1) return RangePlan{};
  p.h0 = CeilTo(p.m0, kHourNs);
  p.h1 = FloorTo(p.m1, kHourNs);
  if (!hours || p.h0 >= p.h1) p.h0 = p.h1 = p.m1;
  return p;
}

//! One of a plan's four reads: rows of `table` with bucket_ns in [lo, hi).
struct LevelRead {
  const char* table;
  int64_t lo, hi;
};

//! Whole hours, the whole minutes around them, and every unfolded delta
//! (an empty read when the rollup has no delta table).
std::array<LevelRead, 4> LevelReads(const RangePlan& p, const rollup::RollupTables& t) {
  const LevelRead deltas = t.delta != nullptr ? LevelRead{t.delta, p.m0, p.m1} : LevelRead{t.minute, 0, 0};
  return {{{t.hour, p.h0, p.h1}, {t.minute, p.m0, p.h0}, {t.minute, p.h1, p.m1}, deltas}};
}

//! " FROM <table> WHERE project_id = ? AND bucket_ns in [lo, hi)", and the
//! service when one is asked for.
sql::Sql LevelWhere(const LevelRead& r, int64_t project_id, const std::optional<std::string>& service) {
  sql::Sql s;
  s << " FROM " << r.table << " WHERE project_id = ";
  s.Bind(project_id);
  s << " AND bucket_ns >= ";
  s.Bind(r.lo);
  s << " AND bucket_ns < ";
  s.Bind(r.hi);
  if (service) {
    s << " AND service_name = ";
    s.Bind(*service);
  }
  return s;
}

}  // namespace

Result<int64_t> SqlReader::RollupsCompleteFrom(const char* state_table) {
  int64_t complete_from = INT64_MAX;  // no state row: nothing is known complete
  SL_RETURN_IF_ERROR(Rows(sql::Sql() << "SELECT min(complete_from_ns) FROM " << state_table, [&](const RowView& r) {
    if (!r.IsNull(0)) complete_from = r.GetInt(0);
  }));
  return complete_from;
}

Result<SpanGroups> SqlReader::GroupSpans(const SpanGroupQuery& q) {
  if (HasRollups() && RollupsCanAnswer(q)) {
    Result<std::optional<SpanGroups>> from_rollups = GroupSpansFromRollups(q);
    if (!from_rollups.ok()) return from_rollups.status();
    if (from_rollups->has_value()) return std::move(**from_rollups);
  }
  return GroupRawSpans(q);
}

Result<std::optional<SpanGroups>> SqlReader::GroupSpansFromRollups(const SpanGroupQuery& q) {
  const SpanFilter& f = q.filter;
  Result<int64_t> complete_from = RollupsCompleteFrom(rollup::kSpanStateTable);
  if (!complete_from.ok()) return complete_from.status();
  // An hour row must fall in one chart bucket.
  const bool hours = !ByBucket(q) ||
                     (q.buckets.step_ns % kHourNs == 0 && FloorTo(q.buckets.origin_ns, kHourNs) == q.buckets.origin_ns);
  const RangePlan plan = PlanRange(f.range, *complete_from, hours);
  if (plan.empty()) return std::optional<SpanGroups>();
  const int64_t m0 = plan.m0, m1 = plan.m1;
  // The rows of one level that the filter keeps.
  auto level_where = [&](const LevelRead& p) {
    sql::Sql s = LevelWhere(p, f.project_id, f.service);
    if (f.entry_only) s << " AND is_entry = 1";
    if (f.endpoint) {
      s << " AND endpoint = ";
      s.Bind(*f.endpoint);
    }
    return s;
  };
  const std::array<LevelRead, 4> parts = LevelReads(plan, rollup::kSpanRollupTables);
  // Few spans in range: the exact answer costs little. Counted in SQL
  // first, so a small range does not pay for reading sketches it drops.
  if (rollup_exact_spans_ > 0) {
    int64_t spans = 0;
    for (const auto& p : parts) {
      if (p.lo >= p.hi) continue;
      sql::Sql s;
      s << "SELECT sum(count)";
      s.Append(level_where(p));
      SL_RETURN_IF_ERROR(Rows(s, [&](const RowView& r) { spans += r.GetInt(0); }));
    }
    if (spans < rollup_exact_spans_) return std::optional<SpanGroups>();
  }

  Grouper grouper(q);
  Status row_status;
  // Without percentiles the sketches are not read: decompressing their text
  // is most of what reading a rollup row costs.
  const bool sketches = q.percentiles[0] || q.percentiles[1] || q.percentiles[2];
  std::string select = rollup::kSpanRollupSelect;
  if (!sketches) select.replace(select.rfind("sketch"), 6, "'' AS sketch");
  for (const auto& p : parts) {
    if (p.lo >= p.hi) continue;
    sql::Sql s;
    s << "SELECT " << select;
    s.Append(level_where(p));
    SL_RETURN_IF_ERROR(Rows(s, [&](const RowView& r) {
      rollup::SpanRollupKey key;
      rollup::SpanRollupValue value;
      if (!row_status.ok()) return;
      row_status = rollup::ReadRow(r, 0, &key, &value);
      if (Group* g = grouper.Find(key.service, key.endpoint, key.bucket_ns)) g->value.Merge(value);
    }));
  }
  SL_RETURN_IF_ERROR(row_status);
  SL_RETURN_IF_ERROR(CheckInterrupted());

  for (const TimeRange edge : {TimeRange{f.range.from_ns, m0}, TimeRange{m1, f.range.to_ns}}) {
    if (edge.from_ns >= edge.to_ns) continue;
    SpanFilter part = f;
    part.range = edge;
    sql::Sql s;
    s << "SELECT service_name, endpoint, start_time_ns, status_code, duration_ns FROM spans";
    s.Append(SpanWhere(part));
    std::string service, endpoint;
    SL_RETURN_IF_ERROR(Rows(s, [&](const RowView& r) {
      service = r.GetString(0);
      endpoint = r.GetString(1);
      if (Group* g = grouper.Find(service, endpoint, r.GetInt(2))) g->value.Add(r.GetInt(4), r.GetInt(3) == 2);
    }));
  }
  return std::optional<SpanGroups>(grouper.Take());
}

Result<ExceptionGroups> SqlReader::GroupExceptions(const ExceptionQuery& q) {
  // The rollups keep service; every other filter is on spans only.
  if (HasRollups() && IsServiceOnly(q.filter)) {
    Result<std::optional<ExceptionGroups>> from_rollups = GroupExceptionsFromRollups(q);
    if (!from_rollups.ok()) return from_rollups.status();
    if (from_rollups->has_value()) return std::move(**from_rollups);
  }
  return GroupRawExceptions(q);
}

Result<std::optional<ExceptionGroups>> SqlReader::GroupExceptionsFromRollups(const ExceptionQuery& q) {
  if (q.limit < 0) return std::optional<ExceptionGroups>();  // the raw path says what is wrong
  const SpanFilter& f = q.filter;
  Result<int64_t> complete_from = RollupsCompleteFrom(rollup::kExceptionStateTable);
  if (!complete_from.ok()) return complete_from.status();
  const RangePlan plan = PlanRange(f.range, *complete_from, /*hours=*/true);
  if (plan.empty()) return std::optional<ExceptionGroups>();
  std::map<std::tuple<std::string, std::string, std::string>, ExceptionGroup> groups;
  auto add = [&](const ExceptionGroup& e) {
    auto [it, inserted] = groups.try_emplace({e.type, e.message, e.service}, e);
    if (inserted) return;
    ExceptionGroup& g = it->second;
    g.count += e.count;
    g.log_count += e.log_count;
    g.first_ns = std::min(g.first_ns, e.first_ns);
    g.last_ns = std::max(g.last_ns, e.last_ns);
    g.sample_trace_id = std::max(g.sample_trace_id, e.sample_trace_id);
  };
  Status row_status;
  for (const LevelRead& p : LevelReads(plan, rollup::kExceptionRollupTables)) {
    if (p.lo >= p.hi) continue;
    sql::Sql s;
    s << "SELECT " << rollup::ExceptionRollupTraits::kSelect;
    s.Append(LevelWhere(p, f.project_id, f.service));
    SL_RETURN_IF_ERROR(Rows(s, [&](const RowView& r) {
      rollup::ExceptionRollupKey k;
      rollup::ExceptionRollupValue v;
      if (!row_status.ok()) return;
      row_status = rollup::ExceptionRollupTraits::Read(r, &k, &v);
      add({k.type, k.group, k.service, v.count, v.first_ns, v.last_ns, TraceId{v.trace_high, v.trace_low},
           k.is_log ? v.count : 0});
    }));
  }
  SL_RETURN_IF_ERROR(row_status);
  // The edges: every group there, exactly, merged in.
  for (const TimeRange edge : {TimeRange{f.range.from_ns, plan.m0}, TimeRange{plan.m1, f.range.to_ns}}) {
    if (edge.from_ns >= edge.to_ns) continue;
    ExceptionQuery part = q;
    part.filter.range = edge;
    part.limit = INT64_MAX;
    Result<ExceptionGroups> raw = GroupRawExceptions(part);
    if (!raw.ok()) return raw.status();
    for (const ExceptionGroup& e : *raw) add(e);
  }
  ExceptionGroups out;
  for (auto& [unused, g] : groups) out.push_back(std::move(g));
  // The contract's order: count descending, then type, message, service.
  std::sort(out.begin(), out.end(), [](const ExceptionGroup& a, const ExceptionGroup& b) {
    if (a.count != b.count) return a.count > b.count;
    return std::tie(a.type, a.message, a.service) < std::tie(b.type, b.message, b.service);
  });
  if (static_cast<int64_t>(out.size()) > q.limit) out.resize(static_cast<size_t>(q.limit));
  return std::optional<ExceptionGroups>(std::move(out));
}

Result<LogVolume> SqlReader::CountLogs(const LogVolumeQuery& q) {
  const LogFilter& f = q.filter;
  const bool fits = !f.text && !f.trace_id && f.attributes.empty() && q.buckets.step_ns % kMinuteNs == 0 &&
                    FloorTo(q.buckets.origin_ns, kMinuteNs) == q.buckets.origin_ns;
  if (HasRollups() && fits) {
    Result<std::optional<LogVolume>> from_rollups = CountLogsFromRollups(q);
    if (!from_rollups.ok()) return from_rollups.status();
    if (from_rollups->has_value()) return std::move(**from_rollups);
  }
  return CountRawLogs(q);
}

Result<std::optional<LogVolume>> SqlReader::CountLogsFromRollups(const LogVolumeQuery& q) {
  const LogFilter& f = q.filter;
  Result<int64_t> complete_from = RollupsCompleteFrom(rollup::kLogStateTable);
  if (!complete_from.ok()) return complete_from.status();
  const bool hours = q.buckets.step_ns % kHourNs == 0 && FloorTo(q.buckets.origin_ns, kHourNs) == q.buckets.origin_ns;
  const RangePlan plan = PlanRange(f.range, *complete_from, hours);
  if (plan.empty()) return std::optional<LogVolume>();
  std::map<std::pair<int64_t, int32_t>, int64_t> counts;  // (bucket, level) -> records
  Status row_status;
  for (const LevelRead& p : LevelReads(plan, rollup::kLogRollupTables)) {
    if (p.lo >= p.hi) continue;
    sql::Sql s;
    s << "SELECT " << rollup::LogRollupTraits::kSelect;
    s.Append(LevelWhere(p, f.project_id, f.service));
    if (f.severity_min > 0) {
      s << " AND severity_number >= ";
      s.Bind(int64_t{f.severity_min});
    }
    SL_RETURN_IF_ERROR(Rows(s, [&](const RowView& r) {
      rollup::LogRollupKey k;
      rollup::LogRollupValue v;
      if (!row_status.ok()) return;
      row_status = rollup::LogRollupTraits::Read(r, &k, &v);
      if (k.bucket_ns < q.buckets.origin_ns) return;
      const int64_t bucket = (k.bucket_ns - q.buckets.origin_ns) / q.buckets.step_ns;
      if (bucket >= q.buckets.count) return;
      counts[{bucket, SeverityLevel(static_cast<int32_t>(k.severity_number))}] += v.count;
    }));
  }
  SL_RETURN_IF_ERROR(row_status);
  for (const TimeRange edge : {TimeRange{f.range.from_ns, plan.m0}, TimeRange{plan.m1, f.range.to_ns}}) {
    if (edge.from_ns >= edge.to_ns) continue;
    LogVolumeQuery part = q;
    part.filter.range = edge;
    Result<LogVolume> raw = CountRawLogs(part);
    if (!raw.ok()) return raw.status();
    for (const LogVolumeRow& row : *raw) counts[{row.bucket, row.level}] += row.count;
  }
  LogVolume out;
  for (const auto& [key, n] : counts) out.push_back({key.first, key.second, n});
  return std::optional<LogVolume>(std::move(out));
}

namespace {

//! Whether a chart bucket holds whole minutes (or whole hours), so that
//! every rollup row of that level falls in one bucket.
bool WholeBuckets(const Buckets& b, int64_t width) {
  return b.step_ns > 0 && b.step_ns % width == 0 && FloorTo(b.origin_ns, width) == b.origin_ns;
}

//! Adds `part`, the buckets of a later stretch of time, into `acc`, the
//! buckets of everything before it, as one read of both would have answered.
void MergeLater(MetricSeriesQuery::Want want, bool delta, MetricBucket part, MetricBucket* acc) {
  using Want = MetricSeriesQuery::Want;
  switch (want) {
    case Want::kStats:
      acc->min = acc->count == 0 ? part.min : std::min(acc->min, part.min);
      acc->max = acc->count == 0 ? part.max : std::max(acc->max, part.max);
      acc->count += part.count;
      acc->sum += part.sum;
      return;
    case Want::kLast:
      acc->count += part.count;
      acc->sum += part.sum;
      acc->last = part.last;  // the newer stretch's newest point
      return;
    case Want::kHistograms:
      if (!delta) {  // the newest point of the bucket: the later stretch's
        *acc = std::move(part);
        return;
      }
      // As the raw read sums a delta series in time order: a change of the
      // layout starts the sum again.
      if (!part.counts.empty()) {
        if (acc->counts.size() != part.counts.size()) acc->counts.assign(part.counts.size(), 0);
        for (size_t i = 0; i < part.counts.size(); ++i) acc->counts[i] += part.counts[i];
        acc->bounds = std::move(part.bounds);
      }
      for (std::string& e : part.exp_histograms) acc->exp_histograms.push_back(std::move(e));
      return;
  }
}

}  // namespace

Result<MetricBuckets> SqlReader::AggregateSeries(const MetricSeriesQuery& q) {
  if (HasRollups() && !q.series_ids.empty() && WholeBuckets(q.buckets, kMinuteNs)) {
    Result<std::optional<MetricBuckets>> from_rollups = AggregateSeriesFromRollups(q);
    if (!from_rollups.ok()) return from_rollups.status();
    if (from_rollups->has_value()) return std::move(**from_rollups);
  }
  return AggregateRawSeries(q);
}

Result<std::optional<MetricBuckets>> SqlReader::AggregateSeriesFromRollups(const MetricSeriesQuery& q) {
  using Want = MetricSeriesQuery::Want;
  using Summed = rollup::MetricRollupValue::Summed;
  Result<int64_t> complete_from = RollupsCompleteFrom(rollup::kMetricStateTable);
  if (!complete_from.ok()) return complete_from.status();
  // The first minute with points no fold has added yet: it and every later
  // one are read raw (the raw edge after the plan).
  TimeRange folded = q.range;
  {
    sql::Sql s;
    s << "SELECT min(bucket_ns) FROM " << rollup::kMetricDirtyTable << " WHERE project_id = ";
    s.Bind(q.project_id);
    s << " AND bucket_ns >= ";
    s.Bind(FloorTo(q.range.from_ns, kMinuteNs));
    s << " AND bucket_ns < ";
    s.Bind(q.range.to_ns);
    SL_RETURN_IF_ERROR(Rows(s, [&](const RowView& r) {
      if (!r.IsNull(0)) folded.to_ns = std::max(folded.from_ns, r.GetInt(0));
    }));
  }
  const RangePlan plan = PlanRange(folded, *complete_from, WholeBuckets(q.buckets, kHourNs));
  if (plan.empty()) return std::optional<MetricBuckets>();
  std::vector<int64_t> delta = q.delta_series_ids;
  std::sort(delta.begin(), delta.end());
  auto is_delta = [&](int64_t id) { return std::binary_search(delta.begin(), delta.end(), id); };

  // The whole minutes and hours, per (series, chart bucket).
  std::map<std::pair<int64_t, int64_t>, rollup::MetricRollupValue> rolled;
  Status row_status;
  for (const LevelRead& p : LevelReads(plan, rollup::kMetricRollupTables)) {
    if (p.lo >= p.hi) continue;
    sql::Sql s;
    s << "SELECT " << rollup::MetricRollupTraits::kSelect;
    s.Append(LevelWhere(p, q.project_id, std::nullopt));
    s << " AND series_id IN (";
    for (size_t i = 0; i < q.series_ids.size(); ++i) {
      if (i > 0) s << ", ";
      s.Bind(q.series_ids[i]);
    }
    s << ")";
    SL_RETURN_IF_ERROR(Rows(s, [&](const RowView& r) {
      rollup::MetricRollupKey k;
      rollup::MetricRollupValue v;
      if (!row_status.ok()) return;
      row_status = rollup::MetricRollupTraits::Read(r, &k, &v);
      if (k.bucket_ns < q.buckets.origin_ns) return;
      const int64_t bucket = (k.bucket_ns - q.buckets.origin_ns) / q.buckets.step_ns;
      if (bucket >= q.buckets.count) return;
      rolled[{k.series_id, bucket}].Merge(v);
    }));
  }
  SL_RETURN_IF_ERROR(row_status);
  SL_RETURN_IF_ERROR(CheckInterrupted());

  // Each (series, bucket) as the raw read answers it.
  std::vector<MetricBucket> middle;
  for (auto& [key, v] : rolled) {
    MetricBucket m;
    m.series_id = key.first;
    m.bucket = key.second;
    if (q.want != Want::kHistograms) {
      if (v.count == 0) continue;
      m.count = v.count;
      m.sum = v.sum;
      m.min = v.min;
      m.max = v.max;
      m.last = v.last;
    } else if (is_delta(m.series_id)) {
      if (v.summed == Summed::kUnsummable) return std::optional<MetricBuckets>();
      if (v.summed == Summed::kNone) continue;
      m.counts = std::move(v.summed_counts);
      if (!rollup::ParseJsonNumbers(v.summed_bounds.empty() ? "[]" : v.summed_bounds, &m.bounds)) {
        return std::optional<MetricBuckets>();
      }
    } else {
      if (v.dist_ns == INT64_MIN) continue;
      if (!v.counts.empty()) {
        if (!rollup::ParseJsonNumbers(v.counts, &m.counts) ||
            !rollup::ParseJsonNumbers(v.bounds.empty() ? "[]" : v.bounds, &m.bounds)) {
          return std::optional<MetricBuckets>();
        }
      } else if (!v.exp.empty()) {
        m.exp_histograms.push_back(std::move(v.exp));
      } else {
        m.quantiles = std::move(v.quantiles);
      }
    }
    middle.push_back(std::move(m));
  }

  // The partial minutes at the edges from raw points, merged in time order.
  std::map<std::pair<int64_t, int64_t>, MetricBucket> out;
  auto merge = [&](MetricBuckets part) {
    for (MetricBucket& m : part) {
      auto [it, inserted] = out.try_emplace({m.series_id, m.bucket}, m);
      if (!inserted) MergeLater(q.want, is_delta(m.series_id), std::move(m), &it->second);
    }
  };
  auto edge = [&](TimeRange range) -> Status {
    if (range.from_ns >= range.to_ns) return Status::Ok();
    MetricSeriesQuery part = q;
    part.range = range;
    Result<MetricBuckets> raw = AggregateRawSeries(part);
    if (!raw.ok()) return raw.status();
    merge(std::move(*raw));
    return Status::Ok();
  };
  SL_RETURN_IF_ERROR(edge({q.range.from_ns, plan.m0}));
  merge(std::move(middle));
  SL_RETURN_IF_ERROR(edge({plan.m1, q.range.to_ns}));
  MetricBuckets result;
  result.reserve(out.size());
  for (auto& [unused, m] : out) result.push_back(std::move(m));
  return std::optional<MetricBuckets>(std::move(result));
}

}  // namespace sightline
