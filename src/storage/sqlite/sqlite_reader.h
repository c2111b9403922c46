#pragma once

#include <memory>
#include <string>

#include "common/status.h"
#include "storage/telemetry_store.h"

namespace sightline {

//! Opens a read-only SQLite connection on `path` (WAL readers never block the
//! writer). Query() prepares and binds; Interrupt() is sqlite3_interrupt.
Result<std::unique_ptr<ReadConnection>> OpenSqliteReader(const std::string& path);

}  // namespace sightline
