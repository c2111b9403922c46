#pragma once

// The SQLite telemetry engine: row store, one file (telemetry.sqlite plus
// telemetry.sqlite-wal) in StoreOptions::data_dir, WAL mode with
// synchronous=NORMAL. docs/STORAGE.md holds the schema and the durability
// contract.

#include <memory>

#include "common/status.h"
#include "storage/telemetry_store.h"

namespace sightline {

//! Opens (creating if needed) the SQLite store in options.data_dir. The DuckDB
//! settings in options are ignored. Fails with IoError when the directory or
//! database cannot be opened.
Result<std::unique_ptr<TelemetryStore>> OpenSqliteStore(const StoreOptions& options);

}  // namespace sightline
