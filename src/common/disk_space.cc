#include "common/disk_space.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>

namespace sightline {

Result<DiskSpace> GetDiskSpace(const std::string& path) {
  struct statvfs st;
  if (::statvfs(path.c_str(), &st) != 0) {
    return Status::IoError("statvfs " + path + ": " + std::strerror(errno));
  }
  DiskSpace out;
  out.available_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  out.total_bytes = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  return out;
}

}  // namespace sightline
