#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "storage/sql/sql_connection.h"

namespace sightline {

//! Opens a read-only SQLite connection on `path` (WAL readers never block the
//! writer). Query() prepares and binds; Interrupt() is sqlite3_interrupt.
Result<std::unique_ptr<ReadConnection>> OpenSqliteReader(const std::string& path);

}  // namespace sightline
