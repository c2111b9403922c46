// Schema versions 1 -> 2 -> ... -> 7 on every engine: a database written with the
// ids of version 1, or the metric series layout of version 2, is refused at
// open with a message naming `sightline migrate`, and after the migration it
// holds exactly what a fresh ingest of the same data into an empty directory
// holds, ids included.

#include "storage/schema_version.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "bench/load_generator.h"
#include "common/exception_group.h"
#include "common/testing/temp_dir.h"
#include "model/batch.h"
#include "otlp/decoder.h"
#include "storage/telemetry_reader.h"
#include "storage/telemetry_store.h"

namespace sightline {
namespace {

//! A fresh directory for one test, removed at the end.
class TempDir : public testing::TempDir {
 public:
  TempDir() : testing::TempDir("sightline-migrate-test") {}
};

// The hash version 1 databases were written with, as common/hash.cc had it
// ("xxHash64 rounds", words in host order, the length folded into the tail).
class Version1Hasher {
 public:
  void AddField(std::string_view bytes) {
    uint64_t h = h_;
    const char* p = bytes.data();
    size_t n = bytes.size();
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t word;
      std::memcpy(&word, p, 8);
      h = Round(h, word);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, p, n);
    h_ = Round(h, tail ^ (static_cast<uint64_t>(bytes.size()) << 56));
  }
  int64_t Finish() const {
    uint64_t z = h_ + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133a32ebull;
    return static_cast<int64_t>(z ^ (z >> 31));
  }

 private:
  static uint64_t Round(uint64_t acc, uint64_t word) {
    acc += word * 0xC2B2AE3D27D4EB4Full;
    acc = acc << 31 | acc >> 33;
    return acc * 0x9E3779B185EBCA87ull;
  }
  uint64_t h_ = 14695981039346656037ull;
};

//! Gives a decoded batch the ids version 1 wrote, in its keyed rows and in
//! the rows that reference them.
void UseVersion1Ids(ResourceTable* t, std::vector<int64_t>* refs) {
  std::unordered_map<int64_t, int64_t> old_of;
  for (size_t i = 0; i < t->rows(); ++i) {
    Version1Hasher h;
    h.AddField(t->resource_attributes.Get(i));
    h.AddField(t->scope_name.Get(i));
    h.AddField(t->scope_version.Get(i));
    h.AddField(t->scope_attributes.Get(i));
    old_of[t->resource_id[i]] = h.Finish();
    t->resource_id[i] = h.Finish();
  }
  for (int64_t& id : *refs) id = old_of.at(id);
}

void UseVersion1Ids(MetricBatch* b) {
  std::unordered_map<int64_t, int64_t> old_of;
  for (size_t i = 0; i < b->series_rows(); ++i) {
    Version1Hasher h;
    h.AddField(std::to_string(b->project_id));
    h.AddField(b->metric_name.Get(i));
    h.AddField(std::to_string(b->metric_type[i]));
    h.AddField(b->unit.Get(i));
    h.AddField(std::to_string(b->temporality[i]));
    h.AddField(b->is_monotonic[i] != 0 ? "1" : "0");
    h.AddField(b->resource_attributes(i));
    h.AddField(b->scope_name(i));
    h.AddField(b->scope_version(i));
    h.AddField(b->attributes.Get(i));
    old_of[b->series_id[i]] = h.Finish();
    b->series_id[i] = h.Finish();
  }
  for (int64_t& id : b->point_series_id) id = old_of.at(id);
}

//! What an ingest of the load generator's requests decodes to, for two projects.
struct Data {
  std::vector<SpanBatch> spans;
  std::vector<LogBatch> logs;
  std::vector<MetricBatch> metrics;
};

Data Decoded() {
  bench::GeneratorOptions o;
  o.seed = 11;
  o.batch = 300;
  o.sdk_batch_limit = 100;  // several services, so several resources, per request
  o.base_time_ns = 1700000000000000000;
  bench::LoadGenerator gen(o);
  Data d;
  for (int64_t project : {1, 2}) {
    for (uint64_t index : {0, 1}) {
      uint32_t items = 0;
      Rejections r;
      SpanBatch& s = d.spans.emplace_back();
      s.project_id = project;
      EXPECT_TRUE(
          DecodeSpans(gen.BuildRaw(bench::Signal::kSpans, index, &items), PayloadFormat::kProtobuf, &s, &r).ok());
      LogBatch& l = d.logs.emplace_back();
      l.project_id = project;
      EXPECT_TRUE(DecodeLogs(gen.BuildRaw(bench::Signal::kLogs, index, &items), PayloadFormat::kProtobuf,
                             1700000000000000000, &l, &r)
                      .ok());
      MetricBatch& m = d.metrics.emplace_back();
      m.project_id = project;
      EXPECT_TRUE(
          DecodeMetrics(gen.BuildRaw(bench::Signal::kMetrics, index, &items), PayloadFormat::kProtobuf, &m, &r).ok());
      EXPECT_EQ(r.count, 0) << r.Summary();
    }
  }
  return d;
}

//! Decoded() with an exception on every seventh log record (the generator's
//! logs carry none), as ingest reads them from exception.* attributes.
Data WithLogExceptions(Data d) {
  for (LogBatch& b : d.logs) {
    StringColumn type, message, group;
    for (size_t r = 0; r < b.rows(); ++r) {
      const bool exception = r % 7 == 3;
      const std::string text = exception ? "timed out after " + std::to_string(r) + " ms" : "";
      type.Append(exception ? "TimeoutError" : "");
      message.Append(text);
      group.Append(NormalizeExceptionMessage(text));
    }
    b.exception_type = std::move(type);
    b.exception_message = std::move(message);
    b.exception_group = std::move(group);
  }
  return d;
}

template <typename Batch>
std::vector<const Batch*> Pointers(const std::vector<Batch>& batches) {
  std::vector<const Batch*> out;
  for (const Batch& b : batches) out.push_back(&b);
  return out;
}

class SchemaMigrationTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { RegisterBuiltinStores(); }

