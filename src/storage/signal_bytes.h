#pragma once

// What each signal's rows take on disk, for deep health and the read probe
// (docs/API.md "bytes per row"). A signal's bytes are those of its main table
// and of every table named for it: spans: spans, span_*,
// exception_*; logs: logs, log_*; metrics: metric_* (keyed tables, indexes,
// rollups). Measured through TelemetryStore::ExecuteSql, so it runs on the
// engine's console connection, never on the dashboards' read pool.
//
// DuckDB: the distinct blocks of the signal's tables in pragma_storage_info
// (a block shared by two of them counts once) x the block size, over the
// rows already checkpointed (rows still only in the WAL are in neither);
// `stored_rows` is the main table's checkpointed rows. SQLite: the pages of
// the signal's tables and their indexes in dbstat (pgsize), over every row.
// Other engines, or SQLite built without dbstat: nullopt.
//
// The cost grows with the data (DuckDB: one row per column segment; SQLite:
// dbstat reads every page): call it at most every so often (the server caches
// it, docs/API.md), never per dashboard request.

#include <array>
#include <cstdint>
#include <optional>

#include "storage/telemetry_store.h"

namespace sightline {

struct SignalBytes {
  uint64_t bytes = 0;        // on disk, the signal's tables and indexes
  uint64_t stored_rows = 0;  // the main table's rows those bytes hold
  //! bytes / stored_rows; 0 when no row is stored yet.
  double per_row() const { return stored_rows > 0 ? static_cast<double>(bytes) / static_cast<double>(stored_rows) : 0; }
};

//! The signal a table's bytes count for, or nullopt (schema_version, ...).
std::optional<Signal> SignalOfTable(std::string_view table);

//! Per signal (spans, logs, metrics); nullopt where the engine cannot say.
std::optional<std::array<SignalBytes, kSignalCount>> MeasureSignalBytes(TelemetryStore& store);

}  // namespace sightline
