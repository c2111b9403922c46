#pragma once

// The engines of `bench ingest --raw`, used directly through their own C
// APIs and owned by the bench (no Sightline storage code): plain tables
// without indexes, DuckDB appending data chunks through an appender, SQLite
// binding prepared INSERTs under the production pragmas
// (common/sqlite_pragmas.h), ClickHouse taking gzip RowBinary INSERTs over
// its HTTP interface (plain MergeTree tables). One transaction per Append()
// (ClickHouse, which has none: one INSERT per table). What the server
// adds on top — its writer queue, its schema's indexes (SQLite), resource and
// series deduplication against what is stored — is exactly what the raw
// figure leaves out.
//
// Lifecycle: Open(), then NewWriter() per thread, Append() on each writer
// from its own thread, destroy the writers, Close() (a checkpoint).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sightline::bench {

enum class RawType { kInt64, kDouble, kText };

struct RawColumn {
  const char* name;
  RawType type;
};

struct RawTable {
  const char* name;
  std::span<const RawColumn> columns;
};

//! Rows of one table, column-major, with NULLs. Built a row at a time: one
//! Int/Double/Text/Null per column in column order, then EndRow(). Text cells
//! are copied. Not thread-safe.
class RawRows {
 public:
  explicit RawRows(const RawTable& table);

  void Int(int64_t v);
  void Double(double v);
  void Text(std::string_view v);
  void Null();
  //! REQUIRES: one value for every column since the last EndRow().
  void EndRow();
  void Clear();

  const RawTable& table() const { return *table_; }
  size_t rows() const { return rows_; }
  bool IsNull(size_t column, size_t row) const { return columns_[column].nulls[row] != 0; }
  int64_t IntAt(size_t column, size_t row) const { return columns_[column].ints[row]; }
  double DoubleAt(size_t column, size_t row) const { return columns_[column].doubles[row]; }
  std::string_view TextAt(size_t column, size_t row) const;

 private:
  struct Column {
    std::vector<int64_t> ints;
    std::vector<double> doubles;
    std::string text;
    std::vector<uint32_t> text_ends;
    std::vector<uint8_t> nulls;
  };
  Column& Next(RawType expected);

  const RawTable* table_;
  std::vector<Column> columns_;
  size_t next_ = 0;  // column the next value goes to
  size_t rows_ = 0;
};

struct RawEngineOptions {
  std::string data_dir;  // created; must not hold a database yet
  // DuckDB settings, as the spawned server's --duckdb-* flags give them.
  //! "" = Sightline's default, DefaultDuckDbMemoryLimit() (README.md, configuration).
  std::string duckdb_memory_limit;
  //! Sightline's default (README.md, configuration); "" = DuckDB's 16MB.
  std::string duckdb_checkpoint_threshold = "256MB";
  int duckdb_threads = 0;  // 0 = DuckDB's default
  // ClickHouse: the server (http://127.0.0.1:PORT) and a database to create.
  std::string clickhouse_url;
  std::string clickhouse_database = "sightline_raw";
};

//! One thread's connection. Not thread-safe.
class RawWriter {
 public:
  virtual ~RawWriter() = default;
  //! One transaction appending every part's rows (parts without rows are skipped).
  virtual Status Append(std::span<const RawRows* const> parts) = 0;
};

class RawEngine {
 public:
  //! engine: "duckdb", "sqlite" or "clickhouse"; creates the tables.
  static Result<std::unique_ptr<RawEngine>> Open(const std::string& engine, const RawEngineOptions& options,
                                                 std::span<const RawTable> tables);
  virtual ~RawEngine() = default;

  //! Thread-safe.
  virtual Result<std::unique_ptr<RawWriter>> NewWriter() = 0;
  //! Checkpoints and closes. REQUIRES: every writer destroyed.
  virtual Status Close() = 0;
};

}  // namespace sightline::bench
