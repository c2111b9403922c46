#include "storage/schema_version.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/exception_group.h"
#include "model/ids.h"

namespace sightline::schema {
namespace {

//! One migration: brings a database from version `from` to `from + 1`.
struct Step {
  int64_t from;
  //! Runs at open without asking on these engines; otherwise only under
  //! `sightline migrate`. Automatic steps are cheap and cannot lose anything.
  enum class Automatic { kNever, kAlways, kExceptSqlite } automatic;
  const char* what;
  //! Returns a line for the report: what it did. `rebuild`: a step that
  //! takes columns out of a table rebuilds it rather than altering it (see
  //! MoveToSparseTable).
  Result<std::string> (*run)(SchemaSession*, bool rebuild);
};

// --- 1 -> 2: ids from XXH3 -----------------------------------------------------

//! A keyed table and how to recompute its key from its own columns.
struct KeyedTable {
  const char* table;
  const char* key;
  const char* main;  // the table whose rows reference the key
  //! The columns the id is made of (model/ids.h), besides project_id.
  std::vector<const char*> inputs;
  //! The id of a row of `SELECT project_id, key, inputs...`.
  int64_t (*id)(const RowView& r);
};

int64_t ResourceIdOfRow(const RowView& r) {
  return ResourceId(r.GetString(2), r.GetString(3), r.GetString(4), r.GetString(5));
}

int64_t SeriesIdOfRow(const RowView& r) {
  const std::string name = r.GetString(2), unit = r.GetString(4), resource = r.GetString(7),
                    scope_name = r.GetString(8), scope_version = r.GetString(9);
  SeriesMetric m{r.GetInt(0),
                 name,
                 static_cast<int32_t>(r.GetInt(3)),
                 unit,
                 static_cast<int32_t>(r.GetInt(5)),
                 r.GetInt(6) != 0,
                 resource,
                 scope_name,
                 scope_version};
  return SeriesIdHasher(m).Id(r.GetString(10));
}

std::vector<KeyedTable> KeyedTables() {
  const std::vector<const char*> resource = {"resource_attributes", "scope_name", "scope_version", "scope_attributes"};
  return {
      {kSpanResourcesTable, "resource_id", kSpansTable, resource, ResourceIdOfRow},
      {kLogResourcesTable, "resource_id", kLogsTable, resource, ResourceIdOfRow},
      {kMetricSeriesTable,
       "series_id",
       kMetricPointsTable,
       {"metric_name", "metric_type", "unit", "temporality", "is_monotonic", "resource_attributes", "scope_name",
        "scope_version", "attributes"},
       SeriesIdOfRow},
  };
}

constexpr const char* kIdMapTable = "sl_migrate_id_map";

//! Recomputes one keyed table's ids from its columns and rewrites them there
//! and in its main table. Returns how many keys it recomputed.
Result<size_t> RecomputeKeys(SchemaSession* s, const KeyedTable& t) {
  std::map<std::pair<int64_t, int64_t>, int64_t> new_ids;  // (project_id, old id) -> new id
  std::string conflict, missing;
  std::string select = std::string("SELECT project_id, ") + t.key;
  for (const char* column : t.inputs) select += std::string(", ") + column;
  select += std::string(" FROM ") + t.table;
  Status read = s->Query(select, [&](const RowView& r) {
    std::pair<int64_t, int64_t> key{r.GetInt(0), r.GetInt(1)};
    for (size_t c = 0; c < t.inputs.size() + 2; ++c) {
      if (r.IsNull(static_cast<int>(c)) && missing.empty()) {
        missing = std::string(c == 0   ? "project_id"
                              : c == 1 ? t.key
                                       : t.inputs[c - 2]) +
                  " is NULL in the row (project " + std::to_string(key.first) + ", " + t.key + " " +
                  std::to_string(key.second) + ")";
      }
    }
    int64_t id = t.id(r);
    auto [it, inserted] = new_ids.emplace(key, id);
    if (!inserted && it->second != id && conflict.empty()) {
      conflict = "project " + std::to_string(key.first) + ", " + t.key + " " + std::to_string(key.second);
    }
  });
  if (!read.ok())
    return Status(read.code(), std::string("reading the id inputs of ") + t.table + ": " + read.message());
  if (!missing.empty()) {
    // The writer never stores NULL there: the id cannot be what an ingest of
    // the same data would give.
    return Status::InvalidArgument(std::string(t.table) + "." + missing +
                                   ", so its new id cannot be computed; nothing "
                                   "was changed");
  }
  if (!conflict.empty()) {
    return Status::InvalidArgument(std::string(t.table) + " has two rows with the key (" + conflict +
                                   ") that differ in the columns the id is made of, so which one the rows of " +
                                   t.main + " meant cannot be told; nothing was changed");
  }
  SL_RETURN_IF_ERROR(s->Exec(std::string("DELETE FROM ") + kIdMapTable));
  std::string insert;
  size_t in_statement = 0;
  std::set<std::pair<int64_t, int64_t>> distinct_new;
  for (const auto& [old_key, id] : new_ids) {
    distinct_new.insert({old_key.first, id});
    insert += (in_statement == 0 ? std::string("INSERT INTO ") + kIdMapTable + " VALUES " : std::string(", ")) + "(" +
              std::to_string(old_key.first) + ", " + std::to_string(old_key.second) + ", " + std::to_string(id) + ")";
    if (++in_statement == 500) {
      SL_RETURN_IF_ERROR(s->Exec(insert));
      insert.clear();
      in_statement = 0;
    }
  }
  if (in_statement > 0) SL_RETURN_IF_ERROR(s->Exec(insert));
  for (const char* table : {t.main, t.table}) {
    SL_RETURN_IF_ERROR(s->Exec(std::string("UPDATE ") + table + " SET " + t.key + " = m.new_id FROM " + kIdMapTable +
                               " AS m WHERE m.project_id = " + table + ".project_id AND m.old_id = " + table + "." +
                               t.key));
  }
  // Rows that had different old ids but the same inputs now share a key:
  // keep one, as the writer would have.
  if (distinct_new.size() < new_ids.size()) {
    SL_RETURN_IF_ERROR(s->Exec(std::string("DELETE FROM ") + t.table + " WHERE rowid NOT IN (SELECT min(rowid) FROM " +
                               t.table + " GROUP BY project_id, " + t.key + ")"));
  }
  return new_ids.size();
}

Result<std::string> RecomputeIds(SchemaSession* s, bool) {
  const TypeNames& types = s->types();
  SL_RETURN_IF_ERROR(s->Exec(std::string("CREATE TEMP TABLE ") + kIdMapTable + " (project_id " + types.int64 +
                             ", old_id " + types.int64 + ", new_id " + types.int64 + ")"));
  std::string done = "recomputed with XXH3:";
  for (const KeyedTable& t : KeyedTables()) {
    Result<size_t> n = RecomputeKeys(s, t);
    if (!n.ok()) return n.status();
    done += std::string(" ") + std::to_string(*n) + " " + t.key + "s of " + t.table + " (and " + t.main + "),";
  }
  done.pop_back();
  SL_RETURN_IF_ERROR(s->Exec(std::string("DROP TABLE ") + kIdMapTable));
  return done;
}

// --- 2 -> 3: metric resources stored once -----------------------------------------

constexpr const char* kSeriesResourceTable = "sl_migrate_series_resource";
constexpr const char* kVersion2SeriesTable = "sl_migrate_metric_series_v2";

//! Moves each metric series' resource and scope texts into metric_resources,
//! one row per (project_id, resource_id), and rebuilds metric_series with a
//! resource_id in their place. Version 2 did not keep the scope attributes
//! of metrics, so the resources get '{}', and the id a fresh ingest of a
//! scope without attributes gives.
Result<std::string> SplitMetricResources(SchemaSession* s, bool) {
  struct Series {
    int64_t row;  // rowid in metric_series
    int64_t resource_id;
    bool first;  // the first series of its (project, resource): copied into metric_resources
  };
  std::vector<Series> series;
  std::set<std::pair<int64_t, int64_t>> resources;  // (project_id, resource_id)
  std::string missing;
  Status read = s->Query(
      std::string("SELECT rowid, project_id, series_id, resource_attributes, scope_name, scope_version FROM ") +
          kMetricSeriesTable,
      [&](const RowView& r) {
        for (int c = 1; c < 6; ++c) {
          if (r.IsNull(c) && missing.empty()) {
            static constexpr const char* kNames[] = {"",           "project_id",   "series_id", "resource_attributes",
                                                     "scope_name", "scope_version"};
            missing = std::string(kNames[c]) + " is NULL in the row (project " + std::to_string(r.GetInt(1)) +
                      ", series_id " + std::to_string(r.GetInt(2)) + ")";
          }
        }
        const int64_t id = ResourceId(r.GetString(3), r.GetString(4), r.GetString(5), "{}");
        series.push_back({r.GetInt(0), id, resources.insert({r.GetInt(1), id}).second});
      });
  if (!read.ok()) {
    return Status(read.code(), std::string("reading the resources of ") + kMetricSeriesTable + ": " + read.message());
  }
  if (!missing.empty()) {
    // The writer never stores NULL there: the resource id cannot be what an
    // ingest of the same data would give.
    return Status::InvalidArgument(std::string(kMetricSeriesTable) + "." + missing +
                                   ", so its resource id cannot be computed; nothing was changed");
  }
  const TypeNames& types = s->types();
  SL_RETURN_IF_ERROR(s->Exec(std::string("CREATE TEMP TABLE ") + kSeriesResourceTable + " (row_id " + types.int64 +
                             ", resource_id " + types.int64 + ", first " + types.int64 + ")"));
  std::string insert;
  size_t in_statement = 0;
  for (const Series& row : series) {
    insert +=
        (in_statement == 0 ? std::string("INSERT INTO ") + kSeriesResourceTable + " VALUES " : std::string(", ")) +
        "(" + std::to_string(row.row) + ", " + std::to_string(row.resource_id) + ", " + (row.first ? "1" : "0") + ")";
    if (++in_statement == 500) {
      SL_RETURN_IF_ERROR(s->Exec(insert));
      insert.clear();
      in_statement = 0;
    }
  }
  if (in_statement > 0) SL_RETURN_IF_ERROR(s->Exec(insert));
  // The resource texts, once per resource, from its first series.
  SL_RETURN_IF_ERROR(s->Exec(std::string("INSERT INTO ") + kMetricResourcesTable +
                             " (project_id, resource_id, resource_attributes, scope_name, scope_version, "
                             "scope_attributes) SELECT s.project_id, m.resource_id, s.resource_attributes, "
                             "s.scope_name, s.scope_version, '{}' FROM " +
                             kMetricSeriesTable + " AS s JOIN " + kSeriesResourceTable +
                             " AS m ON m.row_id = s.rowid WHERE m.first = 1"));
  // The series without the texts: a new table in the version 3 layout (an
  // index on the old one goes with it; the engine creates its indexes after).
  static const MetricBatch empty;
  std::string columns, select;
  for (const Column& c : MetricSeriesColumns(empty)) {
    columns += (columns.empty() ? "" : ", ") + std::string(c.name);
    select += (select.empty() ? "" : ", ") +
              (std::string(c.name) == "resource_id" ? std::string("m.resource_id") : "s." + std::string(c.name));
  }
  SL_RETURN_IF_ERROR(s->Exec(std::string("ALTER TABLE ") + kMetricSeriesTable + " RENAME TO " + kVersion2SeriesTable));
  SL_RETURN_IF_ERROR(s->Exec(CreateTableSql(kMetricSeriesTable, MetricSeriesColumns(empty), types)));
  SL_RETURN_IF_ERROR(s->Exec(std::string("INSERT INTO ") + kMetricSeriesTable + " (" + columns + ") SELECT " + select +
                             " FROM " + kVersion2SeriesTable + " AS s JOIN " + kSeriesResourceTable +
                             " AS m ON m.row_id = s.rowid ORDER BY s.rowid"));
  SL_RETURN_IF_ERROR(s->Exec(std::string("DROP TABLE ") + kVersion2SeriesTable));
  SL_RETURN_IF_ERROR(s->Exec(std::string("DROP TABLE ") + kSeriesResourceTable));
  return "moved the resources of " + std::to_string(series.size()) + " metric series into " +
         std::to_string(resources.size()) + " rows of " + kMetricResourcesTable;
}

// --- 3 -> 4: event names, log-based exceptions, exception groups ---------------

constexpr const char* kExceptionGroupTable = "sl_migrate_exception_group";

std::string SqlString(std::string_view s) {
  std::string out = "'";
  for (char c : s) {
    out += c;
    if (c == '\'') out += '\'';
  }
  return out + "'";
}

//! Adds the schema 4 columns (spans.exception_group; logs.event_name and the
//! log exception columns, NULL in records written before) and fills
//! spans.exception_group from each distinct exception message, normalised
//! in C++ as ingest does. Touches only the spans that have a message.
Result<std::string> AddExceptionGroups(SchemaSession* s, bool) {
  // The tables as schema 4 had them: the sparse values inline.
  for (const auto& [table, expected] : AllTableColumns(SparseLayout::kInline)) {
    if (std::string_view(table) != kSpansTable && std::string_view(table) != kLogsTable) continue;
    Result<std::vector<std::string>> actual = s->ColumnNames(table);
    if (!actual.ok()) return actual.status();
    Result<std::vector<std::string>> migration = MigrationSql(table, expected, *actual, s->types());
    if (!migration.ok()) return migration.status();
    for (const std::string& sql : *migration) SL_RETURN_IF_ERROR(s->Exec(sql));
  }
  std::vector<std::string> messages;
  SL_RETURN_IF_ERROR(s->Query(std::string("SELECT DISTINCT exception_message FROM ") + kSpansTable +
                                  " WHERE exception_message IS NOT NULL AND exception_message <> ''",
                              [&](const RowView& r) { messages.push_back(r.GetString(0)); }));
  const TypeNames& types = s->types();
  SL_RETURN_IF_ERROR(s->Exec(std::string("CREATE TEMP TABLE ") + kExceptionGroupTable + " (message " + types.text +
                             ", exception_group " + types.text + ")"));
  std::string insert;
  size_t in_statement = 0;
  for (const std::string& m : messages) {
    insert +=
        (in_statement == 0 ? std::string("INSERT INTO ") + kExceptionGroupTable + " VALUES " : std::string(", ")) +
        "(" + SqlString(m) + ", " + SqlString(NormalizeExceptionMessage(m)) + ")";
    if (++in_statement == 500) {
      SL_RETURN_IF_ERROR(s->Exec(insert));
      insert.clear();
      in_statement = 0;
    }
  }
  if (in_statement > 0) SL_RETURN_IF_ERROR(s->Exec(insert));
  SL_RETURN_IF_ERROR(s->Exec(std::string("UPDATE ") + kSpansTable + " SET exception_group = m.exception_group FROM " +
                             kExceptionGroupTable + " AS m WHERE m.message = " + kSpansTable + ".exception_message"));
  SL_RETURN_IF_ERROR(s->Exec(std::string("DROP TABLE ") + kExceptionGroupTable));
  return "added logs.event_name and the log exception columns, and grouped " + std::to_string(messages.size()) +
         " distinct span exception messages into spans.exception_group";
}

// --- 4 -> 5: metric_points.value NULL for int points ---------------------------

//! Readers take COALESCE(value, int_value), which reads the rows written
//! before (value and int_value both set) as it reads new ones; the version
//! number is what keeps a build of version 4, which reads value alone, from
//! opening a database with int points whose value is NULL.
Result<std::string> NothingToRewrite(SchemaSession*, bool) {
  return std::string("no rows rewritten: points written before keep their converted value");
}

// --- 5 -> 6 and 6 -> 7: sparse values move to their own table ----------------

//! Copies the rows of the signal's main table that have any of its sparse
//! table's values into it (created with every table before the steps run)
//! and takes the value columns out of main, which keeps MainColumns. A
//! database that came from an older version in this same open may never have
//! had them there: nothing to move.
//!
//! DuckDB drops a column without rewriting the table. With `rebuild`, `main`
//! is instead copied into a new table of MainColumns that replaces it:
//! one rewrite on SQLite, which rewrites the table for every dropped column,
//! and on DuckDB what works after an earlier step updated the table's rows in
//! this transaction. The engine creates its indexes after the steps.
template <typename Batch>
Result<std::string> MoveToSparseTable(SchemaSession* s, bool rebuild, const char* what) {
  static const Batch empty;
  const SignalTables tables = TablesOf(empty);
  const char* const main = tables.main;
  const char* const sparse = tables.sparse;
  const auto main_columns = MainColumns(empty);
  const std::vector<Column> columns = SparseColumns(empty);
  Result<std::vector<std::string>> actual = s->ColumnNames(main);
  if (!actual.ok()) return actual.status();
  const std::span<const Column> values = std::span<const Column>(columns).last(tables.sparse_values);
  std::vector<std::string> moved;
  for (const Column& c : values) {
    if (std::find(actual->begin(), actual->end(), c.name) != actual->end()) moved.emplace_back(c.name);
  }
  if (moved.empty()) return std::string(main) + " held no " + what + " columns: nothing moved";
  if (moved.size() != values.size()) {
    return Status::InvalidArgument(std::string(main) + " has " + std::to_string(moved.size()) + " of the " +
                                   std::to_string(values.size()) + " " + what + " columns");
  }
  std::string list, any;  // the sparse table's columns; "the row has a value"
  for (const Column& c : columns) list += (list.empty() ? "" : ", ") + std::string(c.name);
  for (const Column& c : values) any += (any.empty() ? "" : " OR ") + std::string(c.name) + " IS NOT NULL";
  SL_RETURN_IF_ERROR(s->Exec(std::string("INSERT INTO ") + sparse + " (" + list + ") SELECT " + list + " FROM " + main +
                             " WHERE " + any));
  // Counted in the small table, not by a second scan of the main one:
  // nothing else writes it before this step (CreateTables makes it empty).
  uint64_t rows = 0;
  SL_RETURN_IF_ERROR(s->Query(std::string("SELECT count(*) FROM ") + sparse,
                              [&](const RowView& r) { rows = static_cast<uint64_t>(r.GetInt(0)); }));
  if (rebuild) {
    const std::string rebuilt = std::string("sl_migrate_") + main;
    std::string kept;
    for (const Column& c : main_columns) kept += (kept.empty() ? "" : ", ") + std::string(c.name);
    SL_RETURN_IF_ERROR(s->Exec(CreateTableSql(rebuilt.c_str(), main_columns, s->types())));
    SL_RETURN_IF_ERROR(s->Exec("INSERT INTO " + rebuilt + " SELECT " + kept + " FROM " + main));
    SL_RETURN_IF_ERROR(s->Exec(std::string("DROP TABLE ") + main));
    SL_RETURN_IF_ERROR(s->Exec("ALTER TABLE " + rebuilt + " RENAME TO " + main));
  } else {
    for (const std::string& column : moved) {
      SL_RETURN_IF_ERROR(s->Exec(std::string("ALTER TABLE ") + main + " DROP COLUMN " + column));
    }
  }
  return "moved the " + std::string(what) + " values of " + std::to_string(rows) + " rows from " + main + " into " +
         sparse;
}

//! The log exception columns leave logs, with the SQLite index over them.
Result<std::string> MoveLogExceptions(SchemaSession* s, bool rebuild) {
  SL_RETURN_IF_ERROR(s->Exec("DROP INDEX IF EXISTS logs_exceptions"));
  return MoveToSparseTable<LogBatch>(s, rebuild, "log exception");
}

//! Trace state, status message, exception, events and links leave spans.
Result<std::string> MoveSpanDetails(SchemaSession* s, bool rebuild) {
  return MoveToSparseTable<SpanBatch>(s, rebuild, "span detail");
}

// --- 7 -> 8: span_details gains what the exception reads show ---------------

//! Rebuilds span_details with each row's service, name and duration, copied
//! from its spans row (a detail row without one gets '' and 0), and drops
//! SQLite's index of the spans with an exception. A database that was older
//! than version 7 in this same open got span_details with them (CreateTables
//! makes this version's tables): nothing to copy.
Result<std::string> CopySpanColumnsToDetails(SchemaSession* s, bool) {
  static const SpanBatch empty;
  const auto columns = SpanDetailColumns(empty);
  static constexpr std::string_view kCopied[] = {"service_name", "name", "duration_ns"};
  // SQLite's index of the spans with an exception served the join this ends.
  SL_RETURN_IF_ERROR(s->Exec("DROP INDEX IF EXISTS spans_exceptions"));
  Result<std::vector<std::string>> actual = s->ColumnNames(kSpanDetailsTable);
  if (!actual.ok()) return actual.status();
  if (std::find(actual->begin(), actual->end(), kCopied[0]) != actual->end()) {
    return std::string("span_details already has each span's service, name and duration: nothing copied");
  }
  std::string list, select;
  for (const Column& c : columns) {
    const bool copied = std::find(std::begin(kCopied), std::end(kCopied), c.name) != std::end(kCopied);
    const std::string empty_value = c.type == ColumnType::kText ? "''" : "0";
    list += (list.empty() ? "" : ", ") + std::string(c.name);
    select +=
        (select.empty() ? "" : ", ") + (copied ? "coalesce(min(s." + std::string(c.name) + "), " + empty_value + ")"
                                               : "min(d." + std::string(c.name) + ")");
  }
  // A span stored twice is two spans rows and two detail rows: grouped by
  // the detail row, each stays one.
  const std::string rebuilt = std::string("sl_migrate_") + kSpanDetailsTable;
  SL_RETURN_IF_ERROR(s->Exec(CreateTableSql(rebuilt.c_str(), columns, s->types())));
  SL_RETURN_IF_ERROR(s->Exec("INSERT INTO " + rebuilt + " (" + list + ") SELECT " + select + " FROM " +
                             kSpanDetailsTable + " AS d LEFT JOIN " + kSpansTable +
                             " AS s ON s.project_id = d.project_id AND s.trace_id_high = d.trace_id_high AND "
                             "s.trace_id_low = d.trace_id_low AND s.span_id = d.span_id AND s.start_time_ns = "
                             "d.start_time_ns GROUP BY d.rowid"));
  uint64_t rows = 0;
  SL_RETURN_IF_ERROR(s->Query("SELECT count(*) FROM " + rebuilt,
                              [&](const RowView& r) { rows = static_cast<uint64_t>(r.GetInt(0)); }));
  SL_RETURN_IF_ERROR(s->Exec(std::string("DROP TABLE ") + kSpanDetailsTable));
  SL_RETURN_IF_ERROR(s->Exec("ALTER TABLE " + rebuilt + " RENAME TO " + kSpanDetailsTable));
  return "copied the service, name and duration of " + std::to_string(rows) + " spans into span_details";
}

std::vector<Step> Steps() {
  return {
      {1, Step::Automatic::kNever,
       "recomputes every metric series id and span and log resource id with XXH3 (the hash those ids are made of "
       "changed) and rewrites the rows that reference them",
       RecomputeIds},
      {2, Step::Automatic::kNever,
       "moves the resource and scope of every metric series into metric_resources, computing each resource's id, "
       "and rewrites metric_series",
       SplitMetricResources},
      {3, Step::Automatic::kAlways,
       "adds logs.event_name, the log exception columns and spans.exception_group, and fills the latter from "
       "each span's exception message",
       AddExceptionGroups},
      {4, Step::Automatic::kAlways,
       "records that an int metric point's value is in int_value alone (metric_points.value NULL); points written "
       "before keep both, which every reader takes alike",
       NothingToRewrite},
      // DuckDB drops a column without rewriting the table; SQLite rewrites it.
      {5, Step::Automatic::kExceptSqlite,
       "moves the log records' exception columns out of logs into log_exceptions, which holds only the records "
       "that have one (an empty column costs DuckDB's writer about what a short string does), and rewrites logs",
       MoveLogExceptions},
      {6, Step::Automatic::kExceptSqlite,
       "moves the spans' trace state, status message, exception, events and links out of spans into span_details, "
       "which holds only the spans that have one, and rewrites spans",
       MoveSpanDetails},
      {7, Step::Automatic::kAlways,
       "copies each span's service, name and duration into its span_details row, so the exception reads need no "
       "join to spans, and rewrites span_details",
       CopySpanColumnsToDetails},
  };
}

//! Rolls back unless committed.
class SchemaTransaction {
 public:
  explicit SchemaTransaction(SchemaSession* session) : session_(session) {}
  ~SchemaTransaction() {
    if (active_) session_->Rollback();
  }
  SchemaTransaction(const SchemaTransaction&) = delete;
  SchemaTransaction& operator=(const SchemaTransaction&) = delete;

