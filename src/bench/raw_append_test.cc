#include "bench/raw_append.h"

#include <duckdb.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "bench/load_generator.h"
#include "storage/schema.h"

// The bare-engine comparison: every generated row lands in plain tables whose
// columns are the server's (checked against the server's schema, which this
// test file may link; the bench itself does not), in the requested number of
// transactions.

namespace sightline::bench {
namespace {

// One difference is kept on purpose, so raw numbers stay comparable across
// versions: raw metrics keep schema version 2's layout, each metric_series
// row with its resource's texts and no metric_resources table (the server
// stores those once per resource since version 3; docs/STORAGE.md).
TEST(RawAppend, TablesHaveTheServersColumnsInOrder) {
  auto server = schema::AllTableColumns();
  // Nor log_exceptions: the generator's logs carry no exception.
  std::erase_if(server, [](const auto& t) {
    return std::string(t.first) == schema::kMetricResourcesTable || std::string(t.first) == schema::kLogExceptionsTable;
  });
  for (auto& [name, columns] : server) {
    if (std::string(name) != schema::kMetricSeriesTable) continue;
    auto id = std::find_if(columns.begin(), columns.end(),
                           [](const schema::Column& c) { return std::string(c.name) == "resource_id"; });
    ASSERT_NE(id, columns.end());
    const schema::Column text{"", schema::ColumnType::kText, schema::SourceKind::kText};
    std::vector<schema::Column> texts(3, text);
    texts[0].name = "resource_attributes";
    texts[1].name = "scope_name";
    texts[2].name = "scope_version";
    id = columns.erase(id);
    columns.insert(id, texts.begin(), texts.end());
  }
  ASSERT_EQ(RawTables().size(), server.size());
  for (const RawTable& raw : RawTables()) {
    SCOPED_TRACE(raw.name);
    const std::vector<schema::Column>* expected = nullptr;
    for (const auto& [name, columns] : server) {
      if (std::string(name) == raw.name) expected = &columns;
    }
    ASSERT_NE(expected, nullptr);
    ASSERT_EQ(raw.columns.size(), expected->size());
    for (size_t i = 0; i < raw.columns.size(); ++i) {
      EXPECT_EQ(std::string(raw.columns[i].name), (*expected)[i].name);
      const schema::ColumnType t = (*expected)[i].type;
      EXPECT_EQ(raw.columns[i].type, t == schema::ColumnType::kInt64    ? RawType::kInt64
                                     : t == schema::ColumnType::kDouble ? RawType::kDouble
                                                                        : RawType::kText)
          << raw.columns[i].name;
    }
  }
}

//! What the generator sent in requests [0, n) of a pool: per signal, rows;
//! for spans also roots and errors.
struct Sent {
  uint64_t spans = 0, roots = 0, errors = 0, logs = 0, with_trace = 0, points = 0;
};

Sent Tally(const PayloadPool& pool, uint64_t n) {
  Sent s;
  const LoadGenerator& gen = pool.generator();
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t k = pool.PayloadIndexOf(i);
    switch (pool.SignalOf(i)) {
      case Signal::kSpans:
        for (const SpanRow& r : gen.Spans(k).rows) {
          ++s.spans;
          s.roots += IsZero(r.parent_span_id) ? 1 : 0;
          s.errors += r.status_code == 2 ? 1 : 0;
        }
        break;
      case Signal::kLogs:
        for (const LogRow& r : gen.Logs(k).rows) {
          ++s.logs;
          s.with_trace += r.has_trace ? 1 : 0;
        }
        break;
      case Signal::kMetrics: s.points += gen.Metrics(k).rows.size(); break;
    }
  }
  return s;
}

//! One integer from a query, through each engine's own API.
int64_t QueryInt(const std::string& engine, const std::string& dir, const std::string& sql) {
  int64_t v = -1;
  if (engine == "sqlite") {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open_v2((dir + "/raw.sqlite").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
    sqlite3_stmt* stmt = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
    if (sqlite3_step(stmt) == SQLITE_ROW) v = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    sqlite3_close_v2(db);
  } else {
    duckdb_database db = nullptr;
    duckdb_connection conn = nullptr;
    EXPECT_EQ(duckdb_open((dir + "/raw.duckdb").c_str(), &db), DuckDBSuccess);
    EXPECT_EQ(duckdb_connect(db, &conn), DuckDBSuccess);
    duckdb_result result;
    EXPECT_EQ(duckdb_query(conn, sql.c_str(), &result), DuckDBSuccess) << duckdb_result_error(&result);
    v = duckdb_value_int64(&result, 0, 0);
    duckdb_destroy_result(&result);
    duckdb_disconnect(&conn);
    duckdb_close(&db);
  }
  return v;
}

class RawAppendOnEngine : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "sightline-raw-test-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_P(RawAppendOnEngine, AppendsEverySentRowInTheServersCommitCount) {
  GeneratorOptions g;
  g.batch = 500;  // an SDK's shape: one service per request
  g.seed = 5;
  g.base_time_ns = 1700000000ll * 1000000000ll;
  LoadGenerator gen(g);
  PayloadPool pool(&gen, {Signal::kSpans, Signal::kLogs, Signal::kMetrics});
  constexpr uint64_t kRequests = 9;  // 3 per signal, services 0, 1 and 2
  RawAppendOptions o;
  o.engine = GetParam();
  o.engine_options.data_dir = dir_ + "/raw";
  o.commits = {2, 2, 3};
  auto r = RunRawAppend(o, pool, kRequests);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (Signal s : {Signal::kSpans, Signal::kLogs, Signal::kMetrics}) {
    const RawSignalResult& x = r->signals[static_cast<int>(s)];
    EXPECT_EQ(x.rows, 1500u) << SignalName(s);
    EXPECT_EQ(x.batches, 3u) << SignalName(s);
    EXPECT_EQ(x.groups, s == Signal::kMetrics ? 3u : 2u) << SignalName(s);
    EXPECT_GT(x.write_seconds, 0) << SignalName(s);
  }

  const Sent sent = Tally(pool, kRequests);
  const std::string dir = o.engine_options.data_dir, e = GetParam();
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM spans"), static_cast<int64_t>(sent.spans));
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM spans WHERE parent_span_id IS NULL"),
            static_cast<int64_t>(sent.roots));
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM spans WHERE is_entry = 1"), static_cast<int64_t>(sent.roots));
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM spans WHERE status_code = 2 AND has_exception = 1"),
            static_cast<int64_t>(sent.errors));
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM spans WHERE duration_ns <> end_time_ns - start_time_ns"), 0);
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM span_resources"), 3);
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM logs"), static_cast<int64_t>(sent.logs));
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM logs WHERE trace_id_high IS NOT NULL"),
            static_cast<int64_t>(sent.with_trace));
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM log_resources"), 3);
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM metric_points"), static_cast<int64_t>(sent.points));
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM metric_series"), 60);  // 20 series x 3 services
  EXPECT_EQ(QueryInt(e, dir, "SELECT COUNT(*) FROM metric_points WHERE value IS NULL AND bucket_counts IS NULL"), 0);
}

INSTANTIATE_TEST_SUITE_P(Engines, RawAppendOnEngine, ::testing::Values("duckdb", "sqlite"));

}  // namespace
}  // namespace sightline::bench
