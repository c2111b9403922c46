#pragma once

// Where a read probe ladder got to, so `bench probe --resume <dir>` can
// continue it on a data directory kept by --keep-data. The probe writes
// <dir>/probe_state.json after every fill chunk and every probed level
// (write to a temporary file, then rename: a crash leaves the old state or
// the new one, never half of one). The generator is deterministic by request
// index, so the state needs only the options it was built with, the next
// request index and the accepted rows; --check rebuilds the truth by
// re-generating requests 0..sent-1 without sending them.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "bench/load_generator.h"
#include "common/status.h"

namespace sightline::bench {

inline constexpr const char* kProbeStateFile = "probe_state.json";

struct ProbeState {
  int version = 1;
  // What must match the options of a resumed run.
  std::string engine;                // --spawn
  std::vector<std::string> signals;  // the ladder's, in order ("spans", ...)
  uint64_t seed = 1;
  std::vector<uint64_t> levels;  // the whole ladder (the generator's steps are spread for its largest)
  std::string server_args;       // joined with '\n'
  // The generator and the queried window, taken as they were.
  size_t batch = 0;
  int64_t base_time_ns = 0, time_step_ns = 0, point_step_ns = 0;
  int64_t from_ms = 0, to_ms = 0;
  // Progress.
  uint64_t sent = 0;  // requests sent per signal: the next request index
  //! Set while a chunk is in flight: requests below it may have been
  //! committed (a probe killed mid-chunk); 0 when none is.
  uint64_t in_flight_until = 0;
  std::array<uint64_t, 3> accepted = {0, 0, 0};  // by Signal
  bool truth_complete = true;                    // every request sent was accepted whole
  uint64_t probed_rows = 0;                      // the largest level probed (0: none yet)
  uint64_t background_payload = 0;               // the next --under-ingest payload number
  uint64_t background_accepted = 0;              // --under-ingest items stored (outside the window)
};

std::string ProbeStateJson(const ProbeState& s);
Result<ProbeState> ParseProbeState(const std::string& json);

//! Writes <dir>/probe_state.json atomically (temporary file, fsync, rename).
Status SaveProbeState(const std::string& dir, const ProbeState& s);
Result<ProbeState> LoadProbeState(const std::string& dir);

//! Why a state cannot be continued with these settings ("" when it can):
//! names the first setting that differs, with both values.
std::string ProbeStateMismatch(const ProbeState& saved, const ProbeState& wanted);

}  // namespace sightline::bench
