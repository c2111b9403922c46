#include "storage/signal_bytes.h"

#include <string>
#include <vector>

namespace sightline {

namespace {

uint64_t Cell(const SqlResult& r, size_t row, size_t col) {
  if (row >= r.rows.size() || col >= r.rows[row].size() || !r.rows[row][col]) return 0;
  return std::stoull(*r.rows[row][col]);
}

//! The names of the store's tables (and, for SQLite, indexes with their table).
Result<SqlResult> Tables(TelemetryStore& store, bool duckdb) {
  return store.ExecuteSql(duckdb ? "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() "
                                   "AND schema_name = 'main' ORDER BY 1"
                                 : "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1");
}

std::string Quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::optional<std::array<SignalBytes, kSignalCount>> MeasureDuckDb(TelemetryStore& store) {
  auto tables = Tables(store, true);
  if (!tables.ok()) return std::nullopt;
  std::string segments;  // (sig, tbl, storage_info columns) of every signal's table
  for (const auto& row : tables->rows) {
    if (row.empty() || !row[0]) continue;
    const std::optional<Signal> s = SignalOfTable(*row[0]);
    if (!s) continue;
    segments += std::string(segments.empty() ? "" : " UNION ALL ") + "SELECT " + std::to_string(static_cast<int>(*s)) +
                " AS sig, " + Quoted(*row[0]) +
                " AS tbl, block_id, additional_block_ids, persistent, column_id, column_path, count FROM "
                "pragma_storage_info(" +
                Quoted(*row[0]) + ")";
  }
  std::array<SignalBytes, kSignalCount> out{};
  if (segments.empty()) return out;
  // One statement, the segments read once: (sig, 0, bytes) and (sig, 1, checkpointed main-table rows).
  auto measured = store.ExecuteSql(
      "WITH s AS MATERIALIZED (" + segments +
      ") SELECT sig, 0, count(DISTINCT b) * (SELECT block_size FROM pragma_database_size()) FROM "
      "(SELECT sig, block_id AS b FROM s WHERE block_id >= 0 UNION ALL "
      "SELECT sig, unnest(additional_block_ids) FROM s) GROUP BY sig "
      "UNION ALL SELECT sig, 1, sum(count) FROM s WHERE persistent AND column_id = 0 AND column_path = '[0]' AND "
      "tbl IN ('spans', 'logs', 'metric_points') GROUP BY sig");
  if (!measured.ok()) return std::nullopt;
  for (size_t i = 0; i < measured->rows.size(); ++i) {
    const uint64_t sig = Cell(*measured, i, 0);
    if (sig >= kSignalCount) continue;
    (Cell(*measured, i, 1) == 0 ? out[sig].bytes : out[sig].stored_rows) = Cell(*measured, i, 2);
  }
  return out;
}

std::optional<std::array<SignalBytes, kSignalCount>> MeasureSqlite(TelemetryStore& store) {
  // Every b-tree (tables and their indexes) with its pages' bytes; absent
  // without SQLITE_ENABLE_DBSTAT_VTAB.
  auto pages = store.ExecuteSql(
      "SELECT m.tbl_name, sum(d.pgsize) FROM dbstat AS d JOIN sqlite_master AS m ON m.name = d.name "
      "GROUP BY m.tbl_name");
  if (!pages.ok()) return std::nullopt;
  std::array<SignalBytes, kSignalCount> out{};
  for (size_t i = 0; i < pages->rows.size(); ++i) {
    if (pages->rows[i].empty() || !pages->rows[i][0]) continue;
    if (const std::optional<Signal> s = SignalOfTable(*pages->rows[i][0])) {
      out[static_cast<int>(*s)].bytes += Cell(*pages, i, 1);
    }
  }
  const StoreStats stats = store.Stats();  // SQLite has no WAL-only rows: every row is in the pages
  for (int s = 0; s < kSignalCount; ++s) out[s].stored_rows = stats.rows[s];
  return out;
}

}  // namespace

std::optional<Signal> SignalOfTable(std::string_view t) {
  if (t == "spans" || t.starts_with("span_") || t.starts_with("exception_")) {
    return Signal::kSpans;
  }
  if (t == "logs" || t.starts_with("log_")) return Signal::kLogs;
  if (t.starts_with("metric_")) return Signal::kMetrics;
  return std::nullopt;
}

std::optional<std::array<SignalBytes, kSignalCount>> MeasureSignalBytes(TelemetryStore& store) {
  const std::string_view engine = store.name();
  if (engine == "duckdb") return MeasureDuckDb(store);
  if (engine == "sqlite") return MeasureSqlite(store);
  return std::nullopt;
}

}  // namespace sightline
