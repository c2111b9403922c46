#pragma once

// Free space on the filesystem that holds a path (statvfs).

#include <cstdint>
#include <string>

#include "common/status.h"

namespace sightline {

struct DiskSpace {
  uint64_t available_bytes = 0;  // what an unprivileged writer may still use (f_bavail)
  uint64_t total_bytes = 0;
};

//! The space of the filesystem holding `path`; IoError when statvfs fails.
Result<DiskSpace> GetDiskSpace(const std::string& path);

}  // namespace sightline
