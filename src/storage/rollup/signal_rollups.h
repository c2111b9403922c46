#pragma once

// Every rollup of one signal at once, for an engine that keeps them (DuckDB,
// SQLite): spans have span and (span) exception rollups, logs log and (log)
// exception rollups, metrics metric rollups.

#include <string>
#include <vector>

#include "model/batch.h"
#include "storage/rollup/rollup_table.h"

namespace sightline::rollup {

//! Every rollup's tables (those missing) and state rows, in the caller's
//! transaction; `types` are the engine's column types.
Status CreateRollups(RollupSession* s, const schema::TypeNames& types);

//! A commit's share of the span or log rollups: the deltas of its batches
//! (span groups and span exceptions, or log counts and log exceptions), in
//! the transaction that writes their rows.
Status AppendDeltas(RollupSession* s, const std::vector<const SpanBatch*>& batches);
Status AppendDeltas(RollupSession* s, const std::vector<const LogBatch*>& batches);

//! Folds the deltas of the span or log rollups (and that signal's exception
//! rollups) into their minute and hour tables, in the caller's transaction.
//! Metrics have no deltas: nothing to do.
Status CompactSignalRollups(RollupSession* s, Signal signal);

//! The rollups' share of expiring `signal`'s rows before before_ns (of
//! `filter`'s projects): with their rows (whole_hours false: the cut minute
//! is rebuilt from the rows that stay, rollup_table.h Expire), or on their
//! own (true: whole hours, DropHoursBefore).
Status ExpireSignalRollups(RollupSession* s, Signal signal, const std::string& filter, int64_t before_ns,
                           bool whole_hours);

}  // namespace sightline::rollup
