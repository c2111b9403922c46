// The metric operations of the read contract in SQL.

#include <simdjson.h>

#include <algorithm>
#include <tuple>

#include "storage/schema.h"
#include "storage/sql/sql_reader.h"

namespace sightline {

namespace {

//! A JSON array of numbers; `parser` is reused across calls (a fresh simdjson
//! parser allocates).
std::vector<double> ParseDoubleArray(simdjson::dom::parser& parser, const std::string& json) {
  std::vector<double> out;
  simdjson::dom::element doc;
  if (parser.parse(json).get(doc) != simdjson::SUCCESS) return out;
  simdjson::dom::array arr;
  if (doc.get_array().get(arr) != simdjson::SUCCESS) return out;
  for (auto e : arr) {
    double d;
    if (e.get_double().get(d) == simdjson::SUCCESS) {
      out.push_back(d);
    } else {
      uint64_t u;
      if (e.get_uint64().get(u) == simdjson::SUCCESS) out.push_back(static_cast<double>(u));
    }
  }
  return out;
}

//! " AND series_id IN (?, ?, ...)", every id bound (the caller caps how many).
void AppendSeriesIn(sql::Sql* sql, const std::vector<int64_t>& ids) {
  *sql << " AND series_id IN (";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) *sql << ", ";
    sql->Bind(ids[i]);
  }
  *sql << ")";
}

}  // namespace

Result<MetricCatalog> SqlReader::ListMetrics(const MetricCatalogQuery& q) {
  sql::Sql sql;
  sql << "SELECT metric_name, metric_type, unit, description, service_name, max(is_monotonic), max(temporality) "
         "FROM metric_series WHERE project_id = ";
  sql.Bind(q.project_id);
  sql << " GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5 LIMIT ";
  sql.Bind(q.max_rows < INT64_MAX ? q.max_rows + 1 : INT64_MAX);
  MetricCatalog out;
  SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
    MetricCatalogRow m;
    m.name = sql::Text(r, 0);
    m.type = static_cast<MetricType>(r.GetInt(1));
    m.unit = sql::Text(r, 2);
    m.description = sql::Text(r, 3);
    m.service = sql::Text(r, 4);
    m.monotonic = !r.IsNull(5) && r.GetInt(5) != 0;
    m.temporality = static_cast<int32_t>(r.IsNull(6) ? 0 : r.GetInt(6));
    out.push_back(std::move(m));
  }));
  return out;
}

Result<MetricSeriesList> SqlReader::FindSeries(const MetricSeriesLookup& q) {
  sql::Sql sql;
  sql << "SELECT series_id, metric_type, temporality, is_monotonic, service_name, attributes FROM metric_series "
         "WHERE project_id = ";
  sql.Bind(q.project_id);
  sql << " AND metric_name = ";
  sql.Bind(q.name);
  sql << " ORDER BY series_id LIMIT ";
  sql.Bind(q.max_series < INT64_MAX ? q.max_series + 1 : INT64_MAX);
  MetricSeriesList out;
  SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
    MetricSeriesInfo s;
    s.series_id = r.GetInt(0);
    s.type = static_cast<MetricType>(r.GetInt(1));
    s.temporality = static_cast<int32_t>(r.IsNull(2) ? 0 : r.GetInt(2));
    s.monotonic = !r.IsNull(3) && r.GetInt(3) != 0;
    s.service = sql::Text(r, 4);
    s.attributes = sql::Text(r, 5);
    out.push_back(std::move(s));
  }));
  return out;
}