  StoreOptions Options(const TempDir& dir) const {
    StoreOptions options;
    options.data_dir = dir.str();
    options.memory_limit = "512MB";
    options.threads = 2;
    return options;
  }

  std::unique_ptr<TelemetryStore> Open(const TempDir& dir) {
    Result<std::unique_ptr<TelemetryStore>> store = StoreRegistry::Instance().Open(GetParam(), Options(dir));
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    return store.ok() ? std::move(store).value() : nullptr;
  }

  void Write(TelemetryStore* store, const Data& d) {
    for (Signal signal : {Signal::kSpans, Signal::kLogs, Signal::kMetrics}) {
      Result<std::unique_ptr<SignalSink>> sink = store->NewSink(signal);
      ASSERT_TRUE(sink.ok()) << sink.status().ToString();
      Status s = signal == Signal::kSpans  ? (*sink)->WriteSpans(Pointers(d.spans))
                 : signal == Signal::kLogs ? (*sink)->WriteLogs(Pointers(d.logs))
                                           : (*sink)->WriteMetrics(Pointers(d.metrics));
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
  }

  void Sql(TelemetryStore* store, const std::string& sql) {
    Result<SqlResult> r = store->ExecuteSql(sql);
    ASSERT_TRUE(r.ok()) << sql << ": " << r.status().ToString();
  }

  //! Rewrites the metric tables as versions 1 and 2 laid them out: each
  //! series row with its resource's texts, and no metric_resources.
  void UseVersion2SeriesLayout(TelemetryStore* store) {
    Sql(store,
        "CREATE TABLE v2_series AS SELECT s.project_id, s.series_id, s.metric_name, s.metric_type, s.unit, "
        "s.description, s.temporality, s.is_monotonic, s.service_name, r.resource_attributes, r.scope_name, "
        "r.scope_version, s.attributes FROM metric_series s JOIN metric_resources r "
        "ON r.project_id = s.project_id AND r.resource_id = s.resource_id ORDER BY s.rowid");
    Sql(store, "DROP TABLE metric_series");
    Sql(store, "ALTER TABLE v2_series RENAME TO metric_series");
    Sql(store, "DROP TABLE metric_resources");
  }

  //! Moves the span details back into spans, as versions 1 to 6 had them:
  //! each in its place among the span's columns, NULL for a span without.
  void UseVersion6Spans(TelemetryStore* store) {
    static const SpanBatch empty;
    const auto details = schema::SpanDetailColumns(empty);
    const auto values = std::span<const schema::Column>(details).last(schema::kSpanDetailValueColumns);
    std::string select;
    for (const schema::Column& c : schema::WideSpanColumns(empty)) {
      const bool detail = std::any_of(values.begin(), values.end(),
                                      [&](const schema::Column& v) { return std::strcmp(v.name, c.name) == 0; });
      select += (select.empty() ? "" : ", ") + std::string(detail ? "d." : "s.") + c.name;
    }
    Sql(store, "CREATE TABLE v6_spans AS SELECT " + select +
                   " FROM spans s LEFT JOIN span_details d ON d.project_id = s.project_id AND d.trace_id_high = "
                   "s.trace_id_high AND d.trace_id_low = s.trace_id_low AND d.span_id = s.span_id AND "
                   "d.start_time_ns = s.start_time_ns ORDER BY s.rowid");
    Sql(store, "DROP TABLE spans");
    Sql(store, "ALTER TABLE v6_spans RENAME TO spans");
    Sql(store, "DROP TABLE span_details");
  }

  //! Rebuilds span_details as version 7 had it: without the span's service,
  //! name and duration.
  void UseVersion7Details(TelemetryStore* store) {
    static const SpanBatch empty;
    std::string select;
    for (const schema::Column& c : schema::SpanDetailColumns(empty)) {
      const std::string name = c.name;
      if (name == "service_name" || name == "name" || name == "duration_ns") continue;
      select += (select.empty() ? "" : ", ") + name;
    }
    Sql(store, "CREATE TABLE v7_details AS SELECT " + select + " FROM span_details ORDER BY rowid");
    Sql(store, "DROP TABLE span_details");
    Sql(store, "ALTER TABLE v7_details RENAME TO span_details");
  }

  //! Drops what schemas 4, 6 and 7 added, as versions 1 to 3 had the tables.
  void UseVersion3Columns(TelemetryStore* store) {
    UseVersion6Spans(store);
    Sql(store, "ALTER TABLE spans DROP COLUMN exception_group");
    Sql(store, "ALTER TABLE logs DROP COLUMN event_name");
    Sql(store, "DROP TABLE log_exceptions");
  }

  //! Moves the log exceptions back into logs, as versions 4 and 5 had them:
  //! three columns after event_name, NULL for a record without one, and on
  //! SQLite the partial index over them.
  void UseVersion5Logs(TelemetryStore* store, const std::string& text_type) {
    const std::string key =
        "e.project_id = l.project_id AND e.time_ns = l.time_ns AND e.observed_time_ns = l.observed_time_ns AND "
        "e.service_name = l.service_name AND e.span_id IS NOT DISTINCT FROM l.span_id";
    Sql(store,
        "CREATE TABLE v5_logs AS SELECT l.*, e.exception_type, e.exception_message, e.exception_group FROM logs "
        "l LEFT JOIN log_exceptions e ON " +
            key + " ORDER BY l.rowid");
    Sql(store, "DROP TABLE logs");
    Sql(store, "ALTER TABLE v5_logs RENAME TO logs");
    Sql(store, "DROP TABLE log_exceptions");
    if (text_type == "TEXT") {
      Sql(store,
          "CREATE INDEX logs_exceptions ON logs (time_ns) WHERE exception_type IS NOT NULL OR exception_message IS NOT "
          "NULL");
    }
  }

  //! Each table holds the same columns and rows in both stores.
  static void ExpectSameRows(TelemetryStore* reference, TelemetryStore* store,
                             std::initializer_list<const char*> tables) {
    for (const char* table : tables) {
      SCOPED_TRACE(table);
      SqlResult want = Rows(reference, table), got = Rows(store, table);
      EXPECT_EQ(got.columns, want.columns);
      ASSERT_EQ(got.rows.size(), want.rows.size());
      for (size_t i = 0; i < want.rows.size(); ++i) ASSERT_EQ(got.rows[i], want.rows[i]) << "row " << i;
    }
  }

  //! Every row of a table, in a fixed order (by every column).
  static SqlResult Rows(TelemetryStore* store, const char* table) {
    Result<SqlResult> columns = store->ExecuteSql(std::string("SELECT * FROM ") + table + " LIMIT 0");
    EXPECT_TRUE(columns.ok()) << columns.status().ToString();
    std::string order;
    for (size_t c = 1; columns.ok() && c <= columns->columns.size(); ++c)
      order += (c > 1 ? ", " : "") + std::to_string(c);
    Result<SqlResult> rows = store->ExecuteSql(std::string("SELECT * FROM ") + table + " ORDER BY " + order);
    EXPECT_TRUE(rows.ok()) << rows.status().ToString();
    return rows.ok() ? std::move(rows).value() : SqlResult();
  }
};

TEST_P(SchemaMigrationTest, AVersion1DatabaseIsRefusedThenMigratedToTheIdsAFreshIngestGives) {
  const Data fresh = Decoded();
  ASSERT_GT(fresh.spans[0].resources.rows(), 1u);
  ASSERT_GT(fresh.metrics[0].series_rows(), 1u);

  // A fresh ingest into an empty directory: the reference.
  TempDir reference_dir;
  std::unique_ptr<TelemetryStore> reference = Open(reference_dir);
  ASSERT_NE(reference, nullptr);
  Write(reference.get(), fresh);

  // The same data as version 1 wrote it: its ids, no version table, and
  // spans from before the derived columns.
  Data old = fresh;
  for (SpanBatch& b : old.spans) UseVersion1Ids(&b.resources, &b.resource_id);
  for (LogBatch& b : old.logs) UseVersion1Ids(&b.resources, &b.resource_id);
  for (MetricBatch& b : old.metrics) UseVersion1Ids(&b);
  ASSERT_NE(old.metrics[0].series_id[0], fresh.metrics[0].series_id[0]);
  TempDir dir;
  {
    std::unique_ptr<TelemetryStore> store = Open(dir);
    ASSERT_NE(store, nullptr);
    Write(store.get(), old);
    Sql(store.get(), "DROP TABLE schema_version");
    Sql(store.get(), "DROP INDEX IF EXISTS spans_entry_stats");
    UseVersion3Columns(store.get());
    for (const char* column : {"has_exception", "is_entry", "endpoint"}) {
      Sql(store.get(), std::string("ALTER TABLE spans DROP COLUMN ") + column);
    }
    UseVersion2SeriesLayout(store.get());
    ASSERT_TRUE(store->Close().ok());
  }

  // Refused, with what to run.
  Result<std::unique_ptr<TelemetryStore>> refused = StoreRegistry::Instance().Open(GetParam(), Options(dir));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  const std::string command = "sightline migrate --data " + dir.str() + " --storage " + GetParam();
  EXPECT_NE(refused.status().message().find("schema version 1"), std::string::npos) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find(command), std::string::npos) << refused.status().ToString();

