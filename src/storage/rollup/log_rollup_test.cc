// AddLogs: the log rollup deltas of batches against counting each record
// under its key.

#include "storage/rollup/log_rollup.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace sightline {
namespace {

using rollup::kMinuteNs;

constexpr int64_t kProject = 3;
constexpr int64_t kT0 = 1'700'000'000'000'000'000;

LogBatch MakeLogs(uint32_t seed, int n, int64_t first_ns, int64_t span_ns) {
  const char* const services[] = {"frontend", "checkout", "worker", ""};
  LogBatch b;
  b.project_id = kProject;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < n; ++i) {
    b.time_ns.push_back(first_ns + static_cast<int64_t>(rng() % static_cast<uint64_t>(span_ns)));
    b.severity_number.push_back(static_cast<int32_t>(rng() % 4) * 4 + 1);
    b.service_name.Append(services[rng() % 4]);
  }
  return b;
}

// Two batches with minutes in common, into one map: every (minute, service,
// severity) counted once per record, whatever batch it came in.
TEST(AddLogsTest, BatchesMatchEachRecordCountedUnderItsKey) {
  const LogBatch first = MakeLogs(1, 5000, kT0, 10 * kMinuteNs);
  const LogBatch second = MakeLogs(2, 5000, kT0 - 3 * kMinuteNs, 10 * kMinuteNs);
  rollup::LogRollupMap grouped;
  rollup::AddLogs(first, &grouped);
  rollup::AddLogs(second, &grouped);
  std::map<rollup::LogRollupKey, int64_t> expected;
  for (const LogBatch* b : {&first, &second}) {
    for (size_t r = 0; r < b->rows(); ++r) {
      ++expected[{kProject, rollup::FloorTo(b->time_ns[r], kMinuteNs), std::string(b->service_name.Get(r)),
                  b->severity_number[r]}];
    }
  }
  ASSERT_EQ(grouped.size(), expected.size());
  for (const auto& [key, count] : expected) {
    const auto it = grouped.find(key);
    ASSERT_NE(it, grouped.end()) << key.service << " " << key.bucket_ns << " " << key.severity_number;
    EXPECT_EQ(it->second.count, count);
  }
}

}  // namespace
}  // namespace sightline
