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
//! memory_limit (else DefaultDuckDbMemoryLimit()), threads and
//! checkpoint_threshold when set. Fails with IoError when the directory or
//! database cannot be opened, InvalidArgument for a bad setting value.
Result<std::unique_ptr<TelemetryStore>> OpenDuckDbStore(const StoreOptions& options);

//! DuckDB's own default memory_limit is 80% of RAM, and it goes past its limit
//! by what it keeps outside the buffer manager (16 bytes per row a transaction
//! deletes, until the next checkpoint), while the rest of the process needs its own
//! share (--max-inflight-bytes, decoded batches, query results). A logs fill
//! under the 80% default was killed for want of memory at 341M records.
inline constexpr uint64_t kDefaultMemoryLimitPercent = 60;

//! kDefaultMemoryLimitPercent of UsableMemoryBytes() (RAM, or the cgroup's
//! limit) as a DuckDB setting ("14745MiB"); "" (DuckDB's default) when the
//! memory is unknown.
std::string DefaultDuckDbMemoryLimit();

}  // namespace sightline