  Result<SchemaReport> migrated = MigrateStore(GetParam(), Options(dir));
  ASSERT_TRUE(migrated.ok()) << migrated.status().ToString();
  EXPECT_EQ(migrated->found_version, 1);
  EXPECT_EQ(migrated->version, schema::kCurrentVersion);
  ASSERT_EQ(migrated->applied.size(), 7u);  // and 3 -> 4 ... 7 -> 8
  EXPECT_NE(migrated->applied[0].find("series_ids of metric_series"), std::string::npos) << migrated->applied[0];
  EXPECT_NE(migrated->applied[1].find("rows of metric_resources"), std::string::npos) << migrated->applied[1];

  std::unique_ptr<TelemetryStore> store = Open(dir);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_report().found_version, schema::kCurrentVersion);
  ExpectSameRows(reference.get(), store.get(),
                 {"spans", "span_details", "span_resources", "logs", "log_exceptions", "log_resources",
                  "metric_resources", "metric_series", "metric_points", "schema_version"});
  // New data joins the migrated series and resources instead of adding rows.
  const uint64_t series = store->Stats().metric_series;
  Write(store.get(), fresh);
  EXPECT_EQ(store->Stats().metric_series, series);
  for (const char* table : {"span_resources", "log_resources", "metric_resources", "metric_series"}) {
    EXPECT_EQ(Rows(store.get(), table).rows, Rows(reference.get(), table).rows) << table;
  }
  EXPECT_TRUE(store->Close().ok());
  EXPECT_TRUE(reference->Close().ok());
}

