#include "storage/rollup/metric_rollup.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>

namespace sightline::rollup {

using Summed = MetricRollupValue::Summed;

bool ParseJsonNumbers(std::string_view text, std::vector<double>* out) {
  out->clear();
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return false;
  const char* p = text.data() + 1;
  const char* end = text.data() + text.size() - 1;
  while (p < end) {
    while (p < end && *p == ' ') ++p;
    // Bucket counts are integers: read digits, and only a number with a
    // fraction or an exponent through from_chars.
    const char* q = p;
    uint64_t n = 0;
    while (q < end && *q >= '0' && *q <= '9' && q - p < 18) n = n * 10 + static_cast<uint64_t>(*q++ - '0');
    if (q > p && (q == end || *q == ',' || *q == ' ')) {
      out->push_back(static_cast<double>(n));
      p = q;
    } else {
      double d = 0;
      auto [next, ec] = std::from_chars(p, end, d);
      if (ec != std::errc()) return false;
      out->push_back(d);
      p = next;
    }
    while (p < end && *p == ' ') ++p;
    if (p < end && *p++ != ',') return false;
  }
  return true;
}

namespace {

//! The value of one point, for Add.
struct PointView {
  int64_t time_ns;
  double value;  // NaN: none
  std::string_view counts, bounds, exp, quantiles;
  //! The series is delta (temporality 1): only then are its explicit
  //! counts summed; a chart reads another series' newest point alone.
  bool delta;
};

void AddPoint(const PointView& p, MetricRollupValue* v) {
  if (!std::isnan(p.value)) {
    if (v->count == 0) {
      v->min = v->max = p.value;
    } else {
      v->min = std::min(v->min, p.value);
      v->max = std::max(v->max, p.value);
    }
    ++v->count;
    v->sum += p.value;
    if (p.time_ns > v->last_ns) {
      v->last_ns = p.time_ns;
      v->last = p.value;
    }
  }
  if ((!p.counts.empty() || !p.exp.empty() || !p.quantiles.empty()) && p.time_ns > v->dist_ns) {
    v->dist_ns = p.time_ns;
    v->counts.assign(p.counts);
    v->bounds.assign(p.bounds);
    v->exp.assign(p.exp);
    v->quantiles.assign(p.quantiles);
  }
  if (!p.exp.empty() || (!p.delta && !p.counts.empty())) {
    v->summed = Summed::kUnsummable;
    v->summed_counts.clear();
    v->summed_bounds.clear();
  } else if (!p.counts.empty() && v->summed != Summed::kUnsummable) {
    // Parsed into a scratch vector and added in place: no value is built
    // per point.
    thread_local std::vector<double> counts;
    const bool parsed = ParseJsonNumbers(p.counts, &counts);
    if (parsed && v->summed == Summed::kNone) {
      v->summed = Summed::kCounts;
      v->summed_counts.assign(counts.begin(), counts.end());
      v->summed_bounds.assign(p.bounds);
    } else if (parsed && counts.size() == v->summed_counts.size() && p.bounds == v->summed_bounds) {
      for (size_t i = 0; i < counts.size(); ++i) v->summed_counts[i] += counts[i];
    } else {
      v->summed = Summed::kUnsummable;
      v->summed_counts.clear();
      v->summed_bounds.clear();
    }
  }
}

}  // namespace

void MetricRollupValue::Add(const MetricBatch& b, size_t r, bool delta) {
  AddPoint({b.time_ns[r], b.value[r], b.bucket_counts.Get(r), b.explicit_bounds.Get(r), b.exp_histogram.Get(r),
            b.quantiles.Get(r), delta},
           this);
}

void MetricRollupValue::Merge(const MetricRollupValue& o) {
  if (o.count > 0) {
    min = count == 0 ? o.min : std::min(min, o.min);
    max = count == 0 ? o.max : std::max(max, o.max);
    count += o.count;
    sum += o.sum;
    if (o.last_ns > last_ns) {
      last_ns = o.last_ns;
      last = o.last;
    }
  }
  if (o.dist_ns > dist_ns) {
    dist_ns = o.dist_ns;
    counts = o.counts;
    bounds = o.bounds;
    exp = o.exp;
    quantiles = o.quantiles;
  }
  if (o.summed == Summed::kNone || summed == Summed::kUnsummable) return;
  if (summed == Summed::kNone) {
    summed = o.summed;
    summed_counts = o.summed_counts;
    summed_bounds = o.summed_bounds;
    return;
  }
  if (o.summed == Summed::kUnsummable || o.summed_bounds != summed_bounds ||
      o.summed_counts.size() != summed_counts.size()) {
    summed = Summed::kUnsummable;
    summed_counts.clear();
    summed_bounds.clear();
    return;
  }
  for (size_t i = 0; i < summed_counts.size(); ++i) summed_counts[i] += o.summed_counts[i];
}

void AddPoints(const MetricBatch& b, MetricRollupMap* m) {
  MetricRollupKey key;
  key.project_id = b.project_id;
  std::vector<int64_t> delta_series;  // of this batch's series rows
  for (size_t i = 0; i < b.series_rows(); ++i) {
    if (b.temporality[i] == 1) delta_series.push_back(b.series_id[i]);
  }
  std::sort(delta_series.begin(), delta_series.end());
  MetricRollupValue* value = nullptr;  // key's: a series' points come in runs
  bool delta = false;
  for (size_t r = 0; r < b.rows(); ++r) {
    const int64_t bucket = FloorTo(b.time_ns[r], kMinuteNs), series = b.point_series_id[r];
    if (value == nullptr || bucket != key.bucket_ns || series != key.series_id) {
      key.bucket_ns = bucket;
      key.series_id = series;
      value = &(*m)[key];
      delta = std::binary_search(delta_series.begin(), delta_series.end(), series);
    }
    value->Add(b, r, delta);
  }
}

std::string JsonNumbers(const std::vector<double>& v) {
  std::string out = "[";
  char buf[32];
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v[i]);
    out.append(buf, ec == std::errc() ? end : buf);
  }
  out += ']';
  return out;
}

