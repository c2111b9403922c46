#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>

#include "common/mutex.h"
#include "common/status.h"

namespace sightline {

//! Bounds the memory and concurrency of ingest before a body is read
//! (DESIGN.md "admission control"). A request is admitted with the bytes it
//! will hold (its Content-Length, or nothing yet for a chunked body, which is
//! charged as its chunks arrive), and grows its reservation after
//! decompression; everything is released when its Ticket is destroyed, i.e.
//! after the response is sent. Refusals are Unavailable so clients retry
//! (503 + Retry-After). Thread-safe.
//!
//! Fair shares: each request belongs to a project. A project is *active*
//! while it has requests in flight or asked within `active_window_ms`; with N
//! active projects, one project may hold at most 1/N of each budget (bytes and
//! requests) once it has a request in flight. So a project alone may use the
//! whole budget, and one that floods cannot keep the others out for longer
//! than its in-flight requests last. The floor: a project with nothing in
//! flight is admitted whenever the global budget has room, so every project
//! gets at least one request however many are active.
class AdmissionGate {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;

  struct Limits {
    size_t max_inflight_bytes = 256u << 20;
    int max_inflight_requests = 64;
    //! How long after its last request a project still counts for fair shares.
    int64_t active_window_ms = 10000;
  };

  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept : gate_(other.gate_), project_(other.project_), bytes_(other.bytes_) {
      other.gate_ = nullptr;
    }
    Ticket& operator=(Ticket&& other) noexcept;
    Ticket(const Ticket&) = delete;
    Ticket& operator=(const Ticket&) = delete;
    ~Ticket() { Release(); }
    //! Reserves `bytes` more; Unavailable (and no change) if over the global
    //! budget or over its project's share.
    Status Grow(size_t bytes);
    size_t bytes() const { return bytes_; }
    bool valid() const { return gate_ != nullptr; }

   private:
    friend class AdmissionGate;
    Ticket(AdmissionGate* gate, int64_t project, size_t bytes) : gate_(gate), project_(project), bytes_(bytes) {}
    void Release();
    AdmissionGate* gate_ = nullptr;
    int64_t project_ = 0;
    size_t bytes_ = 0;
  };

  //! `clock` defaults to steady_clock::now (tests pass their own).
  explicit AdmissionGate(Limits limits, Clock clock = nullptr);

  //! Admits a request of `project_id` (requests without a project may all use
  //! 0: they then share one account) holding `bytes`.
  Result<Ticket> Admit(size_t bytes, int64_t project_id = 0) EXCLUDES(mu_);
  //! After Close() every Admit is refused ("shutting down").
  void Close() EXCLUDES(mu_);
  //! Blocks until no ticket is outstanding or the timeout passes; true if drained.
  bool WaitIdle(int64_t timeout_ms) EXCLUDES(mu_);
  //! How overloaded the gate is, 0..1: the share of recent admissions it
  //! refused (a request refused as it grows counts as refused), each weighted
  //! by exp(-age / kPressureDecay) and smoothed by one admitted request, so a
  //! lone refusal after a calm spell is light pressure and a gate that refuses
  //! nearly everything is near 1. Retry-After grows with it.
  double Pressure() EXCLUDES(mu_);
  static constexpr std::chrono::seconds kPressureDecay{5};

  struct Stats {
    size_t inflight_bytes = 0;
    int inflight_requests = 0;
    size_t peak_inflight_bytes = 0;
    uint64_t admitted = 0;
    uint64_t rejected_bytes = 0;          // refused: in-flight bytes budget
    uint64_t rejected_requests = 0;       // refused: concurrent requests limit
    uint64_t rejected_project_share = 0;  // refused: the project holds its fair share
    int active_projects = 0;
    double pressure = 0;  // Pressure()
  };
  Stats GetStats() EXCLUDES(mu_);
  const Limits& limits() const { return limits_; }

 private:
  struct ProjectUse {
    size_t bytes = 0;
    int requests = 0;
    std::chrono::steady_clock::time_point last_seen;
  };
  //! A project's share of each budget while `active` projects are active.
  struct Share {
    size_t bytes;
    int requests;
  };

  //! Counts the active projects, forgetting idle ones past the window.
  int ActiveProjectsLocked(std::chrono::steady_clock::time_point now) REQUIRES(mu_);
  Share ShareLocked(int active) const REQUIRES(mu_);
  Status TryGrow(int64_t project, size_t bytes) EXCLUDES(mu_);
  void Release(int64_t project, size_t bytes) EXCLUDES(mu_);
  Status BudgetExhausted() const;
  //! Records an admission attempt (`attempt`) and/or a refusal for Pressure().
  void NoteLocked(std::chrono::steady_clock::time_point now, bool attempt, bool refused) REQUIRES(mu_);
  double PressureLocked() const REQUIRES(mu_);

  const Limits limits_;
  const Clock clock_;
  Mutex mu_;
  CondVar idle_cv_{&mu_};  // signalled when the last ticket is released
  size_t inflight_bytes_ GUARDED_BY(mu_) = 0;
  size_t peak_inflight_bytes_ GUARDED_BY(mu_) = 0;
  int inflight_requests_ GUARDED_BY(mu_) = 0;
  bool closed_ GUARDED_BY(mu_) = false;
  uint64_t admitted_ GUARDED_BY(mu_) = 0;
  uint64_t rejected_bytes_ GUARDED_BY(mu_) = 0;
  uint64_t rejected_requests_ GUARDED_BY(mu_) = 0;
  uint64_t rejected_project_share_ GUARDED_BY(mu_) = 0;
  std::unordered_map<int64_t, ProjectUse> projects_ GUARDED_BY(mu_);
  // Decayed counts behind Pressure(), as of noted_at_.
  double recent_attempts_ GUARDED_BY(mu_) = 0;
  double recent_refusals_ GUARDED_BY(mu_) = 0;
  std::chrono::steady_clock::time_point noted_at_ GUARDED_BY(mu_);
};

}  // namespace sightline
