#pragma once

#include <duckdb.h>

#include <memory>

#include "storage/sql/sql_connection.h"

namespace sightline {

//! A DuckDB read connection (owns it). Query() uses a prepared statement
//! with bound parameters; Interrupt() is duckdb_interrupt.
std::unique_ptr<ReadConnection> NewDuckDbReader(duckdb_connection conn);

}  // namespace sightline