namespace {

double DoubleOrNaN(const RowView& r, int col) { return r.IsNull(col) ? MetricRollupValue::kNaN : r.GetDouble(col); }
std::string TextOrEmpty(const RowView& r, int col) { return r.IsNull(col) ? std::string() : r.GetString(col); }

struct MetricRollupRows {
  std::vector<int64_t> project_id, bucket_ns, series_id, count, last_ns, dist_ns, summed;
  std::vector<double> sum, min, max, last;
  StringColumn counts, bounds, exp, quantiles, summed_counts, summed_bounds;
};

std::vector<schema::Column> MetricRollupColumns(const MetricRollupRows& r) {
  using namespace schema::internal;
  return {Ints("project_id", r.project_id),
          Ints("bucket_ns", r.bucket_ns),
          Ints("series_id", r.series_id),
          Ints("count", r.count),
          DoubleOrNull("sum", r.sum),
          DoubleOrNull("min", r.min),
          DoubleOrNull("max", r.max),
          Ints("last_ns", r.last_ns),
          DoubleOrNull("last", r.last),
          Ints("dist_ns", r.dist_ns),
          TextOrNull("bucket_counts", r.counts),
          TextOrNull("explicit_bounds", r.bounds),
          TextOrNull("exp_histogram", r.exp),
          TextOrNull("quantiles", r.quantiles),
          Ints("summed", r.summed),
          TextOrNull("summed_counts", r.summed_counts),
          TextOrNull("summed_bounds", r.summed_bounds)};
}

}  // namespace

