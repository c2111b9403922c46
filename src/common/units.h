#pragma once

// Durations and byte sizes as operators type them in flags and commands
// ("7d", "12h", "256MiB").

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace sightline {

//! A duration in whole seconds: a non-negative integer followed by one unit,
//! s, m, h, d or w ("30m", "12h", "7d"); "0" alone is zero. InvalidArgument
//! otherwise, including a value that does not fit in int64 nanoseconds
//! (about 292 years).
Result<int64_t> ParseDurationSeconds(std::string_view text);

//! The shortest exact spelling ParseDurationSeconds reads back: "7d", "36h",
//! "90s", "0s".
std::string FormatDuration(int64_t seconds);

//! A byte count: a non-negative integer, optionally followed by a unit, B,
//! KB/MB/GB/TB (powers of 1000, as DuckDB reads them) or KiB/MiB/GiB/TiB
//! (powers of 1024), case-insensitive, spaces allowed before the unit.
Result<uint64_t> ParseByteSize(std::string_view text);

}  // namespace sightline
