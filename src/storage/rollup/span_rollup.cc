#include "storage/rollup/span_rollup.h"

#include <algorithm>
#include <set>

namespace sightline::rollup {

void SpanRollupValue::Add(int64_t duration_ns, bool error) {
  ++count;
  errors += error ? 1 : 0;
  duration_sum += static_cast<double>(duration_ns);
  duration_min = std::min(duration_min, duration_ns);
  duration_max = std::max(duration_max, duration_ns);
  sketch.Add(duration_ns);
}

void SpanRollupValue::Merge(const SpanRollupValue& other) {
  count += other.count;
  errors += other.errors;
  duration_sum += other.duration_sum;
  duration_min = std::min(duration_min, other.duration_min);
  duration_max = std::max(duration_max, other.duration_max);
  sketch.Merge(other.sketch);
}

void AddSpans(const SpanBatch& b, SpanRollupMap* m) {
  const auto columns = schema::SpanColumns(b);
  // The derived columns as the spans table stores them, so a rollup row and
  // a GROUP BY over its spans agree on every key.
  const schema::Column* endpoint = nullptr;
  const schema::Column* is_entry = nullptr;
  for (const schema::Column& c : columns) {
    if (std::string_view(c.name) == "endpoint") endpoint = &c;
    if (std::string_view(c.name) == "is_entry") is_entry = &c;
  }
  // Grouped first by views into the batch: one hash lookup per span, and the
  // map's string keys built once per group rather than once per span.
  internal::BatchGroups<SpanRollupValue, 2> groups;
  for (size_t r = 0; r < b.rows(); ++r) {
    groups
        .Find(FloorTo(b.start_time_ns[r], kMinuteNs), schema::DerivedInt(*is_entry, r),
              {b.service_name.Get(r), schema::DerivedText(*endpoint, r)})
        .Add(b.end_time_ns[r] - b.start_time_ns[r], b.status_code[r] == 2);
  }
  groups.ForEach([&](int64_t bucket_ns, int64_t entry, const auto& text, const SpanRollupValue& v) {
    (*m)[SpanRollupKey{b.project_id, bucket_ns, std::string(text[0]), std::string(text[1]), entry}].Merge(v);
  });
}

SpanRollupRows ToRows(const SpanRollupMap& m) {
  SpanRollupRows out;
  for (const auto& [k, v] : m) {
    out.project_id.push_back(k.project_id);
    out.bucket_ns.push_back(k.bucket_ns);
    out.service.Append(k.service);
    out.endpoint.Append(k.endpoint);
    out.is_entry.push_back(k.is_entry);
    out.count.push_back(v.count);
    out.errors.push_back(v.errors);
    out.duration_sum.push_back(v.duration_sum);
    out.duration_min.push_back(v.duration_min);
    out.duration_max.push_back(v.duration_max);
    out.sketch.Append(v.sketch.Encode());
  }
  return out;
}

std::array<schema::Column, kSpanRollupColumnCount> SpanRollupColumns(const SpanRollupRows& r) {
  using namespace schema::internal;
  return {{
      Ints("project_id", r.project_id),
      Ints("bucket_ns", r.bucket_ns),
      Text("service_name", r.service),
      Text("endpoint", r.endpoint),
      Ints("is_entry", r.is_entry),
      Ints("count", r.count),
      Ints("errors", r.errors),
      DoubleOrNull("duration_sum", r.duration_sum),
      Ints("duration_min", r.duration_min),
      Ints("duration_max", r.duration_max),
      Text("sketch", r.sketch),
  }};
}

Status ReadRow(const RowView& r, int col, SpanRollupKey* key, SpanRollupValue* value) {
  key->project_id = r.GetInt(col);
  key->bucket_ns = r.GetInt(col + 1);
  key->service = r.GetString(col + 2);
  key->endpoint = r.GetString(col + 3);
  key->is_entry = r.GetInt(col + 4);
  SpanRollupValue v;
  v.count = r.GetInt(col + 5);
  v.errors = r.GetInt(col + 6);
  v.duration_sum = r.GetDouble(col + 7);
  v.duration_min = r.GetInt(col + 8);
  v.duration_max = r.GetInt(col + 9);
  SL_RETURN_IF_ERROR(v.sketch.MergeEncoded(r.GetString(col + 10)));
  value->Merge(v);
  return Status::Ok();
}

std::vector<std::string> CreateSpanRollupSql(const schema::TypeNames& types) {
  const SpanRollupRows empty;
  return CreateRollupSql(kSpanRollupTables, kSpanStateTable, SpanRollupColumns(empty), types);
}

Status InitSpanRollupState(RollupSession* s) {
  return InitRollupState(s, kSpanStateTable, {"SELECT max(start_time_ns) FROM spans"});
}

Status SpanRollupTraits::Append(RollupSession* s, const char* table, const SpanRollupMap& m) {
  const SpanRollupRows rows = ToRows(m);
  if (rows.rows() == 0) return Status::Ok();
  return s->Append(table, SpanRollupColumns(rows), rows.rows());
}

Result<int64_t> CompactSpanRollups(RollupSession* s) { return Compact<SpanRollupTraits>(s, kSpanRollupTables); }

Status ExpireSpanRollups(RollupSession* s, const std::string& project_filter, int64_t before_ns) {
  return Expire<SpanRollupTraits>(
      s, kSpanRollupTables, "", project_filter, before_ns, [&](int64_t from, int64_t to, SpanRollupMap* m) {
        return s->Query(
            "SELECT project_id, service_name, endpoint, is_entry, status_code, duration_ns, start_time_ns FROM spans "
            "WHERE start_time_ns >= ? AND start_time_ns < ?" +
                project_filter,
            {from, to}, [&](const RowView& r) {
              SpanRollupKey k{r.GetInt(0), FloorTo(r.GetInt(6), kMinuteNs), r.GetString(1), r.GetString(2),
                              r.GetInt(3)};
              (*m)[k].Add(r.GetInt(5), r.GetInt(4) == 2);
            });
      });
}

}  // namespace sightline::rollup
