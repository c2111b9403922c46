#include "maintenance/maintenance_service.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "common/thread_name.h"

namespace sightline {

namespace {

int64_t SystemNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Counts(const std::array<uint64_t, kSignalCount>& n) {
  return fmt::format("{} spans, {} logs, {} metric points", n[0], n[1], n[2]);
}

bool Any(const std::array<uint64_t, kSignalCount>& n) { return n[0] + n[1] + n[2] > 0; }

}  // namespace

MaintenanceService::MaintenanceService(MaintenanceOptions options, TelemetryStore* store, StateStore* state,
                                       DiskGuard* guard, Clock clock)
    : options_(std::move(options)),
      store_(store),
      state_(state),
      guard_(guard),
      clock_(clock ? std::move(clock) : Clock(SystemNowNs)) {}

MaintenanceService::~MaintenanceService() { Stop(); }

void MaintenanceService::Start() {
  MutexLock lock(&mu_);
  if (pass_thread_.joinable() || stopping_) return;
  if (guard_ != nullptr) guard_->Check();  // the floor holds from the first request on
  disk_thread_ = std::thread([this] {
    NameThisThread("sl-disk-floor");
    WatchDisk();
  });
  pass_thread_ = std::thread([this] {
    NameThisThread("sl-maintain");
    RunPasses();
  });
}

void MaintenanceService::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    cv_.SignalAll();
  }
  if (pass_thread_.joinable()) pass_thread_.join();
  if (disk_thread_.joinable()) disk_thread_.join();
}

bool MaintenanceService::SleepUntil(std::chrono::steady_clock::time_point deadline) {
  MutexLock lock(&mu_);
  while (!stopping_) {
    if (!cv_.WaitUntil(&mu_, deadline)) break;
  }
  return !stopping_;
}

void MaintenanceService::WatchDisk() {
  if (guard_ == nullptr) return;
  const auto every = std::chrono::milliseconds(std::max<int64_t>(1, options_.disk_check_interval_ms));
  while (SleepUntil(std::chrono::steady_clock::now() + every)) guard_->Check();
}

void MaintenanceService::RunPasses() {
  const auto every = std::chrono::milliseconds(std::max<int64_t>(1, options_.interval_ms));
  do {
    (void)RunOnce();
  } while (SleepUntil(std::chrono::steady_clock::now() + every));
}

void MaintenanceService::Note(std::string* last, const char* what, const Status& s) {
  // Unavailable messages carry changing byte counts; their code and first
  // words say enough to tell a new condition from the same one again.
  const std::string key = s.ok() ? "" : s.ToString().substr(0, 60);
  if (key == *last) return;
  if (s.ok()) {
    spdlog::info("maintenance: {} works again", what);
  } else {
    spdlog::warn("maintenance: {} failed (logged again only when this changes): {}", what, s.ToString());
  }
  *last = key;
}

