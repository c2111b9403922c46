#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "common/mutex.h"
#include "common/status.h"

namespace sightline {

//! Bounds the memory and concurrency of ingest before a body is read
//! (DESIGN.md "admission control"). A request is admitted with the bytes it
//! will hold (its Content-Length, or the body limit when unknown), and grows
//! its reservation after decompression; everything is released when its
//! Ticket is destroyed, i.e. after the response is sent. Refusals are
//! Unavailable so clients retry (503 + Retry-After). Thread-safe.
class AdmissionGate {
 public:
  struct Limits {
    size_t max_inflight_bytes = 256u << 20;
    int max_inflight_requests = 64;
  };

  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept : gate_(other.gate_), bytes_(other.bytes_) { other.gate_ = nullptr; }
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { Release(); }
    //! Reserves `bytes` more; Unavailable (and no change) if over the limit.
    Status Grow(size_t bytes);
    size_t bytes() const { return bytes_; }
    bool valid() const { return gate_ != nullptr; }

   private:
    friend class AdmissionGate;
    Ticket(AdmissionGate* gate, size_t bytes) : gate_(gate), bytes_(bytes) {}
    void Release();
    AdmissionGate* gate_ = nullptr;
    size_t bytes_ = 0;
  };

  explicit AdmissionGate(Limits limits) : limits_(limits) {}

  Result<Ticket> Admit(size_t bytes) EXCLUDES(mu_);
  //! After Close() every Admit is refused ("shutting down").
  void Close() EXCLUDES(mu_);
  //! Blocks until no ticket is outstanding or the timeout passes; true if drained.
  bool WaitIdle(int64_t timeout_ms) EXCLUDES(mu_);

  struct Stats {
    size_t inflight_bytes = 0;
    int inflight_requests = 0;
    size_t peak_inflight_bytes = 0;
    uint64_t admitted = 0;
    uint64_t rejected_bytes = 0;     // refused: in-flight bytes budget
    uint64_t rejected_requests = 0;  // refused: concurrent requests limit
  };
  Stats GetStats() EXCLUDES(mu_);
  const Limits& limits() const { return limits_; }

 private:
  bool TryGrow(size_t bytes) EXCLUDES(mu_);
  void Release(size_t bytes) EXCLUDES(mu_);

  const Limits limits_;
  Mutex mu_;
  CondVar idle_cv_{&mu_};  // signalled when the last ticket is released
  size_t inflight_bytes_ GUARDED_BY(mu_) = 0;
  size_t peak_inflight_bytes_ GUARDED_BY(mu_) = 0;
  int inflight_requests_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
  uint64_t admitted_ GUARDED_BY(mu_) = 0;
  uint64_t rejected_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t rejected_requests_ GUARDED_BY(mu_) = 0;
};

}  // namespace sightline
