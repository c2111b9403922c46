#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/sql/sql_connection.h"

struct sqlite3;

namespace sightline {

//! Runs one statement on `db` (not owned) and calls on_row for each row it
//! returns; text is read with its length.
Status ForEachSqliteRow(sqlite3* db, const std::string& sql, const RowCallback& on_row);

//! Runs one statement on `db` (not owned) with `params` bound in order and
//! calls on_row for each row; Cancelled when interrupted.
Status QuerySqlite(sqlite3* db, const std::string& sql, const std::vector<SqlParam>& params, const RowCallback& on_row);

//! Opens a read-only SQLite connection on `path` (WAL readers never block the
//! writer). Query() prepares and binds; Interrupt() is sqlite3_interrupt.
Result<std::unique_ptr<ReadConnection>> OpenSqliteReader(const std::string& path);

}  // namespace sightline
