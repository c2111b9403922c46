#pragma once

// Bounds on failed logins, so that guessing passwords is slow and a flood of
// wrong passwords cannot keep the hashing thread busy:
//
// - per client address: after `max_failures_per_address` failures within
//   `failure_window_s` of the first, that address is refused (429 with
//   Retry-After = the rest of the window); a success forgets its failures.
//   An attempt counts as a failure from the moment it is let through, so
//   attempts still waiting for their hash cannot slip past the bound.
// - across all addresses: a token bucket of failures, refilled at
//   `global_failures_per_s` and holding twice that, so an attacker with many
//   addresses gets no more hashes than that rate (everyone waits meanwhile:
//   logins are refused, ingest and reads are not touched).
//
// Both are charged when an attempt starts (before its hash runs) and given
// back when it turns out to be a success or gets no verdict, so what they
// bound is hashes that fail.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/mutex.h"

namespace sightline {

struct LoginThrottleOptions {
  int max_failures_per_address = 10;  // 0 = no per-address bound
  int64_t failure_window_s = 300;
  double global_failures_per_s = 4;  // 0 = no global bound
  //! Addresses remembered at once; past it, expired windows are swept, and a
  //! new address that still finds no room is bound only by the global budget.
  size_t max_tracked_addresses = 10000;
};

//! Thread-safe.
class LoginThrottle {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  //! `clock` defaults to steady_clock::now (tests pass their own).
  explicit LoginThrottle(LoginThrottleOptions options, Clock clock = nullptr);

  //! 0 when the client under `key` may try now, else the seconds it must wait
  //! (at least 1). An attempt let through holds one unit of the global budget
  //! until it is settled by exactly one of Succeeded, Failed or Abandoned.
  int64_t Begin(const std::string& key) EXCLUDES(mu_);
  //! The password matched: the budget comes back and the key's failures are forgotten.
  void Succeeded(const std::string& key) EXCLUDES(mu_);
  //! The password did not match (or the user is unknown): the charge stays.
  void Failed(const std::string& key) EXCLUDES(mu_);
  //! No verdict (queue full, store failure, shutdown): both charges come back.
  void Abandoned(const std::string& key) EXCLUDES(mu_);

  //! Addresses with failures remembered.
  size_t tracked() EXCLUDES(mu_);

  //! The key a client address is throttled under: an IPv4 address (also
  //! IPv4-mapped IPv6) as itself, an IPv6 address by its /64 (a host is
  //! usually given a whole /64 to pick from), anything else as given.
  static std::string KeyFor(std::string_view address);

 private:
  using TimePoint = std::chrono::steady_clock::time_point;
  struct Failures {
    TimePoint window_start;
    int count = 0;
  };

  void Refill(TimePoint now) REQUIRES(mu_);
  void GiveBack() REQUIRES(mu_);

  const LoginThrottleOptions options_;
  const std::chrono::steady_clock::duration window_;
  const double capacity_;  // of the global bucket
  const Clock clock_;
  Mutex mu_;
  std::unordered_map<std::string, Failures> failures_ GUARDED_BY(mu_);
  double tokens_ GUARDED_BY(mu_);
  TimePoint refilled_ GUARDED_BY(mu_);
};

}  // namespace sightline
