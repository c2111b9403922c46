#pragma once

// The free-space floor of the data directory. Below `min_free_bytes` ingest
// is refused (503 + Retry-After, before the body is read) so that the last
// free bytes go to what keeps the data safe: DuckDB checkpoints and the WAL
// of requests already admitted. Reads go on. /readyz reports it.
//
// The maintenance thread samples the filesystem (Check) about once a second,
// and a request samples it again when the last sample is older than 20 ms
// (statvfs costs about a microsecond): between two seconds' samples a fast
// sender could otherwise fill the floor and the disk. The state is logged
// once when it is entered and once when it is left, never per request.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "common/disk_space.h"
#include "common/mutex.h"
#include "common/status.h"
#include "ingest/ingest_readiness.h"

namespace sightline {

//! Thread-safe.
class DiskGuard final : public IngestReadiness {
 public:
  using FreeSpace = std::function<Result<DiskSpace>()>;

  //! `min_free_bytes` 0 turns the floor off. Ingest resumes once free space
  //! is back above the floor by a margin (a tenth of it, at least 1 MiB), so
  //! it does not flap at the boundary.
  DiskGuard(std::string data_dir, uint64_t min_free_bytes, int retry_after_seconds, FreeSpace free_space);
  //! Sampling statvfs on `data_dir`.
  DiskGuard(std::string data_dir, uint64_t min_free_bytes, int retry_after_seconds);

  //! Samples free space and updates the verdict. A failed sample keeps the
  //! last verdict (and is logged once).
  void Check() EXCLUDES(mu_);

  //! The verdict, from a sample at most 20 ms old.
  Status Ready() override EXCLUDES(mu_);
  int retry_after_seconds() const override { return retry_after_seconds_; }

  bool low() const { return low_.load(std::memory_order_relaxed); }
  //! Bytes free at the last sample.
  uint64_t available_bytes() const { return available_.load(std::memory_order_relaxed); }
  uint64_t min_free_bytes() const { return min_free_bytes_; }
  uint64_t resume_bytes() const { return resume_bytes_; }
  //! Why ingest is refused ("" while it is not).
  std::string reason() const EXCLUDES(mu_);

 private:
  const std::string data_dir_;
  const uint64_t min_free_bytes_;
  const uint64_t resume_bytes_;
  const int retry_after_seconds_;
  const FreeSpace free_space_;
  std::atomic<bool> low_{false};
  std::atomic<uint64_t> available_{0};
  std::atomic<int64_t> sampled_at_ns_{0};  // steady clock of the last Check()
  mutable Mutex mu_;
  std::string reason_ GUARDED_BY(mu_);
  bool sample_failed_ GUARDED_BY(mu_) = false;
};

}  // namespace sightline
