#include "auth/login_throttle.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace sightline {

namespace {

//! Whole seconds until `d` has passed, at least 1 (Retry-After is in seconds).
int64_t CeilSeconds(std::chrono::steady_clock::duration d) {
  const double s = std::chrono::duration<double>(d).count();
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(s)));
}

}  // namespace

LoginThrottle::LoginThrottle(LoginThrottleOptions options, Clock clock)
    : options_(options),
      window_(std::chrono::seconds(std::max<int64_t>(1, options.failure_window_s))),
      capacity_(std::max(1.0, 2 * options.global_failures_per_s)),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })),
      tokens_(capacity_),
      refilled_(clock_()) {}

void LoginThrottle::Refill(TimePoint now) {
  const double elapsed = std::chrono::duration<double>(now - refilled_).count();
  if (elapsed > 0) tokens_ = std::min(capacity_, tokens_ + elapsed * options_.global_failures_per_s);
  refilled_ = std::max(refilled_, now);
}

void LoginThrottle::GiveBack() {
  if (options_.global_failures_per_s > 0) tokens_ = std::min(capacity_, tokens_ + 1);
}

int64_t LoginThrottle::Begin(const std::string& key) {
  const TimePoint now = clock_();
  MutexLock lock(&mu_);
  auto it = failures_.end();
  if (options_.max_failures_per_address > 0) {
    it = failures_.find(key);
    if (it != failures_.end()) {
      const TimePoint window_end = it->second.window_start + window_;
      if (now >= window_end) {
        failures_.erase(it);
        it = failures_.end();
      } else if (it->second.count >= options_.max_failures_per_address) {
        return CeilSeconds(window_end - now);
      }
    }
  }
  if (options_.global_failures_per_s > 0) {
    Refill(now);
    if (tokens_ < 1) {
      return CeilSeconds(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>((1 - tokens_) / options_.global_failures_per_s)));
    }
    tokens_ -= 1;
  }
  if (options_.max_failures_per_address > 0) {
    if (it == failures_.end()) {
      if (failures_.size() >= options_.max_tracked_addresses) {
        std::erase_if(failures_, [&](const auto& kv) { return now >= kv.second.window_start + window_; });
      }
      // Still no room: this address is bound by the global budget only.
      if (failures_.size() >= options_.max_tracked_addresses) return 0;
      it = failures_.emplace(key, Failures{now, 0}).first;
    }
    ++it->second.count;
  }
  return 0;
}

void LoginThrottle::Succeeded(const std::string& key) {
  MutexLock lock(&mu_);
  GiveBack();
  failures_.erase(key);
}

void LoginThrottle::Failed(const std::string& key) {}

void LoginThrottle::Abandoned(const std::string& key) {
  MutexLock lock(&mu_);
  GiveBack();
  auto it = failures_.find(key);
  if (it != failures_.end() && it->second.count > 0) --it->second.count;
}

size_t LoginThrottle::tracked() {
  MutexLock lock(&mu_);
  return failures_.size();
}

std::string LoginThrottle::KeyFor(std::string_view address) {
  const std::string a(address);
  in_addr v4;
  if (inet_pton(AF_INET, a.c_str(), &v4) == 1) return a;
  in6_addr v6;
  if (inet_pton(AF_INET6, a.c_str(), &v6) != 1) return a;
  static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  char buf[INET6_ADDRSTRLEN];
  if (std::memcmp(v6.s6_addr, kMapped, sizeof(kMapped)) == 0) {
    std::memcpy(&v4, v6.s6_addr + 12, 4);
    return inet_ntop(AF_INET, &v4, buf, sizeof(buf)) ? std::string(buf) : a;
  }
  std::memset(v6.s6_addr + 8, 0, 8);
  return inet_ntop(AF_INET6, &v6, buf, sizeof(buf)) ? std::string(buf) + "/64" : a;
}

}  // namespace sightline
