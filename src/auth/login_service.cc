#include "auth/login_service.h"

#include <algorithm>
#include <utility>

#include "common/thread_name.h"

namespace sightline {

LoginService::LoginService(LoginOptions options, Authenticator* auth, LoginThrottle::Clock clock)
    : options_(options), auth_(auth), throttle_(options.throttle, std::move(clock)) {
  thread_ = std::thread([this] {
    NameThisThread("sl-login");
    Run();
  });
}

LoginService::~LoginService() { Stop(); }

void LoginService::Submit(std::string_view address, std::string username, std::string password,
                          int64_t session_ttl_seconds, Done done) {
  std::string key = LoginThrottle::KeyFor(address);
  LoginOutcome refused;
  {
    MutexLock lock(&mu_);
    if (stopping_) {
      refused.status = Status::Unavailable("shutting down");
    } else if (int64_t wait = throttle_.Begin(key); wait > 0) {
      ++stats_.throttled;
      refused.status = Status::ResourceExhausted("too many failed logins: try again in " + std::to_string(wait) + " s");
      refused.retry_after_seconds = wait;
    } else if (queue_.size() >= static_cast<size_t>(std::max(1, options_.max_queued))) {
      throttle_.Abandoned(key);
      ++stats_.queue_full;
      refused.status = Status::ResourceExhausted("too many logins at once: try again in 1 s");
      refused.retry_after_seconds = 1;
    } else {
      queue_.push_back(
          Attempt{std::move(key), std::move(username), std::move(password), session_ttl_seconds, std::move(done)});
      cv_.Signal();
      return;
    }
  }
  done(std::move(refused));
}

void LoginService::Run() {
  for (;;) {
    Attempt attempt;
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !stopping_) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, nothing left
      attempt = std::move(queue_.front());
      queue_.pop_front();
    }
    Check(attempt);
  }
}

void LoginService::Check(Attempt& attempt) {
  LoginOutcome out;
  auto session = auth_->Login(attempt.username, attempt.password, attempt.session_ttl_seconds);
  {
    MutexLock lock(&mu_);
    if (session.ok()) {
      throttle_.Succeeded(attempt.key);
      ++stats_.succeeded;
      out.session_id = std::move(session.value());
    } else if (session.status().code() == StatusCode::kUnauthenticated) {
      throttle_.Failed(attempt.key);
      ++stats_.failed;
      out.status = session.status();
    } else {
      throttle_.Abandoned(attempt.key);
      out.status = Status::Unavailable(session.status().message());
    }
  }
  attempt.done(std::move(out));
}

void LoginService::Stop() {
  std::deque<Attempt> left;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    left.swap(queue_);
    for (const Attempt& a : left) throttle_.Abandoned(a.key);
    cv_.SignalAll();
  }
  for (Attempt& a : left) a.done(LoginOutcome{Status::Unavailable("shutting down"), "", 0});
  if (thread_.joinable()) thread_.join();
}

LoginService::Stats LoginService::GetStats() {
  MutexLock lock(&mu_);
  return stats_;
}

}  // namespace sightline
