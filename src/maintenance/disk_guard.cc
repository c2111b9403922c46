#include "maintenance/disk_guard.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace sightline {

namespace {

std::string Mib(uint64_t bytes) { return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20)); }

}  // namespace

DiskGuard::DiskGuard(std::string data_dir, uint64_t min_free_bytes, int retry_after_seconds, FreeSpace free_space)
    : data_dir_(std::move(data_dir)),
      min_free_bytes_(min_free_bytes),
      resume_bytes_(min_free_bytes == 0 ? 0 : min_free_bytes + std::max<uint64_t>(min_free_bytes / 10, 1u << 20)),
      retry_after_seconds_(retry_after_seconds),
      free_space_(std::move(free_space)) {}

DiskGuard::DiskGuard(std::string data_dir, uint64_t min_free_bytes, int retry_after_seconds)
    : DiskGuard(data_dir, min_free_bytes, retry_after_seconds, [data_dir] { return GetDiskSpace(data_dir); }) {}

namespace {

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

void DiskGuard::Check() {
  if (min_free_bytes_ == 0) return;
  sampled_at_ns_.store(SteadyNowNs(), std::memory_order_relaxed);
  Result<DiskSpace> space = free_space_();
  MutexLock lock(&mu_);
  if (!space.ok()) {
    if (!sample_failed_) spdlog::warn("disk guard: cannot read free space: {}", space.status().ToString());
    sample_failed_ = true;
    return;
  }
  sample_failed_ = false;
  available_.store(space->available_bytes, std::memory_order_relaxed);
  const bool was_low = low_.load(std::memory_order_relaxed);
  if (!was_low && space->available_bytes < min_free_bytes_) {
    reason_ = "free disk space in " + data_dir_ + " is " + Mib(space->available_bytes) + ", below the floor of " +
              Mib(min_free_bytes_) + " (--min-free-disk-bytes); ingest resumes above " + Mib(resume_bytes_) +
              "; reads go on";
    low_.store(true, std::memory_order_relaxed);
    spdlog::error("refusing ingest: {}", reason_);
  } else if (was_low && space->available_bytes >= resume_bytes_) {
    low_.store(false, std::memory_order_relaxed);
    reason_.clear();
    spdlog::info("resuming ingest: free disk space in {} is back to {}", data_dir_, Mib(space->available_bytes));
  }
}

Status DiskGuard::Ready() {
  constexpr int64_t kFreshNs = 20'000'000;
  if (min_free_bytes_ != 0 && SteadyNowNs() - sampled_at_ns_.load(std::memory_order_relaxed) > kFreshNs) Check();
  if (!low_.load(std::memory_order_relaxed)) return Status::Ok();
  MutexLock lock(&mu_);
  return Status::Unavailable("not accepting data: " + reason_);
}

std::string DiskGuard::reason() const {
  MutexLock lock(&mu_);
  return reason_;
}

}  // namespace sightline
