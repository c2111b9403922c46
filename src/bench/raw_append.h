#pragma once

// The engine's own append rate for the rows a benchmark run sent (--raw):
// no HTTP, no gate, no writer queue. Each signal's payloads are gunzipped and
// decoded into batches exactly as the server does (untimed), then handed to
// a fresh store's sink — NewSink(signal)->Write*() — in as many commits as
// the server made for them (groups of equal size); only the Write* calls are
// timed. Signals run on their own threads with their own sinks, as the
// server's writers do. The ratio HTTP items/s : raw items/s is how much of
// the engine's speed the server delivers.

#include <array>
#include <cstdint>
#include <string>

#include "bench/payload_pool.h"
#include "common/status.h"
#include "storage/telemetry_store.h"

namespace sightline::bench {

struct RawAppendOptions {
  std::string engine = "duckdb";
  StoreOptions store;  // data_dir: created; must not hold a database yet
  int64_t project_id = 1;
  //! Commits per signal: the batches are split into this many consecutive,
  //! equal-as-possible groups (the server's commit count, so the raw engine
  //! commits exactly as often). 0 = one batch per commit.
  std::array<uint64_t, kSignalCount> commits = {0, 0, 0};
};

struct RawSignalResult {
  uint64_t rows = 0;
  uint64_t batches = 0;
  uint64_t groups = 0;
  double write_seconds = 0;   // inside Write* only
  double decode_seconds = 0;  // gunzip + decode, untimed in the rate
};

struct RawAppendResult {
  std::array<RawSignalResult, kSignalCount> signals;
  double close_seconds = 0;  // store Close(): the final checkpoint
};

//! Appends the payloads of requests [0, requests) of the pool.
Result<RawAppendResult> RunRawAppend(const RawAppendOptions& options, const PayloadPool& pool, uint64_t requests);

}  // namespace sightline::bench