Status MetricRollupTraits::Read(const RowView& r, Key* k, Value* v) {
  k->project_id = r.GetInt(0);
  k->bucket_ns = r.GetInt(1);
  k->series_id = r.GetInt(2);
  v->count = r.GetInt(3);
  v->sum = DoubleOrNaN(r, 4);
  v->min = DoubleOrNaN(r, 5);
  v->max = DoubleOrNaN(r, 6);
  if (v->count > 0 && (std::isnan(v->sum) || std::isnan(v->min) || std::isnan(v->max))) {
    return Status::Internal("metric rollup: a bucket with values but no sum, min or max");
  }
  if (v->count == 0) v->sum = 0;
  v->last_ns = r.GetInt(7);
  v->last = DoubleOrNaN(r, 8);
  v->dist_ns = r.GetInt(9);
  v->counts = TextOrEmpty(r, 10);
  v->bounds = TextOrEmpty(r, 11);
  v->exp = TextOrEmpty(r, 12);
  v->quantiles = TextOrEmpty(r, 13);
  const int64_t summed = r.GetInt(14);
  if (summed < 0 || summed > 2) return Status::Internal("metric rollup: unknown summed state");
  v->summed = static_cast<Summed>(summed);
  v->summed_bounds = TextOrEmpty(r, 16);
  if (v->summed == Summed::kCounts && !ParseJsonNumbers(TextOrEmpty(r, 15), &v->summed_counts)) {
    return Status::Internal("metric rollup: summed counts are not a JSON array of numbers");
  }
  return Status::Ok();
}

Status MetricRollupTraits::Append(RollupSession* s, const char* table, const MetricRollupMap& m) {
  if (m.empty()) return Status::Ok();
  MetricRollupRows rows;
  for (const auto& [k, v] : m) {
    rows.project_id.push_back(k.project_id);
    rows.bucket_ns.push_back(k.bucket_ns);
    rows.series_id.push_back(k.series_id);
    rows.count.push_back(v.count);
    rows.sum.push_back(v.count > 0 ? v.sum : MetricRollupValue::kNaN);
    rows.min.push_back(v.count > 0 ? v.min : MetricRollupValue::kNaN);
    rows.max.push_back(v.count > 0 ? v.max : MetricRollupValue::kNaN);
    rows.last_ns.push_back(v.last_ns);
    rows.last.push_back(v.last);
    rows.dist_ns.push_back(v.dist_ns);
    rows.counts.Append(v.counts);
    rows.bounds.Append(v.bounds);
    rows.exp.Append(v.exp);
    rows.quantiles.Append(v.quantiles);
    rows.summed.push_back(static_cast<int64_t>(v.summed));
    rows.summed_counts.Append(v.summed == Summed::kCounts ? JsonNumbers(v.summed_counts) : std::string());
    rows.summed_bounds.Append(v.summed_bounds);
  }
  const std::vector<schema::Column> columns = MetricRollupColumns(rows);
  return s->Append(table, columns, m.size());
}

std::vector<std::string> CreateMetricRollupSql(const schema::TypeNames& types) {
  const MetricRollupRows empty;
  std::vector<std::string> out =
      CreateRollupSql(kMetricRollupTables, kMetricStateTable, MetricRollupColumns(empty), types);
  out.push_back(std::string("CREATE TABLE IF NOT EXISTS ") + kMetricDirtyTable + " (project_id " + types.int64 +
                ", bucket_ns " + types.int64 + ")");
  return out;
}

Status MarkDirtyMinutes(RollupSession* s, const std::vector<ProjectMinute>& minutes) {
  constexpr size_t kChunk = 256;  // bounded statements
  for (size_t i = 0; i < minutes.size(); i += kChunk) {
    const size_t n = std::min(kChunk, minutes.size() - i);
    std::string sql = std::string("INSERT INTO ") + kMetricDirtyTable + " VALUES ";
    std::vector<SqlParam> params;
    params.reserve(2 * n);
    for (size_t j = 0; j < n; ++j) {
      sql += j ? ", (?, ?)" : "(?, ?)";
      params.emplace_back(minutes[i + j].first);
      params.emplace_back(minutes[i + j].second);
    }
    SL_RETURN_IF_ERROR(s->Exec(sql, params));
  }
  return Status::Ok();
}

