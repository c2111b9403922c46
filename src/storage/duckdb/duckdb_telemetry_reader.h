#pragma once

#include <memory>

#include "storage/sql/sql_connection.h"
#include "storage/telemetry_reader.h"

namespace sightline {

//! The read contract on DuckDB: the shared SQL (storage/sql/) with DuckDB's
//! spellings, and span groups with percentiles computed in SQL.
std::unique_ptr<TelemetryReader> NewDuckDbTelemetryReader(std::unique_ptr<ReadConnection> conn);

}  // namespace sightline
