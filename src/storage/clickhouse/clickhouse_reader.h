#pragma once

// The read contract (storage/telemetry_reader.h) in ClickHouse SQL over the
// tables of clickhouse_schema.h. Every aggregate, percentile, grouping and
// ordering runs in ClickHouse; the C++ side only builds statements (values
// as escaped literals: Quote) and reads the TabSeparated answers.

#include <functional>
#include <memory>
#include <string>

#include "storage/clickhouse/http_client.h"
#include "storage/clickhouse/transport.h"
#include "storage/telemetry_reader.h"

namespace sightline::clickhouse {

//! Gives a leased connection back to its pool.
using ReleaseFn = std::function<void(std::unique_ptr<Transport>)>;

//! A reader on one leased connection; `release` takes it back when the
//! reader is destroyed. Interrupt() shuts the connection's socket and kills
//! the running statement by its query id (KILL QUERY on a connection of
//! its own); the pool's next lease reconnects. `cluster`: the tables are
//! Distributed (clickhouse_schema.h Layout), and a subquery or JOIN on one
//! runs once on the initiator, its result sent to the shards (GLOBAL).
std::unique_ptr<TelemetryReader> NewReader(std::unique_ptr<Transport> conn, ReleaseFn release, bool cluster = false);

}  // namespace sightline::clickhouse