//! The metric catalog and every series of it, as the dashboards read them.
std::string MetricAnswers(TelemetryStore* store, int64_t project) {
  Result<std::unique_ptr<TelemetryReader>> reader = store->AcquireReader(1000);
  EXPECT_TRUE(reader.ok()) << reader.status().ToString();
  if (!reader.ok()) return "";
  std::string out;
  Result<MetricCatalog> catalog = (*reader)->ListMetrics({project});
  EXPECT_TRUE(catalog.ok()) << catalog.status().ToString();
  for (const MetricCatalogRow& m : catalog.ok() ? *catalog : MetricCatalog{}) {
    out += m.name + " " + m.service + " " + m.unit + "\n";
    Result<MetricSeriesList> series = (*reader)->FindSeries({project, m.name});
    EXPECT_TRUE(series.ok()) << series.status().ToString();
    for (const MetricSeriesInfo& s : series.ok() ? *series : MetricSeriesList{}) {
      out += "  " + std::to_string(s.series_id) + " " + s.service + " " + s.attributes + "\n";
    }
  }
  return out;
}

TEST_P(SchemaMigrationTest, AVersion2DatabaseIsRefusedThenMigratedToWhatAFreshIngestGives) {
  const Data fresh = Decoded();
  TempDir reference_dir, dir;
  std::unique_ptr<TelemetryStore> reference = Open(reference_dir);
  ASSERT_NE(reference, nullptr);
  Write(reference.get(), fresh);
  const uint64_t resources = Rows(reference.get(), "metric_resources").rows.size();
  ASSERT_GT(resources, 1u);
  ASSERT_LT(resources, reference->Stats().metric_series);  // series share resources
  std::string before;
  {
    std::unique_ptr<TelemetryStore> store = Open(dir);
    ASSERT_NE(store, nullptr);
    Write(store.get(), fresh);
    before = MetricAnswers(store.get(), 2);
    UseVersion2SeriesLayout(store.get());
    UseVersion3Columns(store.get());
    Sql(store.get(), "UPDATE schema_version SET version = 2");
    ASSERT_TRUE(store->Close().ok());
  }
  ASSERT_NE(before.find("\n  "), std::string::npos) << before;

  Result<std::unique_ptr<TelemetryStore>> refused = StoreRegistry::Instance().Open(GetParam(), Options(dir));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("schema version 2"), std::string::npos) << refused.status().ToString();
  EXPECT_NE(refused.status().message().find("sightline migrate --data " + dir.str()), std::string::npos)
      << refused.status().ToString();

  Result<SchemaReport> migrated = MigrateStore(GetParam(), Options(dir));
  ASSERT_TRUE(migrated.ok()) << migrated.status().ToString();
  EXPECT_EQ(migrated->found_version, 2);
  ASSERT_EQ(migrated->applied.size(), 6u);  // and 3 -> 4 ... 7 -> 8
  EXPECT_NE(migrated->applied[0].find(std::to_string(resources) + " rows of metric_resources"), std::string::npos)
      << migrated->applied[0];

  std::unique_ptr<TelemetryStore> store = Open(dir);
  ASSERT_NE(store, nullptr);
  for (const char* table : {"metric_resources", "metric_series", "metric_points", "schema_version"}) {
    SCOPED_TRACE(table);
    SqlResult want = Rows(reference.get(), table), got = Rows(store.get(), table);
    EXPECT_EQ(got.columns, want.columns);
    EXPECT_EQ(got.rows, want.rows);
  }
  EXPECT_EQ(MetricAnswers(store.get(), 2), before);
  // New data finds the migrated resources and series.
  const uint64_t series = store->Stats().metric_series;
  Write(store.get(), fresh);
  EXPECT_EQ(store->Stats().metric_series, series);
  EXPECT_EQ(Rows(store.get(), "metric_resources").rows.size(), resources);
  EXPECT_TRUE(store->Close().ok());
  EXPECT_TRUE(reference->Close().ok());
}

