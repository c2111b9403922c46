// The DuckDB row reader (data chunks, duckdb_fetch_chunk): text keeps every
// byte, NULL is NULL, and each conversion agrees with DuckDB's own per-value
// API (the deprecated duckdb_value_*), which serves as the reference here.

#include "storage/duckdb/duckdb_reader.h"

#include <duckdb.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace sightline {
namespace {

//! An in-memory database with one connection.
class DuckDbReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(duckdb_open(nullptr, &db_), DuckDBSuccess);
    ASSERT_EQ(duckdb_connect(db_, &conn_), DuckDBSuccess);
  }
  void TearDown() override {
    reader_.reset();
    if (conn_ != nullptr) duckdb_disconnect(&conn_);
    duckdb_close(&db_);
  }

  void Exec(const std::string& sql) {
    duckdb_result r;
    ASSERT_EQ(duckdb_query(conn_, sql.c_str(), &r), DuckDBSuccess) << sql << ": " << duckdb_result_error(&r);
    duckdb_destroy_result(&r);
  }

  //! A ReadConnection on a second connection (the reader owns it).
  ReadConnection& Reader() {
    if (reader_ == nullptr) {
      duckdb_connection conn = nullptr;
      EXPECT_EQ(duckdb_connect(db_, &conn), DuckDBSuccess);
      reader_ = NewDuckDbReader(conn);
    }
    return *reader_;
  }

  duckdb_database db_ = nullptr;
  duckdb_connection conn_ = nullptr;
  std::unique_ptr<ReadConnection> reader_;
};

TEST_F(DuckDbReaderTest, TextKeepsEmbeddedNulAndLongStringsAndNullIsNull) {
  Exec("CREATE TABLE t (id BIGINT, s VARCHAR)");
  const std::string with_nul("a\0b", 3);
  const std::string long_text = "a string longer than twelve bytes, stored out of line: ✓";
  // Inserted through bound parameters, so the NUL byte reaches the table.
  for (const auto& [id, text] : std::vector<std::pair<int64_t, std::string>>{{1, with_nul}, {2, long_text}}) {
    Status s = Reader().Query("INSERT INTO t VALUES (?, ?)", {id, text}, [](const RowView&) {});
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  Exec("INSERT INTO t VALUES (3, NULL), (NULL, '')");

  std::vector<std::optional<int64_t>> ids;
  std::vector<std::optional<std::string>> texts;
  Status s = Reader().Query("SELECT id, s FROM t ORDER BY id NULLS LAST", {}, [&](const RowView& r) {
    ids.push_back(r.IsNull(0) ? std::nullopt : std::optional<int64_t>(r.GetInt(0)));
    texts.push_back(r.IsNull(1) ? std::nullopt : std::optional<std::string>(r.GetString(1)));
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(ids, (std::vector<std::optional<int64_t>>{1, 2, 3, std::nullopt}));
  ASSERT_EQ(texts.size(), 4u);
  EXPECT_EQ(texts[0], with_nul);
  EXPECT_EQ(texts[0]->size(), 3u);
  EXPECT_EQ(texts[1], long_text);
  EXPECT_EQ(texts[2], std::nullopt);
  EXPECT_EQ(texts[3], std::string());  // '' is not NULL
}

TEST_F(DuckDbReaderTest, ReadsEveryRowAcrossChunks) {
  // Several data chunks (2,048 rows each) with NULLs scattered through them.
  Exec("CREATE TABLE t AS SELECT i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'row ' || i END AS s FROM range(10000) r(i)");
  int64_t rows = 0, sum = 0, nulls = 0;
  bool texts_match = true;
  Status s = Reader().Query("SELECT i, s FROM t ORDER BY i", {}, [&](const RowView& r) {
    int64_t i = r.GetInt(0);
    sum += i;
    ++rows;
    if (r.IsNull(1)) {
      ++nulls;
      texts_match &= i % 7 == 0;
    } else {
      texts_match &= r.GetString(1) == "row " + std::to_string(i);
    }
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(rows, 10000);
  EXPECT_EQ(sum, 10000 * 9999 / 2);
  EXPECT_EQ(nulls, (9999 / 7) + 1);
  EXPECT_TRUE(texts_match);
}

// The types dashboard SQL produces, read through the chunk reader and through
// DuckDB's per-value API: the same integers, doubles and (for everything but
// floating point, whose text the reader writes in shortest form) the same text.
TEST_F(DuckDbReaderTest, ConversionsAgreeWithDuckDbsOwnPerValueApi) {
  const std::string sql =
      "SELECT 42::TINYINT, -7::SMALLINT, 2147483647::INTEGER, -9223372036854775807::BIGINT, 255::UTINYINT, "
      "4294967295::UINTEGER, 9223372036854775807::UBIGINT, sum(x), sum(x) * 3, avg(x), 0.5 * 3, -2.25::DECIMAL(10,2), "
      "0.05::DECIMAL(4,3), 2.5::DECIMAL(4,1), -2.5::DECIMAL(4,1), 12345678901234567.25::DECIMAL(38,2), true, false, "
      "2.5::DOUBLE, -2.5::DOUBLE, 1.5::FLOAT, "
      "'17', '2.75', NULL, quantile_cont(x, 0.5) "
      "FROM (VALUES (1::BIGINT), (2), (4)) v(x)";
  duckdb_result reference;
  ASSERT_EQ(duckdb_query(conn_, sql.c_str(), &reference), DuckDBSuccess) << duckdb_result_error(&reference);
  const idx_t columns = duckdb_column_count(&reference);
  int rows = 0;
  Status s = Reader().Query(sql, {}, [&](const RowView& r) {
    ++rows;
    for (idx_t c = 0; c < columns; ++c) {
      int col = static_cast<int>(c);
      SCOPED_TRACE(duckdb_column_name(&reference, c));
      ASSERT_EQ(r.IsNull(col), duckdb_value_is_null(&reference, c, 0));
      if (r.IsNull(col)) continue;
      EXPECT_EQ(r.GetInt(col), duckdb_value_int64(&reference, c, 0));
      EXPECT_DOUBLE_EQ(r.GetDouble(col), duckdb_value_double(&reference, c, 0));
      duckdb_type type = duckdb_column_type(&reference, c);
      char* text = duckdb_value_varchar(&reference, c, 0);
      if (type == DUCKDB_TYPE_DOUBLE || type == DUCKDB_TYPE_FLOAT) {
        EXPECT_EQ(std::stod(r.GetString(col)), std::stod(text));
      } else {
        EXPECT_EQ(r.GetString(col), text);
      }
      duckdb_free(text);
    }
  });
  duckdb_destroy_result(&reference);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(rows, 1);
}

TEST_F(DuckDbReaderTest, AColumnTypeItCannotConvertFailsBeforeAnyRow) {
  int rows = 0;
  Status s = Reader().Query("SELECT 1 AS one, DATE '2024-01-02' AS day", {}, [&](const RowView&) { ++rows; });
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("day"), std::string::npos) << s.ToString();
  EXPECT_EQ(rows, 0);
}

}  // namespace
}  // namespace sightline