Status FoldMetricRollups(RollupSession* s, const MetricRollupMap& pending) {
  if (!pending.empty()) {
    MetricRollupMap minutes = pending, hours;
    for (const auto& [k, v] : pending) {
      MetricRollupKey h = k;
      h.bucket_ns = FloorTo(k.bucket_ns, kHourNs);
      hours[h].Merge(v);
    }
    SL_RETURN_IF_ERROR(FoldInto<MetricRollupTraits>(s, kMetricRollupTables.minute, &minutes));
    SL_RETURN_IF_ERROR(FoldInto<MetricRollupTraits>(s, kMetricRollupTables.hour, &hours));
  }
  return s->Exec(std::string("DELETE FROM ") + kMetricDirtyTable, {});
}

Status PendingMetricRollups::Mark(RollupSession* s, const std::vector<const MetricBatch*>& batches, Commit* c) const {
  for (const MetricBatch* b : batches) AddPoints(*b, &c->series);
  for (const auto& [k, v] : c->series) {  // in (project, minute) order
    const ProjectMinute pm{k.project_id, k.bucket_ns};
    if ((c->dirty.empty() || c->dirty.back() != pm) && !dirty_.contains(pm)) c->dirty.push_back(pm);
  }
  return MarkDirtyMinutes(s, c->dirty);
}

void PendingMetricRollups::Committed(Commit&& c) {
  for (auto& [k, v] : c.series) rows_[k].Merge(v);
  dirty_.insert(c.dirty.begin(), c.dirty.end());
  committed_at_ = std::chrono::steady_clock::now();
}

Status PendingMetricRollups::Fold(RollupSession* s) const {
  if (empty()) return Status::Ok();
  return FoldMetricRollups(s, rows_);
}

void PendingMetricRollups::Folded() {
  rows_.clear();
  dirty_.clear();
  folded_at_ = std::chrono::steady_clock::now();
}

Status FoldLegacyMetricDeltas(RollupSession* s) {
  int64_t tables = 0;
  SL_RETURN_IF_ERROR(s->Query("SELECT count(*) FROM information_schema.tables WHERE table_name = ?",
                              {std::string(kLegacyMetricDeltaTable)}, [&](const RowView& r) { tables = r.GetInt(0); }));
  if (tables == 0) return Status::Ok();
  const RollupTables legacy{kLegacyMetricDeltaTable, kMetricRollupTables.minute, kMetricRollupTables.hour};
  Result<int64_t> folded = Compact<MetricRollupTraits>(s, legacy);
  if (!folded.ok()) return folded.status();
  return s->Exec(std::string("DROP TABLE ") + kLegacyMetricDeltaTable, {});
}

Status InitMetricRollupState(RollupSession* s) {
  return InitRollupState(s, kMetricStateTable, {"SELECT max(time_ns) FROM metric_points"});
}

namespace {

//! Adds the points `where` selects (" WHERE ..." over metric_points) at
//! minute resolution.
Status AddRawPoints(RollupSession* s, const std::string& where, const std::vector<SqlParam>& params,
                    MetricRollupMap* m) {
  return s->Query(
      std::string("SELECT project_id, series_id, time_ns, ") + schema::kMetricPointValueSql +
          ", bucket_counts, explicit_bounds, exp_histogram, quantiles, "
          "(SELECT max(s.temporality) FROM metric_series s WHERE s.project_id = metric_points.project_id AND "
          "s.series_id = metric_points.series_id) FROM metric_points" +
          where,
      params, [&](const RowView& r) {
        const int64_t t = r.GetInt(2);
        const std::string counts = TextOrEmpty(r, 4), bounds = TextOrEmpty(r, 5), exp = TextOrEmpty(r, 6),
                          quantiles = TextOrEmpty(r, 7);
        const bool delta = !r.IsNull(8) && r.GetInt(8) == 1;
        AddPoint({t, DoubleOrNaN(r, 3), counts, bounds, exp, quantiles, delta},
                 &(*m)[MetricRollupKey{r.GetInt(0), FloorTo(t, kMinuteNs), r.GetInt(1)}]);
      });
}

}  // namespace