TEST_P(SchemaMigrationTest, AVersion3DatabaseGainsExceptionGroups) {
  const Data fresh = Decoded();
  TempDir reference_dir, dir;
  std::unique_ptr<TelemetryStore> reference = Open(reference_dir);
  ASSERT_NE(reference, nullptr);
  Write(reference.get(), fresh);
  {
    std::unique_ptr<TelemetryStore> store = Open(dir);
    ASSERT_NE(store, nullptr);
    Write(store.get(), fresh);
    UseVersion3Columns(store.get());
    Sql(store.get(), "UPDATE schema_version SET version = 3");
    ASSERT_TRUE(store->Close().ok());
  }
  // Automatic but on SQLite, which rewrites logs at 5 -> 6: a plain open
  // migrates, and the spans get the groups ingest would have given them.
  if (GetParam() == "sqlite") {
    Result<std::unique_ptr<TelemetryStore>> refused = StoreRegistry::Instance().Open(GetParam(), Options(dir));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("going from 5 to 6"), std::string::npos) << refused.status().ToString();
    ASSERT_TRUE(MigrateStore(GetParam(), Options(dir)).ok());
  }
  std::unique_ptr<TelemetryStore> store = Open(dir);
  ASSERT_NE(store, nullptr);
  if (GetParam() != "sqlite") {
    EXPECT_EQ(store->schema_report().found_version, 3);
    // And 4 -> 5; 5 -> 6 moves no log exception (version 3 had none), and
    // 6 -> 7 the spans' details.
    ASSERT_EQ(store->schema_report().applied.size(), 5u);
    EXPECT_NE(store->schema_report().applied[0].find("exception_group"), std::string::npos);
    EXPECT_NE(store->schema_report().applied[2].find("values of 0 rows from logs"), std::string::npos)
        << store->schema_report().applied[2];
    EXPECT_NE(store->schema_report().applied[3].find("into span_details"), std::string::npos)
        << store->schema_report().applied[3];
  }
  Result<SqlResult> grouped = store->ExecuteSql("SELECT count(*) FROM span_details WHERE exception_group IS NOT NULL");
  ASSERT_TRUE(grouped.ok()) << grouped.status().ToString();
  ASSERT_EQ(grouped->rows.size(), 1u);
  EXPECT_NE(grouped->rows[0][0].value_or("0"), "0");  // the generator's spans record exceptions
  ExpectSameRows(reference.get(), store.get(), {"spans", "span_details", "logs", "log_exceptions", "schema_version"});
  EXPECT_TRUE(store->Close().ok());
  EXPECT_TRUE(reference->Close().ok());
}

