#include "common/memory_size.h"

#include <unistd.h>

#include <charconv>
#include <fstream>
#include <sstream>
#include <string>

namespace sightline {

namespace {

std::optional<uint64_t> ReadCgroupLimit(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return ParseCgroupMemoryLimit(text.str());
}

}  // namespace

std::optional<uint64_t> ParseCgroupMemoryLimit(std::string_view text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  uint64_t bytes = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), bytes);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  if (bytes >= (uint64_t{1} << 62)) return std::nullopt;  // v1's "unlimited" is a page-rounded 2^63 - 1
  return bytes;
}

uint64_t UsableMemoryBytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page_size = ::sysconf(_SC_PAGESIZE);
  uint64_t bytes = pages > 0 && page_size > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size) : 0;
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const std::optional<uint64_t> limit = ReadCgroupLimit(path);
    if (limit && *limit > 0 && (bytes == 0 || *limit < bytes)) bytes = *limit;
  }
  return bytes;
}

std::string DefaultDuckDbMemoryLimit() {
  const uint64_t usable = UsableMemoryBytes();
  if (usable == 0) return "";
  return std::to_string(usable / 100 * kDefaultMemoryLimitPercent >> 20) + "MiB";
}

}  // namespace sightline
