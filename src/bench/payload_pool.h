#pragma once

// The requests of one benchmark run, built before the clock starts.
//
// Request i carries signal signals[i % n] and that signal's payload number
// i / n, so a mixed run interleaves signals evenly. Every request of a run
// has its own payload (ids stay unique); Prebuild() makes the first `count`
// on all cores before timing, and Get() builds any later one on the calling
// thread and reports the CPU it took, so a run that outgrows its pool stays
// correct and says what the extra generation cost.

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "bench/load_generator.h"

namespace sightline::bench {

//! CPU time of the calling thread (getrusage RUSAGE_THREAD), seconds.
double ThreadCpuSeconds();
//! CPU time of the whole process (getrusage RUSAGE_SELF), seconds.
double ProcessCpuSeconds();

struct PrebuildStats {
  uint64_t payloads = 0;
  uint64_t items = 0;
  uint64_t raw_bytes = 0;
  uint64_t wire_bytes = 0;
  double wall_seconds = 0;
  double cpu_seconds = 0;  // summed over the building threads
};

//! Prebuild() once, then Get() from any number of threads.
class PayloadPool {
 public:
  //! Request i uses payload number first_payload + i / signals.size(), so
  //! pools with far-apart first_payload (the warm-up's) never share an id.
  PayloadPool(const LoadGenerator* generator, std::vector<Signal> signals, uint64_t first_payload = 0);

  //! Builds requests [prebuilt(), count) with `threads` threads, stopping
  //! early once all bodies together reach max_bytes. Returns what this call built.
  PrebuildStats Prebuild(uint64_t count, int threads, uint64_t max_bytes);

  Signal SignalOf(uint64_t request) const { return signals_[request % signals_.size()]; }
  uint64_t PayloadIndexOf(uint64_t request) const { return first_payload_ + request / signals_.size(); }
  uint64_t prebuilt() const { return payloads_.size(); }
  const std::vector<Signal>& signals() const { return signals_; }
  const LoadGenerator& generator() const { return *generator_; }

  //! The payload of request i: the prebuilt one, or one built now into
  //! *scratch (adding the CPU spent to *build_cpu_seconds).
  const Payload& Get(uint64_t request, Payload* scratch, double* build_cpu_seconds) const;

 private:
  const LoadGenerator* generator_;
  std::vector<Signal> signals_;
  uint64_t first_payload_;
  std::vector<Payload> payloads_;
  uint64_t bytes_ = 0;
};

}  // namespace sightline::bench
