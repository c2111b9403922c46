#pragma once

// How long a client refused with a retryable status (503) is told to wait.
// A constant delay makes every throttled client retry in the same second,
// and a gate that refused them all refuses them all again: the delay grows
// with the admission gate's pressure and carries jitter, so retries spread
// out as the overload deepens (docs/API.md states the formula).

#include <cstdint>
#include <random>

namespace sightline {

struct RetryAfterPolicy {
  int min_seconds = 1;   // the delay at no pressure
  int max_seconds = 10;  // the delay when the gate refuses everything, before jitter
};

//! delay = min + round((max - min) * pressure), pressure clamped to 0..1;
//! Retry-After = delay + a uniform whole number of seconds in 0..ceil(delay / 2).
//! With the defaults: 1-2 s at light overload, 10-15 s when saturated.
int RetryAfterSeconds(const RetryAfterPolicy& policy, double pressure, std::mt19937_64* rng);

//! RetryAfterSeconds with a per-thread generator (thread-safe).
int RetryAfterSeconds(const RetryAfterPolicy& policy, double pressure);

}  // namespace sightline
