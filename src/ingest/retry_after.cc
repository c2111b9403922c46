#include "ingest/retry_after.h"

#include <algorithm>
#include <cmath>

namespace sightline {

int RetryAfterSeconds(const RetryAfterPolicy& policy, double pressure, std::mt19937_64* rng) {
  const int min_s = std::max(1, policy.min_seconds);
  const int max_s = std::max(min_s, policy.max_seconds);
  const double p = std::isfinite(pressure) ? std::clamp(pressure, 0.0, 1.0) : 1.0;
  const int delay = min_s + static_cast<int>(std::lround((max_s - min_s) * p));
  std::uniform_int_distribution<int> jitter(0, (delay + 1) / 2);
  return delay + jitter(*rng);
}

int RetryAfterSeconds(const RetryAfterPolicy& policy, double pressure) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return RetryAfterSeconds(policy, pressure, &rng);
}

}  // namespace sightline
