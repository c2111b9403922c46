#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "common/assert.h"

// Clang thread-safety annotations (leveldb/abseil style); no-ops under g++.
// The clang builds (presets tsan and fuzz) compile every target with
// -Wthread-safety -Werror, so these are checked, not decoration.
#if defined(__clang__)
#define SL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SL_THREAD_ANNOTATION(x)
#endif
#define GUARDED_BY(x) SL_THREAD_ANNOTATION(guarded_by(x))
#define PT_GUARDED_BY(x) SL_THREAD_ANNOTATION(pt_guarded_by(x))
#define REQUIRES(...) SL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) SL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) SL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) SL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define CAPABILITY(x) SL_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY SL_THREAD_ANNOTATION(scoped_lockable)

namespace sightline {

class CondVar;

//! std::mutex the compiler can reason about (-Wthread-safety in the clang builds).
//! There is deliberately no way to reach the std::mutex: a lock taken around the
//! annotations would be invisible to the analysis. Wait on a CondVar instead.
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }

 private:
  friend class CondVar;
  std::mutex mu_;
};

//! Holds a Mutex for its scope.
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

//! A condition variable bound to one Mutex for its lifetime (leveldb's
//! port::CondVar). Waiters loop on their condition in their own code, where
//! -Wthread-safety checks every guarded read:
//!
//!   MutexLock lock(&mu_);
//!   while (queue_.empty()) cv_.Wait(&mu_);
//!
//! Each wait names the mutex again so that clang can check the caller holds it
//! (the analysis cannot tell that a pointer stored in the CondVar is the
//! caller's mutex, abseil's CondVar takes it the same way); a debug check
//! verifies it is the bound one. Signal and SignalAll may be called with or
//! without the mutex held. Thread-safe.
class CondVar {
 public:
  using Clock = std::chrono::steady_clock;

  explicit CondVar(Mutex* mu) : mu_(mu) {}
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  //! Releases `mu`, blocks until signalled (or a spurious wakeup), re-acquires it.
  void Wait(Mutex* mu) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock = Adopt(mu);
    cv_.wait(lock);
    lock.release();
  }

  //! As Wait, but gives up at `deadline`: false once it has passed. Loop on an
  //! absolute deadline so spurious wakeups do not extend the wait:
  //!   while (!ready_) { if (!cv_.WaitUntil(&mu_, deadline)) break; }
  bool WaitUntil(Mutex* mu, Clock::time_point deadline) REQUIRES(mu) {
    std::unique_lock<std::mutex> lock = Adopt(mu);
    bool signalled = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }

  //! Wakes one waiter.
  void Signal() { cv_.notify_one(); }
  //! Wakes every waiter.
  void SignalAll() { cv_.notify_all(); }

 private:
  // The caller holds `mu`; the unique_lock adopts it for the wait and is
  // released (not unlocked) afterwards, so ownership stays with the caller.
  std::unique_lock<std::mutex> Adopt(Mutex* mu) {
    SL_DCHECK(mu == mu_);
    return std::unique_lock<std::mutex>(mu->mu_, std::adopt_lock);
  }

  Mutex* const mu_;
  std::condition_variable cv_;
};

}  // namespace sightline