Status RebuildDirtyMetricMinutes(RollupSession* s, int64_t* rebuilt) {
  std::vector<ProjectMinute> dirty;
  SL_RETURN_IF_ERROR(s->Query(std::string("SELECT DISTINCT project_id, bucket_ns FROM ") + kMetricDirtyTable +
                                  " ORDER BY project_id, bucket_ns",
                              {}, [&](const RowView& r) { dirty.emplace_back(r.GetInt(0), r.GetInt(1)); }));
  *rebuilt = static_cast<int64_t>(dirty.size());
  if (dirty.empty()) return Status::Ok();
  MetricRollupMap minutes, hours;
  std::set<ProjectMinute> hours_touched;
  for (const auto& [project, minute] : dirty) {
    SL_RETURN_IF_ERROR(AddRawPoints(s, " WHERE project_id = ? AND time_ns >= ? AND time_ns < ?",
                                    {project, minute, minute + kMinuteNs}, &minutes));
    SL_RETURN_IF_ERROR(
        s->Exec(std::string("DELETE FROM ") + kMetricRollupTables.minute + " WHERE project_id = ? AND bucket_ns = ?",
                {project, minute}));
    hours_touched.emplace(project, FloorTo(minute, kHourNs));
  }
  // Each hour again from its minutes: the ones kept, and the rebuilt ones.
  for (const ProjectMinute& touched : hours_touched) {
    const int64_t project = touched.first, hour = touched.second;  // a lambda below takes hour
    SL_RETURN_IF_ERROR(
        s->Exec(std::string("DELETE FROM ") + kMetricRollupTables.hour + " WHERE project_id = ? AND bucket_ns = ?",
                {project, hour}));
    SL_RETURN_IF_ERROR(ReadRows<MetricRollupTraits>(
        s,
        std::string("SELECT ") + MetricRollupTraits::kSelect + " FROM " + kMetricRollupTables.minute +
            " WHERE project_id = ? AND bucket_ns >= ? AND bucket_ns < ?",
        {project, hour, hour + kHourNs}, [&](MetricRollupKey k, const MetricRollupValue& v) {
          k.bucket_ns = hour;
          hours[k].Merge(v);
        }));
  }
  for (const auto& [k, v] : minutes) {
    MetricRollupKey h = k;
    h.bucket_ns = FloorTo(k.bucket_ns, kHourNs);
    hours[h].Merge(v);
  }
  std::erase_if(minutes, [](const auto& kv) { return kv.second.Empty(); });
  std::erase_if(hours, [](const auto& kv) { return kv.second.Empty(); });
  SL_RETURN_IF_ERROR(MetricRollupTraits::Append(s, kMetricRollupTables.minute, minutes));
  SL_RETURN_IF_ERROR(MetricRollupTraits::Append(s, kMetricRollupTables.hour, hours));
  return s->Exec(std::string("DELETE FROM ") + kMetricDirtyTable, {});
}

Status ExpireMetricRollups(RollupSession* s, const std::string& project_filter, int64_t before_ns) {
  return Expire<MetricRollupTraits>(
      s, kMetricRollupTables, "", project_filter, before_ns, [&](int64_t from, int64_t to, MetricRollupMap* m) {
        return AddRawPoints(s, " WHERE time_ns >= ? AND time_ns < ?" + project_filter, {from, to}, m);
      });
}

}  // namespace sightline::rollup
