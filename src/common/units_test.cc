#include "common/units.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/disk_space.h"
#include "common/memory_size.h"
#include "common/testing/temp_dir.h"

namespace sightline {
namespace {

TEST(ParseDurationSeconds, ReadsEachUnit) {
  EXPECT_EQ(ParseDurationSeconds("45s").value(), 45);
  EXPECT_EQ(ParseDurationSeconds("30m").value(), 1800);
  EXPECT_EQ(ParseDurationSeconds("12h").value(), 43200);
  EXPECT_EQ(ParseDurationSeconds("7d").value(), 604800);
  EXPECT_EQ(ParseDurationSeconds("2w").value(), 1209600);
  EXPECT_EQ(ParseDurationSeconds("0").value(), 0);
  EXPECT_EQ(ParseDurationSeconds("0d").value(), 0);
}

TEST(ParseDurationSeconds, RefusesWhatIsNotADuration) {
  for (const char* bad : {"", "d", "7", "7D", "7 d", "-1d", "1.5h", "7days", "1y", "h7", "99999999999999999999s"}) {
    Result<int64_t> r = ParseDurationSeconds(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(ParseDurationSeconds, RefusesADurationTooLongForNanoseconds) {
  EXPECT_TRUE(ParseDurationSeconds("15000w").ok());  // ~288 years
  EXPECT_FALSE(ParseDurationSeconds("16000w").ok());
  EXPECT_TRUE(ParseDurationSeconds("9223372036s").ok());  // INT64_MAX nanoseconds, in whole seconds
  EXPECT_FALSE(ParseDurationSeconds("9223372037s").ok());
}

TEST(FormatDuration, IsTheShortestExactSpelling) {
  EXPECT_EQ(FormatDuration(604800), "1w");
  EXPECT_EQ(FormatDuration(3 * 86400), "3d");
  EXPECT_EQ(FormatDuration(36 * 3600), "36h");
  EXPECT_EQ(FormatDuration(1800), "30m");
  EXPECT_EQ(FormatDuration(90), "90s");
  EXPECT_EQ(FormatDuration(0), "0s");
  for (int64_t s : {1, 59, 61, 3599, 3600, 86399, 86400, 1209600, 1209601}) {
    EXPECT_EQ(ParseDurationSeconds(FormatDuration(s)).value(), s) << s;
  }
}

TEST(ParseByteSize, ReadsDecimalAndBinaryUnits) {
  EXPECT_EQ(ParseByteSize("0").value(), 0u);
  EXPECT_EQ(ParseByteSize("1234").value(), 1234u);
  EXPECT_EQ(ParseByteSize("10B").value(), 10u);
  EXPECT_EQ(ParseByteSize("256MB").value(), 256'000'000u);
  EXPECT_EQ(ParseByteSize("256MiB").value(), 256u << 20);
  EXPECT_EQ(ParseByteSize("2 gib").value(), 2ull << 30);
  EXPECT_EQ(ParseByteSize("1TB").value(), 1'000'000'000'000u);
  EXPECT_EQ(ParseByteSize("3KiB").value(), 3072u);
  for (const char* bad : {"", "MB", "-1MB", "1.5GB", "12 parsecs", "99999999999999999999", "20000000TiB"}) {
    EXPECT_FALSE(ParseByteSize(bad).ok()) << bad;
  }
}

TEST(GetDiskSpace, ReportsTheFilesystemOfAPath) {
  testing::TempDir dir("sightline-disk-space");
  Result<DiskSpace> space = GetDiskSpace(dir.str());
  ASSERT_TRUE(space.ok()) << space.status().ToString();
  EXPECT_GT(space->total_bytes, 0u);
  EXPECT_LE(space->available_bytes, space->total_bytes);
  Result<DiskSpace> missing = GetDiskSpace(dir.str() + "/does/not/exist");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
}

TEST(ParseCgroupMemoryLimit, ReadsBytesAndTheNoLimitSpellings) {
  EXPECT_EQ(ParseCgroupMemoryLimit("2147483648\n"), 2147483648u);
  EXPECT_EQ(ParseCgroupMemoryLimit("max\n"), std::nullopt);                  // v2: no limit
  EXPECT_EQ(ParseCgroupMemoryLimit("9223372036854771712\n"), std::nullopt);  // v1: no limit
  EXPECT_EQ(ParseCgroupMemoryLimit(""), std::nullopt);
  EXPECT_EQ(ParseCgroupMemoryLimit("12k"), std::nullopt);
}

TEST(UsableMemoryBytes, IsAtMostTheMachinesRam) {
  const uint64_t ram =
      static_cast<uint64_t>(::sysconf(_SC_PHYS_PAGES)) * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  EXPECT_GT(UsableMemoryBytes(), 0u);
  EXPECT_LE(UsableMemoryBytes(), ram);
}

}  // namespace
}  // namespace sightline
