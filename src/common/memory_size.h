#pragma once

// How much memory this process may use: the machine's RAM, or less when its
// cgroup sets a limit (a container's memory limit).

#include <cstdint>
#include <optional>
#include <string_view>

namespace sightline {

//! The least of physical RAM and the cgroup limit (v2 memory.max, v1
//! memory.limit_in_bytes, read at /sys/fs/cgroup); 0 if RAM is unknown.
uint64_t UsableMemoryBytes();

//! A cgroup memory limit file's value: "max" (or a v1 value at or past 2^62,
//! its "no limit") is none, as is anything that is not a byte count.
std::optional<uint64_t> ParseCgroupMemoryLimit(std::string_view text);

}  // namespace sightline
