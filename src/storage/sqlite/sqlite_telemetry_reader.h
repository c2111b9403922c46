#pragma once

#include <memory>

#include "storage/sql/sql_connection.h"
#include "storage/telemetry_reader.h"

namespace sightline {

//! The read contract on SQLite: the shared SQL (storage/sql/), with its
//! percentiles computed in C++ over streamed durations (SQLite has no
//! quantile aggregate; window functions measured 17x slower at 1M spans).
std::unique_ptr<TelemetryReader> NewSqliteTelemetryReader(std::unique_ptr<ReadConnection> conn);

}  // namespace sightline
