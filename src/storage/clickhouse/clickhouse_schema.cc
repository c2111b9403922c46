#include "storage/clickhouse/clickhouse_schema.h"

#include <simdjson.h>

#include <charconv>
#include <limits>
#include <set>
#include <string_view>

#include "storage/attribute_text.h"
#include "storage/clickhouse/formats.h"

namespace sightline::clickhouse {

namespace {

constexpr const char* kHourNs = "3600000000000";

//! Columns with few distinct values: LowCardinality(String) where the
//! server has it (a dictionary per part; filters compare small integers).
bool LowCardinalityColumn(std::string_view table, std::string_view column) {
  static const std::set<std::string_view> kSpans = {"name",      "service_name", "http_route",    "http_method",
                                                    "db_system", "endpoint",     "exception_type"};
  static const std::set<std::string_view> kLogs = {"severity_text", "service_name", "event_name", "exception_type"};
  static const std::set<std::string_view> kSeries = {"metric_name", "unit", "description", "service_name"};
  if (table == schema::kSpansTable) return kSpans.count(column) != 0;
  if (table == schema::kLogsTable) return kLogs.count(column) != 0;
  if (table == schema::kMetricSeriesTable) return kSeries.count(column) != 0;
  return false;
}

//! A codec for a column of the big tables on servers that have codecs:
//! times are nearly sorted within a part (Delta), other integers small
//! (T64), text compresses well with ZSTD.
std::string CodecOf(std::string_view table, const schema::Column& c) {
  std::string_view name = c.name;
  if (table != schema::kSpansTable && table != schema::kLogsTable && table != schema::kMetricPointsTable) return "";
  if (name == "start_time_ns" || name == "time_ns" || name == "observed_time_ns" || name == "end_time_ns") {
    return " CODEC(Delta, ZSTD(1))";
  }
  if (c.type == schema::ColumnType::kText && !LowCardinalityColumn(table, name)) return " CODEC(ZSTD(1))";
  return "";
}

std::string DayOf(const char* time_expr) {
  return std::string("toDate(toDateTime(intDiv(") + time_expr + ", 1000000000)))";
}

}  // namespace

Result<ServerVersion> ParseVersion(const std::string& text) {
  ServerVersion v;
  v.text = text;
  while (!v.text.empty() && (v.text.back() == '\n' || v.text.back() == '\r')) v.text.pop_back();
  const char* p = v.text.data();
  const char* end = p + v.text.size();
  auto r = std::from_chars(p, end, v.major);
  if (r.ec != std::errc() || r.ptr == end || *r.ptr != '.') {
    return Status::InvalidArgument("clickhouse: not a version: " + v.text);
  }
  r = std::from_chars(r.ptr + 1, end, v.minor);
  if (r.ec != std::errc()) return Status::InvalidArgument("clickhouse: not a version: " + v.text);
  return v;
}

const char* TypeOf(const schema::Column& c) {
  using schema::SourceKind;
  switch (c.kind) {
    case SourceKind::kConstant:
    case SourceKind::kInt64:
    case SourceKind::kInt64Diff:
    case SourceKind::kInt64IfFlag:
    case SourceKind::kInt64Indexed: return "Int64";
    case SourceKind::kInt32: return "Int32";
    case SourceKind::kUint32: return "UInt32";
    case SourceKind::kUint8:
    case SourceKind::kIsEntry:
    case SourceKind::kAnyText: return "UInt8";
    case SourceKind::kUint64Clamped:
    case SourceKind::kId: return "UInt64";
    case SourceKind::kDoubleNanNull:
    case SourceKind::kDoubleIfNotFlag: return "Float64";
    case SourceKind::kText:
    case SourceKind::kTextEmptyNull:
    case SourceKind::kTextOrElse: return "String";
  }
  return "String";
}

std::vector<ExtraColumn> ExtraColumns(const char* table) {
  std::string_view t = table;
  // Spans, logs and span resources: the attribute arrays AttrFilter reads
  // (AttributeArrays), of their attributes / resource_attributes column.
  std::vector<ExtraColumn> attrs(std::begin(kAttributeArrayColumns), std::end(kAttributeArrayColumns));
  if (t == schema::kSpansTable || t == schema::kSpanResourcesTable) return attrs;
  if (t == schema::kLogsTable) {
    attrs.insert(attrs.begin(), {"seq", "UInt64"});
    return attrs;
  }
  if (t == schema::kMetricPointsTable) {
    // is_int: whether int_value holds a value (the embedded engines' NULL).
    return {{"bucket_counts_arr", "Array(Float64)"}, {"explicit_bounds_arr", "Array(Float64)"}, {"is_int", "UInt8"}};
  }
  return {};
}

std::string InsertColumns(const char* table) {
  std::string out = "(";
  for (const auto& [name, columns] : schema::AllTableColumns(schema::SparseLayout::kInline)) {
    if (std::string_view(name) != table) continue;
    for (const schema::Column& c : columns) out += (out.size() > 1 ? ", " : "") + std::string(c.name);
  }
  for (const ExtraColumn& e : ExtraColumns(table)) out += ", " + std::string(e.name);
  return out + ")";
}

std::string Layout::OnCluster() const { return clustered() ? " ON CLUSTER " + QuoteIdentifier(cluster) : ""; }

std::string Layout::LocalName(const char* table) const {
  return clustered() ? std::string(table) + "_local" : std::string(table);
}

std::string ShardingKey(const char* table) {
  const std::string_view t = table;
  if (t == schema::kSpansTable) return "cityHash64(trace_id_high, trace_id_low)";
  if (t == schema::kLogsTable) {
    return "if(trace_id_high = 0 AND trace_id_low = 0, cityHash64(seq), cityHash64(trace_id_high, trace_id_low))";
  }
  if (t == schema::kMetricPointsTable || t == schema::kMetricSeriesTable) return "cityHash64(series_id)";
  return "cityHash64(resource_id)";
}

std::vector<std::string> CreateTablesSql(const std::string& database, const ServerVersion& version,
                                         const Layout& layout) {
  const bool modern = version.modern();
  const std::string db = QuoteIdentifier(database) + ".";
  const std::string on_cluster = layout.OnCluster();
  // A Replicated engine's ZooKeeper path per shard and table, its replica
  // name from the servers' macros.
  auto engine = [&](const char* base, const std::string& local) {
    if (!layout.replicated) return std::string(base);
    return std::string("Replicated") + base + "(" + Quote("/clickhouse/tables/{shard}/" + database + "/" + local) +
           ", '{replica}')";
  };
  std::vector<std::string> out;
  out.push_back("CREATE TABLE IF NOT EXISTS " + db + kVersionTable + on_cluster +
                " (version Int64, written_by String) ENGINE = MergeTree ORDER BY version");
  for (const auto& [table, columns] : schema::AllTableColumns(schema::SparseLayout::kInline)) {
    const std::string_view t = table;
    const std::string local = layout.LocalName(table);
    std::string sql = "CREATE TABLE IF NOT EXISTS " + db + local + on_cluster + " (";
    for (size_t i = 0; i < columns.size(); ++i) {
      const schema::Column& c = columns[i];
      sql += (i ? ", " : "") + std::string(c.name) + " ";
      const std::string type = TypeOf(c);
      sql += modern && LowCardinalityColumn(t, c.name) ? "LowCardinality(" + type + ")" : type;
      if (modern) sql += CodecOf(t, c);
    }
    for (const ExtraColumn& e : ExtraColumns(table)) sql += ", " + std::string(e.name) + " " + e.type;
    // Skip indexes for lookups the sort key does not serve: a trace id at
    // any time, and words of a log body.
    if (modern && (t == schema::kSpansTable || t == schema::kLogsTable)) {
      sql += ", INDEX idx_trace_id trace_id_low TYPE bloom_filter(0.001) GRANULARITY 1";
    }
    if (modern && t == schema::kLogsTable) {
      sql += ", INDEX idx_body lowerUTF8(body) TYPE tokenbf_v1(32768, 3, 0) GRANULARITY 1";
    }
    sql += ") ENGINE = ";
    if (t == schema::kSpansTable) {
      sql += engine("MergeTree", local) + " PARTITION BY " + DayOf("start_time_ns") +
             " ORDER BY (project_id, intDiv(start_time_ns, " + kHourNs + "), service_name, endpoint, start_time_ns)";
    } else if (t == schema::kLogsTable) {
      sql += engine("MergeTree", local) + " PARTITION BY " + DayOf("if(time_ns = 0, observed_time_ns, time_ns)") +
             " ORDER BY (project_id, intDiv(time_ns, " + kHourNs + "), service_name, time_ns, seq)";
    } else if (t == schema::kMetricPointsTable) {
      sql += engine("MergeTree", local) + " PARTITION BY " + DayOf("time_ns") +
             " ORDER BY (project_id, series_id, time_ns)";
    } else if (t == schema::kMetricSeriesTable) {
      sql += engine("ReplacingMergeTree", local) + " ORDER BY (project_id, metric_name, series_id)";
    } else {
      sql += engine("ReplacingMergeTree", local) + " ORDER BY (project_id, resource_id)";
    }
    const bool big = t == schema::kSpansTable || t == schema::kLogsTable || t == schema::kMetricPointsTable;
    // Replicated tables deduplicate inserted blocks by default.
    if (big && version.dedup_token() && !layout.replicated) {
      sql += " SETTINGS non_replicated_deduplication_window = 1000";
    }
    out.push_back(std::move(sql));
    if (layout.clustered()) {
      out.push_back("CREATE TABLE IF NOT EXISTS " + db + table + on_cluster + " AS " + db + local +
                    " ENGINE = Distributed(" + QuoteIdentifier(layout.cluster) + ", " + QuoteIdentifier(database) +
                    ", " + local + ", " + ShardingKey(table) + ")");
    }
  }
  return out;
}

void AttributeArrays::Parse(std::string_view json) {
  keys.clear();
  values.clear();
  numbers.clear();
  other.clear();
  if (json.empty() || json == "{}") return;
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::object object;
  if (parser.parse(json.data(), json.size()).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(object) != simdjson::SUCCESS) {
    return;
  }
  std::set<std::string_view> seen;  // a repeated key: its first value, as a filter reads it
  for (auto field : object) {
    if (!seen.insert(field.key).second) continue;
    const simdjson::dom::element_type type = field.value.type();
    if (type == simdjson::dom::element_type::ARRAY || type == simdjson::dom::element_type::OBJECT) {
      other.emplace_back(field.key);
      continue;
    }
    std::optional<std::string> text = ScalarAttributeText(field.value);
    if (!text) continue;
    keys.emplace_back(field.key);
    values.push_back(std::move(*text));
    switch (type) {
      case simdjson::dom::element_type::INT64:
        numbers.push_back(static_cast<double>(field.value.get_int64().value_unsafe()));
        break;
      case simdjson::dom::element_type::UINT64:
        numbers.push_back(static_cast<double>(field.value.get_uint64().value_unsafe()));
        break;
      case simdjson::dom::element_type::DOUBLE: numbers.push_back(field.value.get_double().value_unsafe()); break;
      default: numbers.push_back(std::numeric_limits<double>::quiet_NaN()); break;
    }
  }
}

void NumberArray(std::string_view json, std::vector<double>* out) {
  out->clear();
  if (json.empty()) return;
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::array array;
  if (parser.parse(json.data(), json.size()).get(doc) != simdjson::SUCCESS ||
      doc.get_array().get(array) != simdjson::SUCCESS) {
    return;
  }
  for (simdjson::dom::element e : array) {
    switch (e.type()) {
      case simdjson::dom::element_type::INT64: out->push_back(static_cast<double>(e.get_int64().value_unsafe())); break;
      case simdjson::dom::element_type::UINT64:
        out->push_back(static_cast<double>(e.get_uint64().value_unsafe()));
        break;
      case simdjson::dom::element_type::DOUBLE: out->push_back(e.get_double().value_unsafe()); break;
      default: break;
    }
  }
}

}  // namespace sightline::clickhouse
