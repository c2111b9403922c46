#pragma once

// Every rollup of one signal at once, for an engine that keeps them (DuckDB,
// SQLite): spans have span and (span) exception rollups, logs log and (log)
// exception rollups, metrics metric rollups.

#include <string>
#include <vector>

#include "model/batch.h"
#include "storage/rollup/exception_rollup.h"
#include "storage/rollup/rollup_table.h"
#include "storage/rollup/span_rollup.h"

namespace sightline::rollup {

//! Every rollup's tables (those missing) and state rows, in the caller's
//! transaction; `types` are the engine's column types.
Status CreateRollups(RollupSession* s, const schema::TypeNames& types);

//! A span batch's rollup deltas (span groups and span exceptions), found on
//! the decoder that submits it, so the writer thread only appends them: an
//! engine's SignalSink::Prepare calls PrepareDeltas. Its bytes are charged
//! to the request as the batch's are.
struct PreparedSpanDeltas final : PreparedForEngine {
  explicit PreparedSpanDeltas(const SpanBatch& b);
  SpanRollupMap spans;
  ExceptionRollupMap exceptions;
  size_t ByteSize() const override;
};
void PrepareDeltas(SpanBatch* b);

//! A commit's share of the span or log rollups: the deltas of its batches
//! (span groups and span exceptions, or log counts and log exceptions), in
//! the transaction that writes their rows; a span batch's prepared deltas
//! as PrepareDeltas left them.
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
