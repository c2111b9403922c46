#pragma once

// Rows into a DuckDB appender a data chunk at a time, the one way the DuckDB
// engine appends: value by value (duckdb_append_int64 and the others, then
// duckdb_appender_end_row) costs several times more a row
// (BM_AppendLogTokens: 513 against 158 instructions a row).

#include <duckdb.h>

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace sightline {

//! One data chunk with the column types of the rows it carries, reused for
//! every duckdb_vector_size() rows. Not thread-safe.
class AppenderChunk {
 public:
  explicit AppenderChunk(std::span<const duckdb_type> types) {
    std::vector<duckdb_logical_type> logical;
    logical.reserve(types.size());
    for (duckdb_type t : types) logical.push_back(duckdb_create_logical_type(t));
    chunk_ = duckdb_create_data_chunk(logical.data(), logical.size());
    for (duckdb_logical_type& t : logical) duckdb_destroy_logical_type(&t);
  }
  ~AppenderChunk() { duckdb_destroy_data_chunk(&chunk_); }
  AppenderChunk(const AppenderChunk&) = delete;
  AppenderChunk& operator=(const AppenderChunk&) = delete;

  duckdb_vector vector(size_t column) const { return duckdb_data_chunk_get_vector(chunk_, column); }
  template <typename T>
  T* data(size_t column) const {
    return static_cast<T*>(duckdb_vector_get_data(vector(column)));
  }

  //! Appends rows [0, rows) to appender: fill(begin, n) writes rows
  //! [begin, begin + n) into the first n slots of every column. `table`
  //! names the rows' table in an error.
  template <typename Fill>
  Status Append(duckdb_appender appender, size_t rows, std::string_view table, Fill&& fill) {
    const size_t capacity = duckdb_vector_size();
    for (size_t begin = 0; begin < rows; begin += capacity) {
      const size_t n = std::min(capacity, rows - begin);
      duckdb_data_chunk_reset(chunk_);
      fill(begin, n);
      duckdb_data_chunk_set_size(chunk_, n);
      if (duckdb_append_data_chunk(appender, chunk_) != DuckDBSuccess) {
        const char* error = duckdb_appender_error(appender);
        return Status::IoError("duckdb append to " + std::string(table) + ": " +
                               (error != nullptr ? error : "unknown error"));
      }
    }
    return Status::Ok();
  }

 private:
  duckdb_data_chunk chunk_ = nullptr;
};

}  // namespace sightline
