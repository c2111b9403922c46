#pragma once

// Every rollup of one signal at once, for an engine's retention: spans have
// span and (span) exception rollups, logs log and (log) exception rollups,
// metrics metric rollups.

#include <string>

#include "model/batch.h"
#include "storage/rollup/rollup_table.h"

namespace sightline::rollup {

//! The rollups' share of expiring `signal`'s rows before before_ns (of
//! `filter`'s projects): with their rows (whole_hours false: the cut minute
//! is rebuilt from the rows that stay, rollup_table.h Expire), or on their
//! own (true: whole hours, DropHoursBefore).
Status ExpireSignalRollups(RollupSession* s, Signal signal, const std::string& filter, int64_t before_ns,
                           bool whole_hours);

}  // namespace sightline::rollup
