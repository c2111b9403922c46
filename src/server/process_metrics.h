#pragma once

// The process's own metrics in the shape every Prometheus client library
// exports them (process_cpu_seconds_total, process_resident_memory_bytes,
// ...; read from /proc/self), and sightline_build_info. Linux only.

#include <cstdint>
#include <optional>
#include <string>

namespace sightline {

//! What /proc says about this process; a field is nullopt when it could
//! not be read.
struct ProcessStats {
  std::optional<double> cpu_seconds;  // user + system
  std::optional<uint64_t> resident_memory_bytes;
  std::optional<uint64_t> virtual_memory_bytes;
  std::optional<uint64_t> open_fds;
  std::optional<uint64_t> max_fds;           // the soft RLIMIT_NOFILE
  std::optional<double> start_time_seconds;  // since the Unix epoch
};

ProcessStats ReadProcessStats();

//! Appends the process_* families (those that could be read) and
//! sightline_build_info{version,duckdb_version,sqlite_version} 1.
void AppendProcessMetrics(std::string* out);

//! This build's version (CMake's project version).
const char* SightlineVersion();

}  // namespace sightline
