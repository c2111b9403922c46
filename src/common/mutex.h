#pragma once

#include <condition_variable>
#include <mutex>

// Clang thread-safety annotations (leveldb/abseil style); no-ops under g++.
#if defined(__clang__)
#define SL_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define SL_THREAD_ANNOTATION(x)
#endif
#define GUARDED_BY(x) SL_THREAD_ANNOTATION(guarded_by(x))
#define REQUIRES(...) SL_THREAD_ANNOTATION(requires_capability(__VA_ARGS__))
#define EXCLUDES(...) SL_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
#define ACQUIRE(...) SL_THREAD_ANNOTATION(acquire_capability(__VA_ARGS__))
#define RELEASE(...) SL_THREAD_ANNOTATION(release_capability(__VA_ARGS__))
#define CAPABILITY(x) SL_THREAD_ANNOTATION(capability(x))
#define SCOPED_CAPABILITY SL_THREAD_ANNOTATION(scoped_lockable)

namespace sightline {

//! std::mutex the compiler can reason about (-Wthread-safety in the clang build).
class CAPABILITY("mutex") Mutex {
 public:
  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  std::mutex& native() { return mu_; }

 private:
  std::mutex mu_;
};

class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : lock_(mu->native()) {}
  ~MutexLock() RELEASE() {}
  //! For condition variables: the underlying lock.
  std::unique_lock<std::mutex>& native() { return lock_; }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace sightline
