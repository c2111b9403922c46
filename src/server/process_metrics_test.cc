#include "server/process_metrics.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

namespace sightline {
namespace {

TEST(ProcessMetricsTest, ReadsThisProcessFromProc) {
  ProcessStats before = ReadProcessStats();
  ASSERT_TRUE(before.cpu_seconds && before.resident_memory_bytes && before.virtual_memory_bytes && before.open_fds &&
              before.max_fds && before.start_time_seconds);
  // Memory: 64 MiB touched are resident (other threads of the test binary
  // may free memory meanwhile, so no difference is compared).
  std::vector<char> ballast(64 << 20);
  volatile char* touch = ballast.data();
  for (size_t i = 0; i < ballast.size(); i += 4096) touch[i] = 1;
  ProcessStats s = ReadProcessStats();
  EXPECT_GE(*s.resident_memory_bytes, 64u << 20);
  EXPECT_GE(*s.virtual_memory_bytes, *s.resident_memory_bytes);
  // Descriptors: two more open, two more counted.
  int a = ::open("/dev/null", O_RDONLY);
  int b = ::open("/dev/null", O_RDONLY);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_EQ(*ReadProcessStats().open_fds, *before.open_fds + 2);
  ::close(a);
  ::close(b);
  struct rlimit limit {};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  EXPECT_EQ(*s.max_fds, limit.rlim_cur);
  // Started within the last day, not in the future.
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_LE(*s.start_time_seconds, now + 1);
  EXPECT_GT(*s.start_time_seconds, now - 86400);
  // CPU: what getrusage says, to the clock tick, and it grows as CPU is burnt.
  auto rusage_seconds = [] {
    struct rusage u {};
    ::getrusage(RUSAGE_SELF, &u);
    auto secs = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return secs(u.ru_utime) + secs(u.ru_stime);
  };
  const double tick = 1.0 / static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double low = rusage_seconds();
  const double cpu = *ReadProcessStats().cpu_seconds;
  const double high = rusage_seconds();
  EXPECT_GE(cpu, low - 2 * tick);
  EXPECT_LE(cpu, high + 2 * tick);
  volatile uint64_t spin = 0;
  while (rusage_seconds() < high + 0.1) spin = spin + 1;
  EXPECT_GE(*ReadProcessStats().cpu_seconds, cpu + 0.1 - 2 * tick);
}

TEST(ProcessMetricsTest, ExposesTheStandardFamiliesAndBuildInfo) {
  std::string out;
  AppendProcessMetrics(&out);
  for (const char* family :
       {"process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
        "process_open_fds", "process_max_fds", "process_start_time_seconds"}) {
    EXPECT_NE(out.find(std::string("\n") + family + " "), std::string::npos) << family << "\n" << out;
  }
  EXPECT_NE(out.find("# TYPE process_cpu_seconds_total counter\n"), std::string::npos) << out;
  EXPECT_NE(out.find(std::string("sightline_build_info{version=\"") + SightlineVersion() + "\",duckdb_version=\"v"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("\",sqlite_version=\"3."), std::string::npos) << out;
  EXPECT_NE(std::string(SightlineVersion()), "unknown");
}

}  // namespace
}  // namespace sightline
