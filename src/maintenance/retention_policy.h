#pragma once

// What the maintenance service deletes, as plain functions of the policy,
// the clock and the store's oldest rows, so the choices are tested without a
// store: retention cutoffs per project and signal, and the chunk the disk
// budget drops next.

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "common/status.h"
#include "model/batch.h"
#include "state/state_store.h"
#include "storage/telemetry_store.h"

namespace sightline {

inline constexpr int64_t kNanosPerSecond = 1'000'000'000;

//! How long rows are kept, per signal: the server's defaults
//! (`--retention-<signal>`) and projects' own overrides (state). 0 seconds
//! keeps rows forever.
struct RetentionPolicy {
  std::array<int64_t, kSignalCount> default_seconds{0, 0, 0};
  //! Project id -> its override per signal (nullopt: the default applies).
  std::map<int64_t, std::array<std::optional<int64_t>, kSignalCount>> overrides;

  //! The defaults with the overrides of `records`; InvalidArgument for a
  //! record of an unknown signal.
  static Result<RetentionPolicy> Make(std::array<int64_t, kSignalCount> default_seconds,
                                      const std::vector<RetentionRecord>& records);
  //! Seconds `project` keeps `signal` (0: forever).
  int64_t Effective(int64_t project, Signal signal) const;
  //! Whether that comes from the project's own override.
  bool Overridden(int64_t project, Signal signal) const;
};

//! One delete a maintenance pass runs.
struct PlannedDelete {
  Signal signal;
  ProjectSet projects;
  int64_t before_ns;
};

//! `t` rounded down to a multiple of `chunk_ns` (> 0), also below zero;
//! INT64_MIN when that multiple would be below it.
int64_t AlignDown(int64_t t, int64_t chunk_ns);

//! The deletes that enforce `policy` at `now_ns`, in whole chunks: a cutoff
//! is now minus the retention rounded down to a chunk boundary, so a row is
//! deleted once the whole chunk it falls in has expired (it lives at most one
//! chunk past its retention, plus a maintenance interval). One delete per
//! signal for every project on the default (all but the overridden), one per
//! distinct override (its projects together); none for "forever".
std::vector<PlannedDelete> PlanRetention(const RetentionPolicy& policy, int64_t now_ns, int64_t chunk_ns);

//! The disk budget's next step: given each signal's oldest row time, the end
//! of the chunk holding the oldest row of any signal; deleting every signal's
//! rows before it (every project's) drops the oldest chunk of data first.
//! nullopt when no signal has rows.
std::optional<int64_t> BudgetCutoff(const std::array<std::optional<int64_t>, kSignalCount>& oldest, int64_t chunk_ns);

}  // namespace sightline