Result<MetricBuckets> SqlReader::AggregateRawSeries(const MetricSeriesQuery& q) {
  MetricBuckets out;
  if (q.series_ids.empty()) return out;
  sql::Sql where;
  where << " WHERE project_id = ";
  where.Bind(q.project_id);
  where << " AND time_ns >= ";
  where.Bind(q.range.from_ns);
  where << " AND time_ns < ";
  where.Bind(q.range.to_ns);
  where << BucketWhere("time_ns", q.buckets, q.range);
  const std::string bucket = BucketExpr("time_ns", q.buckets);
  auto in_range = [&](int64_t b) { return b >= 0 && b < q.buckets.count; };

  if (q.want != MetricSeriesQuery::Want::kHistograms) {
    const bool last = q.want == MetricSeriesQuery::Want::kLast;
    sql::Sql sql;
    const char* value = schema::kMetricPointValueSql;
    sql << "SELECT series_id, " << bucket << ", count(" << value << "), sum(" << value << "), ";
    // SQLite's bare-column rule (LastOf) needs max(time_ns) to be the only min/max.
    if (last) sql << LastOf(value) << ", max(time_ns)";
    else sql << "min(" << value << "), max(" << value << ")";
    sql << " FROM metric_points";
    sql.Append(where);
    // The newest point with a value (a NULL value is skipped, not "last").
    if (last) sql << " AND " << value << " IS NOT NULL";
    AppendSeriesIn(&sql, q.series_ids);
    sql << " GROUP BY 1, 2 ORDER BY 1, 2";
    SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
      MetricBucket m;
      m.series_id = r.GetInt(0);
      m.bucket = r.GetInt(1);
      m.count = r.GetInt(2);
      if (m.count == 0 || !in_range(m.bucket)) return;
      m.sum = r.GetDouble(3);
      if (last) {
        if (r.IsNull(4)) return;
        m.last = r.GetDouble(4);
      } else {
        m.min = r.GetDouble(4);
        m.max = r.GetDouble(5);
      }
      out.push_back(std::move(m));
    }));
    return out;
  }

  // Histograms: a cumulative series needs only the newest point of each
  // bucket, so the engine picks it; a delta series needs every point.
  std::vector<int64_t> marked = q.delta_series_ids, delta, cumulative;
  std::sort(marked.begin(), marked.end());
  for (int64_t id : q.series_ids) {
    (std::binary_search(marked.begin(), marked.end(), id) ? delta : cumulative).push_back(id);
  }
  simdjson::dom::parser parser;
  std::string bounds_text;
  std::vector<double> bounds;
  // A series' bounds rarely change: parse them only when the text does.
  auto read_bounds = [&](const RowView& r, int col) {
    std::string text = r.IsNull(col) ? "[]" : r.GetString(col);
    if (text != bounds_text) {
      bounds = ParseDoubleArray(parser, text);
      bounds_text = std::move(text);
    }
  };
  if (!cumulative.empty()) {
    sql::Sql sql;
    // A series holds explicit, exponential or summary points, never two
    // kinds, so the newest point of a (series, bucket) has one of them.
    sql << "SELECT series_id, " << bucket << ", max(time_ns), " << LastOf("bucket_counts") << ", "
        << LastOf("explicit_bounds") << ", " << LastOf("exp_histogram") << ", " << LastOf("quantiles")
        << " FROM metric_points";
    sql.Append(where);
    AppendSeriesIn(&sql, cumulative);
    sql << " AND (bucket_counts IS NOT NULL OR exp_histogram IS NOT NULL OR quantiles IS NOT NULL) GROUP BY 1, 2 "
           "ORDER BY 1, 2";
    SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
      MetricBucket m;
      m.series_id = r.GetInt(0);
      m.bucket = r.GetInt(1);
      if (!in_range(m.bucket)) return;
      if (r.IsNull(3)) {
        if (!r.IsNull(5)) m.exp_histograms.push_back(r.GetString(5));
        else if (!r.IsNull(6)) m.quantiles = r.GetString(6);
        else return;
        out.push_back(std::move(m));
        return;
      }
      m.counts = ParseDoubleArray(parser, r.GetString(3));
      read_bounds(r, 4);
      m.bounds = bounds;
      out.push_back(std::move(m));
    }));
  }
  if (!delta.empty()) {
    sql::Sql sql;
    sql << "SELECT series_id, " << bucket << ", bucket_counts, explicit_bounds, exp_histogram FROM metric_points";
    sql.Append(where);
    AppendSeriesIn(&sql, delta);
    sql << " AND (bucket_counts IS NOT NULL OR exp_histogram IS NOT NULL) ORDER BY series_id, time_ns";
    SL_RETURN_IF_ERROR(Rows(sql, [&](const RowView& r) {
      int64_t series = r.GetInt(0), b = r.GetInt(1);
      if (!in_range(b) || (r.IsNull(2) && r.IsNull(4))) return;
      if (out.empty() || out.back().series_id != series || out.back().bucket != b) {
        MetricBucket m;
        m.series_id = series;
        m.bucket = b;
        out.push_back(std::move(m));
      }
      MetricBucket& m = out.back();
      if (r.IsNull(2)) {
        m.exp_histograms.push_back(r.GetString(4));
        return;
      }
      std::vector<double> counts = ParseDoubleArray(parser, r.GetString(2));
      read_bounds(r, 3);
      if (m.counts.size() != counts.size()) m.counts.assign(counts.size(), 0);
      for (size_t i = 0; i < counts.size(); ++i) m.counts[i] += counts[i];
      m.bounds = bounds;
    }));
  }
  std::sort(out.begin(), out.end(), [](const MetricBucket& a, const MetricBucket& b) {
    return std::tie(a.series_id, a.bucket) < std::tie(b.series_id, b.bucket);
  });
  return out;
}

}  // namespace sightline
