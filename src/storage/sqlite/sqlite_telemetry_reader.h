#pragma once

#include <cstdint>
#include <memory>

#include "storage/sql/sql_connection.h"
#include "storage/telemetry_reader.h"

namespace sightline {

//! The read contract on SQLite: the shared SQL (storage/sql/), with its
//! percentiles computed in C++ over streamed durations (SQLite has no
//! quantile aggregate; window functions measured 17x slower at 1M spans),
//! and the rollups the store writes (StoreOptions::rollup_exact_spans).
std::unique_ptr<TelemetryReader> NewSqliteTelemetryReader(std::unique_ptr<ReadConnection> conn,
                                                          int64_t rollup_exact_spans);

}  // namespace sightline
