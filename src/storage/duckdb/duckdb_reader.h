#pragma once

#include <duckdb.h>

#include <memory>

#include "storage/sql/sql_connection.h"

namespace sightline {

//! A DuckDB read connection (owns it). Query() uses a prepared statement
//! with bound parameters; Interrupt() is duckdb_interrupt.
std::unique_ptr<ReadConnection> NewDuckDbReader(duckdb_connection conn);
//! The same over a connection the caller keeps owning (a writer's, which
//! also runs its statements through it); it must outlive the result.
std::unique_ptr<ReadConnection> BorrowDuckDbConnection(duckdb_connection conn);

//! Calls on_row for every row of `result` (not owned; the caller destroys
//! it), reading it a data chunk at a time with duckdb_fetch_chunk: values come
//! straight from the chunk's vectors, text with its length (embedded NUL bytes
//! are kept), NULL from the validity masks. Columns may be booleans, integers
//! (up to HUGEINT), DECIMAL, FLOAT, DOUBLE, VARCHAR or BLOB; the RowView
//! converts between them as DuckDB's casts do (a float to an integer rounds
//! to nearest, ties to even), except that an integer beyond int64 is clamped
//! and a float's text is the shortest that reads back as the same value. Any
//! other column type fails with Internal before the first row.
Status ForEachDuckDbRow(duckdb_result* result, const RowCallback& on_row);

}  // namespace sightline
