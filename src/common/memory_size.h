#pragma once

// How much memory this process may use: the machine's RAM, or less when its
// cgroup sets a limit (a container's memory limit).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sightline {

//! The least of physical RAM and the cgroup limit (v2 memory.max, v1
//! memory.limit_in_bytes, read at /sys/fs/cgroup); 0 if RAM is unknown.
uint64_t UsableMemoryBytes();

//! A cgroup memory limit file's value: "max" (or a v1 value at or past 2^62,
//! its "no limit") is none, as is anything that is not a byte count.
std::optional<uint64_t> ParseCgroupMemoryLimit(std::string_view text);

//! DuckDB's own default memory_limit is 80% of RAM, and it goes past its limit
//! by what it keeps outside the buffer manager (16 bytes per row a transaction
//! deletes, until the next checkpoint), while the rest of the process needs its own
//! share (--max-inflight-bytes, decoded batches, query results). A logs fill
//! under the 80% default was killed for want of memory at 341M records.
inline constexpr uint64_t kDefaultMemoryLimitPercent = 60;

//! kDefaultMemoryLimitPercent of UsableMemoryBytes() (RAM, or the cgroup's
//! limit) as a DuckDB setting, for the server's store and for `bench raw`'s
//! own DuckDB alike ("14745MiB"); "" (DuckDB's default) when the
//! memory is unknown.
std::string DefaultDuckDbMemoryLimit();

}  // namespace sightline
