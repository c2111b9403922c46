#pragma once

// Small pieces every `sightline bench` sub-command shares: a description of
// the machine for the JSON, temp data directories, spawned-server tokens, and
// median/min/max of repeated measurements.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sightline::bench {

struct Machine {
  unsigned cores = 0;
  std::string cpu_model;
  uint64_t mem_bytes = 0;
  std::string kernel;
};

//! Cores, CPU model, memory and kernel, from /proc and uname.
Machine DescribeMachine();

//! The 1-minute load average (-1 when unreadable); recorded before each run
//! because this machine is shared and noisy.
double LoadAverage1m();

//! A fresh random ingest token for a spawned server.
std::string RandomToken();

//! mkdtemp of PARENT/sightline-bench-XXXXXX.
std::optional<std::string> MakeTempDir(const std::string& parent);

//! $TMPDIR, or /tmp.
std::string DefaultWorkParent();

struct Spread {
  double median = 0, min = 0, max = 0;
};

//! Median (mean of the middle two for even counts), min and max; zeros when empty.
Spread SpreadOf(std::vector<double> v);

//! 1234567 -> "1.23M", 45678 -> "45.7k", 999 -> "999".
std::string Human(double v);

}  // namespace sightline::bench