Result<uint64_t> MaintenanceService::Delete(Signal signal, const ProjectSet& projects, int64_t before_ns,
                                            MaintenanceReport* report) {
  const auto started = std::chrono::steady_clock::now();
  Result<uint64_t> deleted = store_->DeleteBefore(signal, projects, before_ns);
  report->longest_delete_seconds =
      std::max(report->longest_delete_seconds,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return deleted;
}

Status MaintenanceService::Reclaim(MaintenanceReport* report) {
  const auto started = std::chrono::steady_clock::now();
  Status reclaimed = store_->ReclaimSpace();
  report->longest_reclaim_seconds =
      std::max(report->longest_reclaim_seconds,
               std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
  return reclaimed;
}

Status MaintenanceService::ApplyRetention(MaintenanceReport* report) {
  Result<std::vector<RetentionRecord>> records = state_->ListRetention();
  // Without the overrides, the defaults could delete what a project keeps
  // longer: skip retention this pass rather than guess.
  if (!records.ok()) return records.status();
  Result<RetentionPolicy> policy = RetentionPolicy::Make(options_.retention_seconds, *records);
  if (!policy.ok()) return policy.status();
  const int64_t chunk_ns = options_.chunk_seconds * kNanosPerSecond;
  for (const PlannedDelete& d : PlanRetention(*policy, clock_(), chunk_ns)) {
    Result<uint64_t> deleted = Delete(d.signal, d.projects, d.before_ns, report);
    if (!deleted.ok()) return deleted.status();
    report->retention_deleted[static_cast<int>(d.signal)] += *deleted;
    if (options_.rollup_retention_seconds > 0) {
      // The rollups last as long as the longer of the two retentions.
      const int64_t rollups_before =
          std::min(d.before_ns, AlignDown(clock_() - options_.rollup_retention_seconds * kNanosPerSecond, chunk_ns));
      SL_RETURN_IF_ERROR(store_->ExpireRollups(d.signal, d.projects, rollups_before));
    }
  }
  return Status::Ok();
}

Status MaintenanceService::ApplyBudget(MaintenanceReport* report) {
  const int64_t chunk_ns = options_.chunk_seconds * kNanosPerSecond;
  for (int step = 0;; ++step) {
    Result<StoreFootprint> footprint = store_->Footprint();
    if (!footprint.ok()) return footprint.status();
    report->live_bytes = footprint->live_bytes();
    if (options_.max_disk_bytes == 0 || footprint->live_bytes() <= options_.max_disk_bytes) return Status::Ok();
    if (step == options_.max_budget_steps) {
      return Status::Unavailable(fmt::format(
          "still {} live bytes, over the budget of {} (--max-disk-bytes), after dropping {} chunks; the next pass "
          "goes on",
          footprint->live_bytes(), options_.max_disk_bytes, step));
    }
    std::array<std::optional<int64_t>, kSignalCount> oldest;
    for (int s = 0; s < kSignalCount; ++s) {
      Result<std::optional<int64_t>> t = store_->OldestTime(Signal(s));
      if (!t.ok()) return t.status();
      oldest[s] = *t;
    }
    std::optional<int64_t> cutoff = BudgetCutoff(oldest, chunk_ns);
    if (!cutoff) {
      return Status::Unavailable(fmt::format("{} live bytes are over the budget of {} with no rows left to drop",
                                             footprint->live_bytes(), options_.max_disk_bytes));
    }
    for (int s = 0; s < kSignalCount; ++s) {
      Result<uint64_t> deleted = Delete(Signal(s), ProjectSet::All(), *cutoff, report);
      if (!deleted.ok()) return deleted.status();
      report->budget_deleted[s] += *deleted;
      // The budget drops the oldest data first, rollups kept longer too.
      if (options_.rollup_retention_seconds > 0) {
        SL_RETURN_IF_ERROR(store_->ExpireRollups(Signal(s), ProjectSet::All(), *cutoff));
      }
    }
    ++report->budget_steps;
    // Until the space is reclaimed the live bytes cannot fall; dropping more
    // chunks would only delete data without making room.
    SL_RETURN_IF_ERROR(Reclaim(report));
  }
}

MaintenanceReport MaintenanceService::RunOnce() {
  MutexLock pass(&pass_mu_);
  const auto started = std::chrono::steady_clock::now();
  MaintenanceReport report;
  auto keep_first_error = [&report](const Status& s) {
    if (report.status.ok() && !s.ok()) report.status = s;
  };
  Status retention = ApplyRetention(&report);
  Note(&last_retention_error_, "retention", retention);
  keep_first_error(retention);
  if (Any(report.retention_deleted)) {
    Status reclaimed = Reclaim(&report);
    Note(&last_reclaim_error_, "reclaiming space", reclaimed);
    keep_first_error(reclaimed);
  }
  Status budget = ApplyBudget(&report);
  Note(&last_budget_error_, "disk budget", budget);
  keep_first_error(budget);
  if (Any(report.retention_deleted)) {
    spdlog::info("maintenance: deleted {} past their retention", Counts(report.retention_deleted));
  }
  if (report.budget_steps > 0) {
    spdlog::warn("maintenance: dropped the oldest {} chunks ({}) to keep the database under {} bytes; now {}",
                 report.budget_steps, Counts(report.budget_deleted), options_.max_disk_bytes, report.live_bytes);
  }
  MutexLock lock(&stats_mu_);
  ++stats_.passes;
  for (int s = 0; s < kSignalCount; ++s) {
    stats_.retention_deleted[s] += report.retention_deleted[s];
    stats_.budget_deleted[s] += report.budget_deleted[s];
  }
  stats_.live_bytes = report.live_bytes;
  stats_.longest_delete_seconds = std::max(stats_.longest_delete_seconds, report.longest_delete_seconds);
  stats_.longest_reclaim_seconds = std::max(stats_.longest_reclaim_seconds, report.longest_reclaim_seconds);
  stats_.last_pass_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return report;
}

MaintenanceService::Stats MaintenanceService::GetStats() {
  MutexLock lock(&stats_mu_);
  return stats_;
}

}  // namespace sightline
