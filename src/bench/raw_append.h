#pragma once

// `bench ingest --raw`: the engine's own append rate for the rows a run
// sent, with no Sightline code in the way — no HTTP, no gate, no decoder, no
// writer queue, no storage layer. The generator rebuilds each request's rows
// (what it sent), the bench turns them into rows of plain tables with the
// same columns as the server's (docs/STORAGE.md) — untimed — and appends
// them straight into DuckDB or SQLite through the engine's own API
// (raw_engine.h), in as many transactions as the server committed for them
// (consecutive groups of equal size); only the transactions are timed.
// Resources and metric series go to their own tables the first time they
// appear, as on the server. Signals run on their own threads with their own
// connections, as the server's writers do. The ratio HTTP items/s : raw
// items/s is how much of the bare engine's speed the server delivers.

#include <array>
#include <cstdint>
#include <string>

#include "bench/payload_pool.h"
#include "bench/raw_engine.h"
#include "common/status.h"

namespace sightline::bench {

struct RawAppendOptions {
  std::string engine = "duckdb";    // duckdb | sqlite
  RawEngineOptions engine_options;  // data_dir: created; must not hold a database yet
  int64_t project_id = 1;
  //! Transactions per signal: the requests are split into this many
  //! consecutive, equal-as-possible groups (the server's commit count, so the
  //! raw engine commits exactly as often). 0 = one request per transaction.
  std::array<uint64_t, kSignalCount> commits = {0, 0, 0};
};

struct RawSignalResult {
  uint64_t rows = 0;
  uint64_t batches = 0;        // requests
  uint64_t groups = 0;         // transactions
  double write_seconds = 0;    // inside the transactions only
  double prepare_seconds = 0;  // rebuilding rows and filling the table rows, untimed in the rate
};

struct RawAppendResult {
  std::array<RawSignalResult, kSignalCount> signals;
  double close_seconds = 0;  // the final checkpoint
};

//! The plain tables of the raw engine, in creation order.
std::span<const RawTable> RawTables();

//! Appends the rows of requests [0, requests) of the pool.
Result<RawAppendResult> RunRawAppend(const RawAppendOptions& options, const PayloadPool& pool, uint64_t requests);

}  // namespace sightline::bench