  Status Begin() {
    SL_RETURN_IF_ERROR(session_->Begin());
    active_ = true;
    return Status::Ok();
  }
  Status Commit() {
    SL_RETURN_IF_ERROR(session_->Commit());
    active_ = false;
    return Status::Ok();
  }

 private:
  SchemaSession* session_;
  bool active_ = false;
};

Status CreateTables(SchemaSession* s) {
  for (const std::string& ddl : CreateAllTablesSql(s->types())) SL_RETURN_IF_ERROR(s->Exec(ddl));
  return s->Exec(std::string("CREATE TABLE IF NOT EXISTS ") + kVersionTable + " (version " + s->types().int64 +
                 " NOT NULL)");
}

Status Stamp(SchemaSession* s, int64_t version) {
  SL_RETURN_IF_ERROR(s->Exec(std::string("DELETE FROM ") + kVersionTable));
  return s->Exec(std::string("INSERT INTO ") + kVersionTable + " VALUES (" + std::to_string(version) + ")");
}

//! Version 1 databases may predate the derived span columns: add and fill
//! them (MigrationSql). Tables without derived columns are left to the steps
//! (metric_series changes in 2 -> 3); any other difference is refused at the
//! end (CheckColumns).
Status AddDerivedColumns(SchemaSession* s) {
  // The layout the steps start from: the sparse values inline.
  for (const auto& [table, expected] : AllTableColumns(SparseLayout::kInline)) {
    if (std::none_of(expected.begin(), expected.end(), [](const Column& c) { return c.backfill != nullptr; })) {
      continue;
    }
    Result<std::vector<std::string>> actual = s->ColumnNames(table);
    if (!actual.ok()) return actual.status();
    Result<std::vector<std::string>> migration = MigrationSql(table, expected, *actual, s->types());
    if (!migration.ok()) return migration.status();
    for (const std::string& sql : *migration) {
      Status done = s->Exec(sql);
      if (!done.ok()) return Status::IoError(std::string("migrating ") + table + ": " + done.message());
    }
  }
  return Status::Ok();
}

//! A database that recorded no version and holds no row (FoundVersion 0) may
//! still have tables of an older layout: being empty, they are recreated.
Status RecreateEmptyTables(SchemaSession* s) {
  for (const auto& [table, expected] : AllTableColumns()) {
    Result<std::vector<std::string>> actual = s->ColumnNames(table);
    if (!actual.ok()) return actual.status();
    std::vector<std::string> names;
    for (const Column& c : expected) names.emplace_back(c.name);
    if (*actual == names) continue;
    SL_RETURN_IF_ERROR(s->Exec(std::string("DROP TABLE ") + table));
    SL_RETURN_IF_ERROR(s->Exec(CreateTableSql(table, expected, s->types())));
  }
  return Status::Ok();
}

//! Every table has exactly the columns of this version.
Status CheckColumns(SchemaSession* s) {
  for (const auto& [table, expected] : AllTableColumns()) {
    Result<std::vector<std::string>> actual = s->ColumnNames(table);
    if (!actual.ok()) return actual.status();
    std::vector<std::string> names;
    for (const Column& c : expected) names.emplace_back(c.name);
    SL_RETURN_IF_ERROR(CheckColumnNames(table, names, *actual));
  }
  return Status::Ok();
}

struct Found {
  int64_t version;
  bool recorded;  // in the version table
};

//! The version recorded in the database; else 0 when no table holds a row
//! (nothing was written under any version's rules), or 1 when data is there
//! (written before versions were recorded).
Result<Found> FoundVersion(SchemaSession* s) {
  Result<bool> has_version = s->TableExists(kVersionTable);
  if (!has_version.ok()) return has_version.status();
  if (*has_version) {
    std::vector<int64_t> versions;
    SL_RETURN_IF_ERROR(s->Query(std::string("SELECT version FROM ") + kVersionTable,
                                [&](const RowView& r) { versions.push_back(r.IsNull(0) ? -1 : r.GetInt(0)); }));
    if (versions.size() != 1 || versions[0] < 1) {
      return Status::InvalidArgument(std::string("the ") + kVersionTable + " table holds " +
                                     std::to_string(versions.size()) + " rows; expected one positive version");
    }
    return Found{versions[0], true};
  }
  for (const auto& [table, columns] : AllTableColumns()) {
    Result<bool> exists = s->TableExists(table);
    if (!exists.ok()) return exists.status();
    if (!*exists) continue;
    bool any = false;
    SL_RETURN_IF_ERROR(
        s->Query(std::string("SELECT 1 FROM ") + table + " LIMIT 1", [&](const RowView&) { any = true; }));
    if (any) return Found{1, false};
  }
  return Found{0, false};
}

}  // namespace

Result<SchemaReport> OpenSchema(SchemaSession* session, const char* engine, const StoreOptions& options) {
  SchemaTransaction txn(session);
  SL_RETURN_IF_ERROR(txn.Begin());
  Result<Found> found_or = FoundVersion(session);
  if (!found_or.ok()) return found_or.status();
  const Found found = *found_or;
  SchemaReport report;
  report.found_version = found.version;
  report.version = kCurrentVersion;
  const std::string where = std::string(engine) + " database in " + options.data_dir;
  const std::string versions = "schema version " + std::to_string(found.version);
  if (found.version > kCurrentVersion) {
    return Status::InvalidArgument("the " + where + " has " + versions + ", newer than this build's " +
                                   std::to_string(kCurrentVersion) +
                                   ": it was written by a newer Sightline, which is the one to run on it "
                                   "(a database is never downgraded; docs/STORAGE.md, Schema versions)");
  }
  std::vector<Step> steps;
  for (const Step& step : Steps()) {
    if (found.version != 0 && step.from >= found.version) steps.push_back(step);
  }
  for (const Step& step : steps) {
    const bool automatic = step.automatic == Step::Automatic::kAlways ||
                           (step.automatic == Step::Automatic::kExceptSqlite && std::string_view(engine) != "sqlite");
    if (automatic || options.migrate) continue;
    return Status::InvalidArgument("the " + where + " has " + versions + " and this build uses " +
                                   std::to_string(kCurrentVersion) + "; going from " + std::to_string(step.from) +
                                   " to " + std::to_string(step.from + 1) + " " + step.what +
                                   ". Stop the server and run `sightline migrate --data " + options.data_dir +
                                   " --storage " + engine + "` (docs/STORAGE.md, Schema versions)");
  }
  SL_RETURN_IF_ERROR(CreateTables(session));
  if (found.version == 0) SL_RETURN_IF_ERROR(RecreateEmptyTables(session));
  if (found.version == 1) SL_RETURN_IF_ERROR(AddDerivedColumns(session));
  for (const Step& step : steps) {
    // SQLite rewrites a table for every column it drops; DuckDB will not
    // commit an ALTER of a table after an earlier step updated its rows.
    const bool rebuild = std::string_view(engine) == "sqlite" || &step != &steps.front();
    Result<std::string> done = step.run(session, rebuild);
    if (!done.ok()) {
      return Status(done.status().code(), "migrating the " + where + " from schema version " +
                                              std::to_string(step.from) + " to " + std::to_string(step.from + 1) +
                                              ": " + done.status().message());
    }
    report.applied.push_back(std::to_string(step.from) + " -> " + std::to_string(step.from + 1) + ": " + *done);
  }
  if (!found.recorded || found.version != kCurrentVersion) SL_RETURN_IF_ERROR(Stamp(session, kCurrentVersion));
  SL_RETURN_IF_ERROR(CheckColumns(session));
  SL_RETURN_IF_ERROR(txn.Commit());
  return report;
}

}  // namespace sightline::schema

namespace sightline {

Result<SchemaReport> MigrateStore(const std::string& engine, StoreOptions options) {
  options.migrate = true;
  Result<std::unique_ptr<TelemetryStore>> store = StoreRegistry::Instance().Open(engine, options);
  if (!store.ok()) return store.status();
  SchemaReport report = (*store)->schema_report();
  SL_RETURN_IF_ERROR((*store)->Close());
  return report;
}

}  // namespace sightline
