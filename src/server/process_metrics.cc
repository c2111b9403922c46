#include "server/process_metrics.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <limits>
#include <sstream>

#include "storage/telemetry_store.h"

#ifndef SIGHTLINE_VERSION
#define SIGHTLINE_VERSION "unknown"
#endif

namespace sightline {

namespace {

// Seconds since the epoch at which the machine booted (/proc/stat btime).
std::optional<double> BootTime() {
  std::ifstream f("/proc/stat");
  std::string key;
  while (f >> key) {
    if (key == "btime") {
      uint64_t btime = 0;
      if (f >> btime) return static_cast<double>(btime);
      return std::nullopt;
    }
    f.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

std::optional<uint64_t> CountOpenFds() {
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return std::nullopt;
  uint64_t n = 0;
  while (const dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ++n;
  }
  ::closedir(dir);
  return n > 0 ? n - 1 : 0;  // less the descriptor that reads the directory
}

// A label value with \, " and newline escaped (text exposition format).
std::string LabelValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out.push_back('\\');
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out.push_back(c);
  }
  return out;
}

}  // namespace

const char* SightlineVersion() { return SIGHTLINE_VERSION; }

ProcessStats ReadProcessStats() {
  ProcessStats s;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  std::ifstream stat("/proc/self/stat");
  std::string line;
  if (std::getline(stat, line)) {
    // The command name (field 2) is in parentheses and may hold spaces: the
    // fields are counted from the last ')'.
    size_t close = line.rfind(')');
    if (close != std::string::npos && ticks > 0) {
      std::istringstream in(line.substr(close + 2));
      std::string field[23];  // fields 3 (state) .. 25
      for (auto& f : field) in >> f;
      if (in) {
        // proc(5): utime 14, stime 15, starttime 22, vsize 23, rss 24 (pages).
        s.cpu_seconds = (std::stod(field[14 - 3]) + std::stod(field[15 - 3])) / ticks;
        if (auto boot = BootTime()) s.start_time_seconds = *boot + std::stod(field[22 - 3]) / ticks;
        s.virtual_memory_bytes = std::stoull(field[23 - 3]);
        s.resident_memory_bytes = std::stoull(field[24 - 3]) * page;
      }
    }
  }
  s.open_fds = CountOpenFds();
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    s.max_fds = static_cast<uint64_t>(limit.rlim_cur);
  }
  return s;
}

void AppendProcessMetrics(std::string* out) {
  const ProcessStats s = ReadProcessStats();
  auto family = [out](const char* name, const char* type, const char* help, const auto& value) {
    if (!value) return;
    *out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, *value);
  };
  family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", s.cpu_seconds);
  family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", s.resident_memory_bytes);
  family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", s.virtual_memory_bytes);
  family("process_open_fds", "gauge", "Number of open file descriptors.", s.open_fds);
  family("process_max_fds", "gauge", "Maximum number of open file descriptors.", s.max_fds);
  family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.",
         s.start_time_seconds);
  const EngineVersions engines = BuiltinEngineVersions();
  *out += fmt::format(
      "# HELP sightline_build_info The running build: its version and its engines' library versions.\n"
      "# TYPE sightline_build_info gauge\n"
      "sightline_build_info{{version=\"{}\",duckdb_version=\"{}\",sqlite_version=\"{}\"}} 1\n",
      LabelValue(SightlineVersion()), LabelValue(engines.duckdb), LabelValue(engines.sqlite));
}

}  // namespace sightline
