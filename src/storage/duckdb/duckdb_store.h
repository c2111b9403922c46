#pragma once

// The DuckDB telemetry engine: columnar, one file (telemetry.duckdb plus its
// WAL telemetry.duckdb.wal) in StoreOptions::data_dir. docs/STORAGE.md holds
// the schema and the durability contract.

#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "storage/telemetry_store.h"

namespace sightline {

//! Opens (creating if needed) the DuckDB store in options.data_dir. Applies
//! memory_limit (else DefaultDuckDbMemoryLimit(), common/memory_size.h), threads and
//! checkpoint_threshold when set. Fails with IoError when the directory or
//! database cannot be opened, InvalidArgument for a bad setting value.
Result<std::unique_ptr<TelemetryStore>> OpenDuckDbStore(const StoreOptions& options);

}  // namespace sightline
