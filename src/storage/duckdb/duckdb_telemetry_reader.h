#pragma once

#include <memory>

#include "storage/sql/sql_connection.h"
#include "storage/telemetry_reader.h"

namespace sightline {

//! The read contract on DuckDB: the shared SQL (storage/sql/) with DuckDB's
//! spellings, span groups with percentiles computed in SQL, and long ranges'
//! span groups from the span rollups (StoreOptions::rollup_exact_spans).
std::unique_ptr<TelemetryReader> NewDuckDbTelemetryReader(std::unique_ptr<ReadConnection> conn,
                                                          int64_t rollup_exact_spans);

}  // namespace sightline
