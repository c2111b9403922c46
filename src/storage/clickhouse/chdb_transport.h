#pragma once

// The in-process transport (`chdb:///abs/data/dir`): ClickHouse as a library,
// chdb's libchdb.so, loaded with dlopen() at the first connection. It runs
// the engine's statements unchanged; only the Request's fields are mapped
// onto chdb's API:
//   query + body   the body written to a file the statement reads: FROM
//                  INFILE before its FORMAT (inline data after the text would
//                  end at the first "\n\n", which RowBinary may hold); no gzip
//   database       USE <database> when it differs from the session's
//   default_format the result format; wait_end_of_query is implied
//   settings       SET name = 'value' before the statement, SET name = DEFAULT
//                  after (a connection is a session of its own)
//   query_id       not sent (chdb names its queries itself): Abort() kills
//                  the running statement by its connection's log_comment
// User and password do not apply in-process.
//
// The library runs one engine per process, on one data directory: every
// chdb:// URL of a process must name the same directory. The engine boots
// with the first open connection and shuts down with the last one closed
// (a store's Close() and destruction), so a process exits with none running.

#include <memory>
#include <string>

#include "storage/clickhouse/transport.h"

namespace sightline::clickhouse {

//! The library: $SIGHTLINE_CHDB_LIB when set, else where `scripts/setup.sh
//! --test` unpacks it (.deps/chdb/libchdb.so of the source tree, fixed at
//! configure time).
std::string ChdbLibraryPath();

//! A connection (a session) of the process's in-process engine, booted on
//! `endpoint.chdb_path` at the first one. Connects lazily: a library that
//! cannot load, or a second data directory, fails Execute() (Unavailable,
//! InvalidArgument), with the reason.
std::unique_ptr<Transport> ConnectChdb(const Endpoint& endpoint);

}  // namespace sightline::clickhouse
