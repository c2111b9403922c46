#pragma once

// Logins off the network threads. A password check is PBKDF2 at 100k
// iterations (tens of milliseconds of CPU); run on the io threads, a flood of
// wrong passwords would stall OTLP ingest on both ports. Here each attempt
// passes the LoginThrottle, then waits in a bounded queue for the one hashing
// thread; a full queue or a throttled client is answered at once with
// ResourceExhausted and the seconds to wait (429 + Retry-After), without
// hashing anything.

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <string_view>
#include <thread>

#include "auth/authenticator.h"
#include "auth/login_throttle.h"
#include "common/mutex.h"
#include "common/status.h"

namespace sightline {

struct LoginOptions {
  LoginThrottleOptions throttle;
  //! Attempts waiting for the hashing thread; one more gets 429.
  int max_queued = 8;
};

struct LoginOutcome {
  //! Ok; Unauthenticated (wrong password or unknown user); ResourceExhausted
  //! (throttled or queue full: retry after `retry_after_seconds`);
  //! Unavailable (stopping, or the state store failed).
  Status status;
  std::string session_id;  // plaintext, for the cookie; set when ok
  int64_t retry_after_seconds = 0;
};

//! Thread-safe. The hashing thread starts in the constructor; Stop() (or the
//! destructor) answers every queued attempt Unavailable and joins it. Does
//! not own the authenticator, which must outlive Stop().
class LoginService {
 public:
  using Done = std::function<void(LoginOutcome)>;

  LoginService(LoginOptions options, Authenticator* auth, LoginThrottle::Clock clock = nullptr);
  ~LoginService();
  LoginService(const LoginService&) = delete;
  LoginService& operator=(const LoginService&) = delete;

  //! Checks `username`/`password` for a client at `address` (its IP, as
  //! text). `done` is called exactly once: before Submit returns when the
  //! attempt is refused without a hash, else later on the hashing thread.
  void Submit(std::string_view address, std::string username, std::string password, int64_t session_ttl_seconds,
              Done done) EXCLUDES(mu_);

  //! Idempotent; not to be called from two threads at once.
  void Stop() EXCLUDES(mu_);

  struct Stats {
    uint64_t succeeded = 0;
    uint64_t failed = 0;     // wrong password or unknown user
    uint64_t throttled = 0;  // refused by the LoginThrottle
    uint64_t queue_full = 0;
  };
  Stats GetStats() EXCLUDES(mu_);

 private:
  struct Attempt {
    std::string key;  // LoginThrottle::KeyFor(address)
    std::string username;
    std::string password;
    int64_t session_ttl_seconds = 0;
    Done done;
  };

  void Run() EXCLUDES(mu_);
  void Check(Attempt& attempt) EXCLUDES(mu_);

  const LoginOptions options_;
  Authenticator* const auth_;
  LoginThrottle throttle_;
  Mutex mu_;
  CondVar cv_{&mu_};
  std::deque<Attempt> queue_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  Stats stats_ GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace sightline