TEST_P(SchemaMigrationTest, AVersion5DatabaseMovesItsLogExceptionsToTheirTable) {
  const Data fresh = WithLogExceptions(Decoded());
  TempDir reference_dir, dir;
  std::unique_ptr<TelemetryStore> reference = Open(reference_dir);
  ASSERT_NE(reference, nullptr);
  Write(reference.get(), fresh);
  const size_t exceptions = Rows(reference.get(), "log_exceptions").rows.size();
  ASSERT_GT(exceptions, 0u);  // the test data's logs record exceptions
  {
    std::unique_ptr<TelemetryStore> store = Open(dir);
    ASSERT_NE(store, nullptr);
    Write(store.get(), fresh);
    UseVersion5Logs(store.get(), GetParam() == "sqlite" ? "TEXT" : "VARCHAR");
    UseVersion6Spans(store.get());
    Sql(store.get(), "UPDATE schema_version SET version = 5");
    ASSERT_TRUE(store->Close().ok());
  }
  // SQLite rewrites logs to drop the columns: only `sightline migrate` does.
  if (GetParam() == "sqlite") {
    Result<std::unique_ptr<TelemetryStore>> refused = StoreRegistry::Instance().Open(GetParam(), Options(dir));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("sightline migrate --data " + dir.str()), std::string::npos)
        << refused.status().ToString();
    Result<SchemaReport> migrated = MigrateStore(GetParam(), Options(dir));
    ASSERT_TRUE(migrated.ok()) << migrated.status().ToString();
  }
  std::unique_ptr<TelemetryStore> store = Open(dir);
  ASSERT_NE(store, nullptr);
  if (GetParam() != "sqlite") {
    ASSERT_EQ(store->schema_report().applied.size(), 3u);  // and 6 -> 7, 7 -> 8
    EXPECT_NE(store->schema_report().applied[0].find("values of " + std::to_string(exceptions) + " rows from logs"),
              std::string::npos)
        << store->schema_report().applied[0];
  }
  ExpectSameRows(reference.get(), store.get(), {"logs", "log_exceptions", "spans", "span_details", "schema_version"});
  EXPECT_TRUE(store->Close().ok());
  EXPECT_TRUE(reference->Close().ok());
}

