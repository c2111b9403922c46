#pragma once

// The server's housekeeping: one thread watches the data directory's free
// space (DiskGuard::Check, about once a second); another, every interval,
// runs one maintenance pass:
//
//   1. retention: for each signal, delete the rows older than the project's
//      retention (its override in state, else the server's flag), in whole
//      chunks (retention_policy.h);
//   2. the disk budget: while the database's live bytes (its file less the
//      space free for reuse, plus the WAL) exceed --max-disk-bytes, drop the
//      oldest chunk of every signal and every project, then reclaim;
//   3. reclaim: make the deleted rows' space reusable (a checkpoint).
//
// Passes never overlap: one thread runs them, and RunOnce (tests, the thread)
// holds a lock for the whole pass. The first pass runs at Start(). Errors are logged when they start and
// when they end, not on every pass.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "common/mutex.h"
#include "common/status.h"
#include "maintenance/disk_guard.h"
#include "maintenance/retention_policy.h"
#include "state/state_store.h"
#include "storage/telemetry_store.h"

namespace sightline {

struct MaintenanceOptions {
  //! Per signal (spans, logs, metrics): seconds rows are kept; 0 = forever.
  std::array<int64_t, kSignalCount> retention_seconds{0, 0, 0};
  //! Seconds the rollups are kept, when longer than their rows' retention
  //! (StoreOptions::rollups_outlive_rows); 0: they go with their rows.
  int64_t rollup_retention_seconds = 0;
  uint64_t max_disk_bytes = 0;            // 0: no budget
  int64_t interval_ms = 60'000;           // between maintenance passes
  int64_t disk_check_interval_ms = 1000;  // between free-space samples
  int64_t chunk_seconds = 3600;           // data is deleted in whole chunks of this many seconds
  int max_budget_steps = 64;              // chunks one pass drops at most for the budget
};

//! What one pass did.
struct MaintenanceReport {
  std::array<uint64_t, kSignalCount> retention_deleted{0, 0, 0};
  std::array<uint64_t, kSignalCount> budget_deleted{0, 0, 0};
  int budget_steps = 0;  // chunks dropped for the budget
  //! The longest DeleteBefore call and space reclaim of the pass, which
  //! bound what a writer waited for: DuckDB holds the signal's writes for a
  //! whole delete and every signal's for a checkpoint; SQLite holds writes
  //! for one batch of a delete at a time.
  double longest_delete_seconds = 0;
  double longest_reclaim_seconds = 0;
  uint64_t live_bytes = 0;  // after the pass (0 when not measured)
  Status status;            // the first error, if any
};

//! Lifecycle: construct, Start(), Stop() (joins; idempotent) before the
//! store, state and guard it borrows go away. Thread-safe.
class MaintenanceService {
 public:
  //! Unix time in nanoseconds.
  using Clock = std::function<int64_t()>;

  MaintenanceService(MaintenanceOptions options, TelemetryStore* store, StateStore* state, DiskGuard* guard,
                     Clock clock = nullptr);
  ~MaintenanceService();

  void Start() EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);

  //! One maintenance pass, now (the thread's, or a test's).
  MaintenanceReport RunOnce() EXCLUDES(pass_mu_);

  struct Stats {
    uint64_t passes = 0;
    std::array<uint64_t, kSignalCount> retention_deleted{0, 0, 0};  // since start
    std::array<uint64_t, kSignalCount> budget_deleted{0, 0, 0};
    uint64_t live_bytes = 0;  // at the end of the last pass
    double last_pass_seconds = 0;
    double longest_delete_seconds = 0;  // since start
    double longest_reclaim_seconds = 0;
  };
  Stats GetStats() EXCLUDES(stats_mu_);
  const MaintenanceOptions& options() const { return options_; }

 private:
  void RunPasses() EXCLUDES(mu_);
  void WatchDisk() EXCLUDES(mu_);
  //! Waits until `deadline` or Stop(); false once stopping.
  bool SleepUntil(std::chrono::steady_clock::time_point deadline) EXCLUDES(mu_);
  //! Logs `s` under `what` when it differs from the last status logged there.
  void Note(std::string* last, const char* what, const Status& s) REQUIRES(pass_mu_);
  //! The store's DeleteBefore / ReclaimSpace, timed into `report`.
  Result<uint64_t> Delete(Signal signal, const ProjectSet& projects, int64_t before_ns, MaintenanceReport* report)
      REQUIRES(pass_mu_);
  Status Reclaim(MaintenanceReport* report) REQUIRES(pass_mu_);
  Status ApplyRetention(MaintenanceReport* report) REQUIRES(pass_mu_);
  Status ApplyBudget(MaintenanceReport* report) REQUIRES(pass_mu_);

  const MaintenanceOptions options_;
  TelemetryStore* const store_;
  StateStore* const state_;
  DiskGuard* const guard_;
  const Clock clock_;

  Mutex mu_;
  CondVar cv_{&mu_};
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread pass_thread_;
  std::thread disk_thread_;  // its own thread: a long pass must not delay the floor

  Mutex pass_mu_;  // held for a whole pass: passes never overlap
  std::string last_retention_error_ GUARDED_BY(pass_mu_);
  std::string last_budget_error_ GUARDED_BY(pass_mu_);
  std::string last_reclaim_error_ GUARDED_BY(pass_mu_);

  Mutex stats_mu_;
  Stats stats_ GUARDED_BY(stats_mu_);
};

}  // namespace sightline
