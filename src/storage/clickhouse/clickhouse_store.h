#pragma once

// The ClickHouse telemetry engine: the tables live in a ClickHouse server
// reached over its HTTP interface, or in an in-process one (a chdb:// URL;
// transport.h), StoreOptions::clickhouse_url, database clickhouse_database. docs/STORAGE.md, "ClickHouse", holds the
// schema and what an acknowledged write means there.

#include <memory>

#include "common/status.h"
#include "storage/telemetry_store.h"

namespace sightline {

//! Connects to the server, detects its version, and creates the database
//! and tables when missing (the DDL a version supports). Unavailable when the
//! server cannot be reached, InvalidArgument for a bad URL or a database
//! written by an incompatible version.
Result<std::unique_ptr<TelemetryStore>> OpenClickHouseStore(const StoreOptions& options);

}  // namespace sightline
