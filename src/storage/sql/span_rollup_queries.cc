// GroupSpans from the span rollups (storage/rollup/span_rollup.h): whole
// hours from span_rollup_hour, whole minutes at the range's edges from
// span_rollup_minute, what no compaction has folded yet from
// span_rollup_delta, and the partial minutes at the very edges from raw
// spans. Counts and errors are exact; percentiles come from the merged
// latency sketches (LatencySketch::kRelativeError).

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>

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

}  // namespace

Result<SpanGroups> SqlReader::GroupSpans(const SpanGroupQuery& q) {
  if (HasSpanRollups() && RollupsCanAnswer(q)) {
    Result<std::optional<SpanGroups>> from_rollups = GroupSpansFromRollups(q);
    if (!from_rollups.ok()) return from_rollups.status();
    if (from_rollups->has_value()) return std::move(**from_rollups);
  }
  return GroupRawSpans(q);
}

Result<std::optional<SpanGroups>> SqlReader::GroupSpansFromRollups(const SpanGroupQuery& q) {
  const SpanFilter& f = q.filter;
  int64_t complete_from = INT64_MAX;
  SL_RETURN_IF_ERROR(
      Rows(sql::Sql() << "SELECT min(complete_from_ns) FROM " << rollup::kSpanStateTable, [&](const RowView& r) {
        if (!r.IsNull(0)) complete_from = r.GetInt(0);
      }));
  // [m0, m1): whole minutes the rollups hold; [h0, h1) the whole hours in it.
  const int64_t from = std::max(f.range.from_ns, complete_from);
  if (from >= f.range.to_ns) return std::optional<SpanGroups>();
  const int64_t m0 = CeilTo(from, kMinuteNs), m1 = FloorTo(f.range.to_ns, kMinuteNs);
  if (m0 >= m1) return std::optional<SpanGroups>();
  // An hour row must fall in one chart bucket.
  const bool hours = !ByBucket(q) ||
                     (q.buckets.step_ns % kHourNs == 0 && FloorTo(q.buckets.origin_ns, kHourNs) == q.buckets.origin_ns);
  int64_t h0 = CeilTo(m0, kHourNs), h1 = FloorTo(m1, kHourNs);
  if (!hours || h0 >= h1) h0 = h1 = m1;

  Grouper grouper(q);
  int64_t spans = 0;
  Status row_status;
  auto read_level = [&](const char* table, int64_t lo, int64_t hi) -> Status {
    if (lo >= hi) return Status::Ok();
    sql::Sql s;
    s << "SELECT " << rollup::kSpanRollupSelect << " FROM " << table << " WHERE project_id = ";
    s.Bind(f.project_id);
    s << " AND bucket_ns >= ";
    s.Bind(lo);
    s << " AND bucket_ns < ";
    s.Bind(hi);
    if (f.entry_only) s << " AND is_entry = 1";
    if (f.service) {
      s << " AND service_name = ";
      s.Bind(*f.service);
    }
    if (f.endpoint) {
      s << " AND endpoint = ";
      s.Bind(*f.endpoint);
    }
    return Rows(s, [&](const RowView& r) {
      rollup::SpanRollupKey key;
      rollup::SpanRollupValue value;
      if (!row_status.ok()) return;
      row_status = rollup::ReadRow(r, 0, &key, &value);
      spans += value.count;
      if (Group* g = grouper.Find(key.service, key.endpoint, key.bucket_ns)) g->value.Merge(value);
    });
  };
  SL_RETURN_IF_ERROR(read_level(rollup::kSpanHourTable, h0, h1));
  SL_RETURN_IF_ERROR(read_level(rollup::kSpanMinuteTable, m0, h0));
  SL_RETURN_IF_ERROR(read_level(rollup::kSpanMinuteTable, h1, m1));
  SL_RETURN_IF_ERROR(read_level(rollup::kSpanDeltaTable, m0, m1));
  SL_RETURN_IF_ERROR(row_status);
  // Few spans in range: the exact answer costs little.
  if (spans < rollup_exact_spans_) return std::optional<SpanGroups>();
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

}  // namespace sightline