TEST_P(SchemaMigrationTest, AVersion6DatabaseMovesItsSpanDetailsToTheirTable) {
  const Data fresh = Decoded();
  TempDir reference_dir, dir;
  std::unique_ptr<TelemetryStore> reference = Open(reference_dir);
  ASSERT_NE(reference, nullptr);
  Write(reference.get(), fresh);
  const size_t details = Rows(reference.get(), "span_details").rows.size();
  ASSERT_GT(details, 0u);  // the generator's error roots have a status message and an exception
  ASSERT_LT(details, Rows(reference.get(), "spans").rows.size());
  {
    std::unique_ptr<TelemetryStore> store = Open(dir);
    ASSERT_NE(store, nullptr);
    Write(store.get(), fresh);
    UseVersion6Spans(store.get());
    Sql(store.get(), "UPDATE schema_version SET version = 6");
    ASSERT_TRUE(store->Close().ok());
  }
  // SQLite rewrites spans to drop the columns: only `sightline migrate` does.
  if (GetParam() == "sqlite") {
    Result<std::unique_ptr<TelemetryStore>> refused = StoreRegistry::Instance().Open(GetParam(), Options(dir));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("going from 6 to 7"), std::string::npos) << refused.status().ToString();
    Result<SchemaReport> migrated = MigrateStore(GetParam(), Options(dir));
    ASSERT_TRUE(migrated.ok()) << migrated.status().ToString();
  }
  std::unique_ptr<TelemetryStore> store = Open(dir);
  ASSERT_NE(store, nullptr);
  if (GetParam() != "sqlite") {
    ASSERT_EQ(store->schema_report().applied.size(), 2u);  // and 7 -> 8, which finds nothing to copy
    EXPECT_NE(store->schema_report().applied[0].find("values of " + std::to_string(details) + " rows from spans"),
              std::string::npos)
        << store->schema_report().applied[0];
  }
  ExpectSameRows(reference.get(), store.get(), {"spans", "span_details", "schema_version"});
  EXPECT_TRUE(store->Close().ok());
  EXPECT_TRUE(reference->Close().ok());
}

TEST_P(SchemaMigrationTest, AVersion7DatabaseCopiesEachSpansServiceNameAndDurationIntoItsDetails) {
  const Data fresh = Decoded();
  TempDir reference_dir, dir;
  std::unique_ptr<TelemetryStore> reference = Open(reference_dir);
  ASSERT_NE(reference, nullptr);
  // Twice: a span stored twice has two spans rows and two detail rows.
  Write(reference.get(), fresh);
  Write(reference.get(), fresh);
  const size_t details = Rows(reference.get(), "span_details").rows.size();
  ASSERT_GT(details, 0u);
  {
    std::unique_ptr<TelemetryStore> store = Open(dir);
    ASSERT_NE(store, nullptr);
    Write(store.get(), fresh);
    Write(store.get(), fresh);
    UseVersion7Details(store.get());
    Sql(store.get(), "UPDATE schema_version SET version = 7");
    ASSERT_TRUE(store->Close().ok());
  }
  // Automatic on both engines: it rewrites only span_details.
  std::unique_ptr<TelemetryStore> store = Open(dir);
  ASSERT_NE(store, nullptr);
  ASSERT_EQ(store->schema_report().applied.size(), 1u);
  EXPECT_NE(store->schema_report().applied[0].find("duration of " + std::to_string(details) + " spans"),
            std::string::npos)
      << store->schema_report().applied[0];
  ExpectSameRows(reference.get(), store.get(), {"spans", "span_details", "schema_version"});
  EXPECT_TRUE(store->Close().ok());
  EXPECT_TRUE(reference->Close().ok());
}

TEST_P(SchemaMigrationTest, MigrateFromVersion2RefusesANullResource) {
  TempDir dir;
  {
    std::unique_ptr<TelemetryStore> store = Open(dir);
    ASSERT_NE(store, nullptr);
    Write(store.get(), Decoded());
    UseVersion2SeriesLayout(store.get());
    Sql(store.get(), "UPDATE schema_version SET version = 2");
    Sql(store.get(), "UPDATE metric_series SET scope_name = NULL WHERE project_id = 2");
    ASSERT_TRUE(store->Close().ok());
  }
  Result<SchemaReport> migrated = MigrateStore(GetParam(), Options(dir));
  ASSERT_FALSE(migrated.ok());
  EXPECT_NE(migrated.status().message().find("metric_series.scope_name is NULL"), std::string::npos)
      << migrated.status().ToString();
  Result<std::unique_ptr<TelemetryStore>> refused = StoreRegistry::Instance().Open(GetParam(), Options(dir));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("schema version 2"), std::string::npos) << refused.status().ToString();
}

// Two keyed rows with one identity under different old ids (which version 1
// never wrote, but a migration must not multiply) become one row, and the
// rows that referenced either reference it.
TEST_P(SchemaMigrationTest, TwoOldIdsOfOneIdentityBecomeOneRow) {
  const Data fresh = Decoded();
  TempDir reference_dir, dir;
  std::unique_ptr<TelemetryStore> reference = Open(reference_dir);
  ASSERT_NE(reference, nullptr);
  Write(reference.get(), fresh);
  {
    std::unique_ptr<TelemetryStore> store = Open(dir);
    ASSERT_NE(store, nullptr);
    Write(store.get(), fresh);
    Sql(store.get(),
        "INSERT INTO span_resources SELECT project_id, resource_id + 1, resource_attributes, scope_name, "
        "scope_version, scope_attributes FROM span_resources");
    Sql(store.get(), "UPDATE spans SET resource_id = resource_id + 1 WHERE span_id % 2 = 0");
    UseVersion6Spans(store.get());
    UseVersion2SeriesLayout(store.get());
    Sql(store.get(), "UPDATE schema_version SET version = 1");
    ASSERT_TRUE(store->Close().ok());
  }
  Result<SchemaReport> migrated = MigrateStore(GetParam(), Options(dir));
  ASSERT_TRUE(migrated.ok()) << migrated.status().ToString();
  std::unique_ptr<TelemetryStore> store = Open(dir);
  ASSERT_NE(store, nullptr);
  for (const char* table : {"spans", "span_resources"}) {
    EXPECT_EQ(Rows(store.get(), table).rows, Rows(reference.get(), table).rows) << table;
  }
  EXPECT_TRUE(store->Close().ok());
  EXPECT_TRUE(reference->Close().ok());
}

TEST_P(SchemaMigrationTest, MigrateRefusesWhenAnIdInputIsMissing) {
  TempDir dir;
  Data old = Decoded();
  for (MetricBatch& b : old.metrics) UseVersion1Ids(&b);
  {
    std::unique_ptr<TelemetryStore> store = Open(dir);
    ASSERT_NE(store, nullptr);
    Write(store.get(), old);
    UseVersion6Spans(store.get());
    UseVersion2SeriesLayout(store.get());
    Sql(store.get(), "UPDATE schema_version SET version = 1");
    Sql(store.get(), "UPDATE metric_series SET unit = NULL WHERE project_id = 2");
    ASSERT_TRUE(store->Close().ok());
  }
  Result<SchemaReport> migrated = MigrateStore(GetParam(), Options(dir));
  ASSERT_FALSE(migrated.ok());
  EXPECT_NE(migrated.status().message().find("metric_series.unit is NULL"), std::string::npos)
      << migrated.status().ToString();
  // Nothing changed: still version 1, still refused.
  Result<std::unique_ptr<TelemetryStore>> refused = StoreRegistry::Instance().Open(GetParam(), Options(dir));
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("schema version 1"), std::string::npos) << refused.status().ToString();
}

TEST_P(SchemaMigrationTest, MigrateOnACurrentDatabaseChangesNothing) {
  TempDir dir;
  {
    std::unique_ptr<TelemetryStore> store = Open(dir);
    ASSERT_NE(store, nullptr);
    Write(store.get(), Decoded());
    ASSERT_TRUE(store->Close().ok());
  }
  Result<SchemaReport> migrated = MigrateStore(GetParam(), Options(dir));
  ASSERT_TRUE(migrated.ok()) << migrated.status().ToString();
  EXPECT_EQ(migrated->found_version, schema::kCurrentVersion);
  EXPECT_TRUE(migrated->applied.empty());
}

INSTANTIATE_TEST_SUITE_P(Engines, SchemaMigrationTest, ::testing::Values("duckdb", "sqlite"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace sightline
