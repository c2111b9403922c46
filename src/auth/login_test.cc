// Logins: the LoginThrottle's per-address and global bounds on an injected
// clock (what is refused, for how long, and what frees it), the keys
// addresses are counted under, and the LoginService: checks run on its own
// thread, a full queue and a throttled client are answered at once without a
// hash, and Stop answers whatever still waits.

#include <atomic>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "auth/authenticator.h"
#include "auth/login_service.h"
#include "auth/login_throttle.h"
#include "auth/passwords.h"
#include "common/mutex.h"
#include "common/testing/temp_dir.h"
#include "state/sqlite/sqlite_state_store.h"
#include "state/testing/forwarding_state_store.h"

namespace sightline {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class FakeClock {
 public:
  LoginThrottle::Clock fn() {
    return [this] { return std::chrono::steady_clock::time_point(milliseconds(now_ms_.load())); };
  }
  void Advance(int64_t ms) { now_ms_ += ms; }

 private:
  std::atomic<int64_t> now_ms_{9'000'000};
};

LoginThrottleOptions PerAddressOnly(int max_failures, int64_t window_s) {
  LoginThrottleOptions o;
  o.max_failures_per_address = max_failures;
  o.failure_window_s = window_s;
  o.global_failures_per_s = 0;
  return o;
}

LoginThrottleOptions GlobalOnly(double per_s) {
  LoginThrottleOptions o;
  o.max_failures_per_address = 0;
  o.global_failures_per_s = per_s;
  return o;
}

//! Begin, then Failed: one wrong password from `key`. Returns Begin's answer.
int64_t FailOnce(LoginThrottle& t, const std::string& key) {
  int64_t wait = t.Begin(key);
  if (wait == 0) t.Failed(key);
  return wait;
}

// ------------------------------------------------------------- throttle --

TEST(LoginThrottleTest, AnAddressIsRefusedForTheRestOfItsWindowAfterTooManyFailures) {
  FakeClock clock;
  LoginThrottle t(PerAddressOnly(3, 60), clock.fn());
  EXPECT_EQ(FailOnce(t, "10.0.0.1"), 0);
  clock.Advance(10'000);
  EXPECT_EQ(FailOnce(t, "10.0.0.1"), 0);
  EXPECT_EQ(FailOnce(t, "10.0.0.1"), 0);
  // Three failures, the first 10 s ago: refused for the 50 s left of the window.
  EXPECT_EQ(t.Begin("10.0.0.1"), 50);
  EXPECT_EQ(t.Begin("10.0.0.2"), 0) << "another address is not affected";
  t.Failed("10.0.0.2");
  clock.Advance(49'500);
  EXPECT_EQ(t.Begin("10.0.0.1"), 1) << "half a second left still says 1 s";
  clock.Advance(500);
  EXPECT_EQ(t.Begin("10.0.0.1"), 0) << "the window is over";
  t.Failed("10.0.0.1");
  EXPECT_EQ(FailOnce(t, "10.0.0.1"), 0);
  EXPECT_EQ(FailOnce(t, "10.0.0.1"), 0);
  EXPECT_EQ(t.Begin("10.0.0.1"), 60) << "a new window starts with the first failure after the old one";
}

TEST(LoginThrottleTest, ASuccessForgetsTheAddressesFailures) {
  FakeClock clock;
  LoginThrottle t(PerAddressOnly(3, 60), clock.fn());
  EXPECT_EQ(FailOnce(t, "a"), 0);
  EXPECT_EQ(FailOnce(t, "a"), 0);
  ASSERT_EQ(t.Begin("a"), 0);
  t.Succeeded("a");
  EXPECT_EQ(t.tracked(), 0u);
  EXPECT_EQ(FailOnce(t, "a"), 0);
  EXPECT_EQ(FailOnce(t, "a"), 0);
  EXPECT_EQ(FailOnce(t, "a"), 0);
  EXPECT_GT(t.Begin("a"), 0);
}

TEST(LoginThrottleTest, TheGlobalBudgetBoundsFailuresFromAllAddresses) {
  FakeClock clock;
  LoginThrottle t(GlobalOnly(2), clock.fn());  // 2 per second, bursts of 4
  for (int i = 0; i < 4; ++i) EXPECT_EQ(FailOnce(t, "10.0.1." + std::to_string(i)), 0) << i;
  EXPECT_EQ(t.Begin("10.0.1.99"), 1) << "the burst is spent, whichever address asks";
  clock.Advance(500);  // one failure's worth refilled
  EXPECT_EQ(FailOnce(t, "10.0.1.100"), 0);
  EXPECT_EQ(t.Begin("10.0.1.101"), 1);
  // A long pause refills to the burst, no further.
  clock.Advance(60'000);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(FailOnce(t, "10.0.2." + std::to_string(i)), 0) << i;
  EXPECT_GT(t.Begin("10.0.2.99"), 0);
}

TEST(LoginThrottleTest, SuccessesAndAbandonedAttemptsGiveTheBudgetBack) {
  FakeClock clock;
  LoginThrottle t(GlobalOnly(1), clock.fn());  // bursts of 2
  // Attempts in flight hold the budget: two may start, a third waits.
  ASSERT_EQ(t.Begin("a"), 0);
  ASSERT_EQ(t.Begin("b"), 0);
  EXPECT_GT(t.Begin("c"), 0);
  t.Succeeded("a");
  t.Abandoned("b");
  // Both came back: two more may start.
  EXPECT_EQ(t.Begin("c"), 0);
  EXPECT_EQ(t.Begin("d"), 0);
  EXPECT_GT(t.Begin("e"), 0);
}

TEST(LoginThrottleTest, AttemptsStillBeingCheckedCountAgainstTheAddress) {
  // A burst of attempts all let through before the first hash ends would
  // otherwise get past the bound: each counts from the moment it starts.
  FakeClock clock;
  LoginThrottle t(PerAddressOnly(3, 60), clock.fn());
  for (int i = 0; i < 3; ++i) ASSERT_EQ(t.Begin("a"), 0) << i;
  EXPECT_EQ(t.Begin("a"), 60) << "three attempts in flight: a fourth waits";
  // One of them got no verdict (the queue was full): its charge comes back.
  t.Abandoned("a");
  EXPECT_EQ(t.Begin("a"), 0);
  clock.Advance(10'000);
  EXPECT_EQ(t.Begin("a"), 50) << "the window still started with the first attempt";
}

TEST(LoginThrottleTest, ZeroDisablesABound) {
  FakeClock clock;
  LoginThrottle t(PerAddressOnly(0, 60), clock.fn());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(FailOnce(t, "a"), 0) << i;
  EXPECT_EQ(t.tracked(), 0u);
}

TEST(LoginThrottleTest, RememberedAddressesAreBounded) {
  FakeClock clock;
  LoginThrottleOptions o = PerAddressOnly(2, 60);
  o.max_tracked_addresses = 100;
  LoginThrottle t(o, clock.fn());
  for (int i = 0; i < 1000; ++i) FailOnce(t, "addr-" + std::to_string(i));
  EXPECT_EQ(t.tracked(), 100u);
  // Once their windows are over, the old entries make room for new ones.
  clock.Advance(60'000);
  FailOnce(t, "late-1");
  FailOnce(t, "late-1");
  EXPECT_EQ(t.tracked(), 1u);
  EXPECT_GT(t.Begin("late-1"), 0);
}

TEST(LoginThrottleTest, AddressesAreCountedByHostOrIpv6Slash64) {
  EXPECT_EQ(LoginThrottle::KeyFor("192.0.2.7"), "192.0.2.7");
  EXPECT_EQ(LoginThrottle::KeyFor("::ffff:192.0.2.7"), "192.0.2.7") << "IPv4-mapped IPv6 is the IPv4 host";
  EXPECT_EQ(LoginThrottle::KeyFor("2001:db8:1:2:3:4:5:6"), "2001:db8:1:2::/64");
  EXPECT_EQ(LoginThrottle::KeyFor("2001:db8:1:2:ffff::1"), "2001:db8:1:2::/64");
  EXPECT_NE(LoginThrottle::KeyFor("2001:db8:1:3::1"), LoginThrottle::KeyFor("2001:db8:1:2::1"));
  EXPECT_EQ(LoginThrottle::KeyFor("::1"), "::/64");
  EXPECT_EQ(LoginThrottle::KeyFor(""), "");
  EXPECT_EQ(LoginThrottle::KeyFor("not-an-address"), "not-an-address");
}

// -------------------------------------------------------------- service --

//! Forwards to a real store; FindUser (the first step of every check) can be
//! held until released, and records the thread it ran on.
class GatedStore final : public testing::ForwardingStateStore {
 public:
  explicit GatedStore(StateStore* inner) : ForwardingStateStore(inner) {}

  void Hold() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    held_ = true;
  }
  void Release() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    held_ = false;
    cv_.SignalAll();
  }
  //! Waits until `n` FindUser calls have started.
  void WaitForLookups(int n) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    while (lookups_ < n) cv_.Wait(&mu_);
  }
  int lookups() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return lookups_;
  }
  std::thread::id lookup_thread() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return lookup_thread_;
  }

  Result<std::optional<UserRecord>> FindUser(const std::string& u) override EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      ++lookups_;
      lookup_thread_ = std::this_thread::get_id();
      cv_.SignalAll();
      while (held_) cv_.Wait(&mu_);
    }
    return ForwardingStateStore::FindUser(u);
  }

 private:
  Mutex mu_;
  CondVar cv_{&mu_};
  bool held_ GUARDED_BY(mu_) = false;
  int lookups_ GUARDED_BY(mu_) = 0;
  std::thread::id lookup_thread_ GUARDED_BY(mu_);
};

class LoginServiceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = OpenSqliteStateStore(dir_.str());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s.value());
    ASSERT_TRUE(SetUserPassword(store_.get(), "admin", "right-password").ok());
    gated_ = std::make_unique<GatedStore>(store_.get());
    auth_ = std::make_unique<Authenticator>(AuthOptions{}, gated_.get());
  }

  //! Submits and returns a future of the outcome.
  std::future<LoginOutcome> Submit(LoginService& service, const std::string& address, const std::string& password) {
    auto promise = std::make_shared<std::promise<LoginOutcome>>();
    auto future = promise->get_future();
    service.Submit(address, "admin", password, 3600, [promise](LoginOutcome o) { promise->set_value(std::move(o)); });
    return future;
  }

  static bool Ready(std::future<LoginOutcome>& f) { return f.wait_for(seconds(0)) == std::future_status::ready; }

  testing::TempDir dir_{"sightline-login-test"};
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<GatedStore> gated_;
  std::unique_ptr<Authenticator> auth_;
};

TEST_F(LoginServiceTest, ChecksRunOnTheServicesThreadAndASuccessIsASession) {
  LoginService service({}, auth_.get());
  gated_->Hold();
  auto ok = Submit(service, "127.0.0.1", "right-password");
  gated_->WaitForLookups(1);
  // Submit has returned while the check is still held: it did not run here.
  EXPECT_FALSE(Ready(ok));
  EXPECT_NE(gated_->lookup_thread(), std::this_thread::get_id());
  gated_->Release();
  LoginOutcome out = ok.get();
  ASSERT_TRUE(out.status.ok()) << out.status.ToString();
  EXPECT_EQ(auth_->SessionUser(out.session_id).value(), std::optional<std::string>("admin"));

  LoginOutcome wrong = Submit(service, "127.0.0.1", "wrong-password").get();
  EXPECT_EQ(wrong.status.code(), StatusCode::kUnauthenticated);
  EXPECT_TRUE(wrong.session_id.empty());
  EXPECT_EQ(service.GetStats().succeeded, 1u);
  EXPECT_EQ(service.GetStats().failed, 1u);
}

TEST_F(LoginServiceTest, AFullQueueIsAnsweredAtOnceWithoutAHash) {
  LoginOptions o;
  o.max_queued = 2;
  o.throttle.global_failures_per_s = 0;
  o.throttle.max_failures_per_address = 0;
  LoginService service(o, auth_.get());
  gated_->Hold();
  auto running = Submit(service, "10.0.0.1", "wrong-password");
  gated_->WaitForLookups(1);  // taken off the queue, held in its check
  auto q1 = Submit(service, "10.0.0.2", "wrong-password");
  auto q2 = Submit(service, "10.0.0.3", "wrong-password");
  auto refused = Submit(service, "10.0.0.4", "wrong-password");
  ASSERT_TRUE(Ready(refused)) << "answered before Submit returned";
  LoginOutcome out = refused.get();
  EXPECT_EQ(out.status.code(), StatusCode::kResourceExhausted) << out.status.ToString();
  EXPECT_EQ(out.retry_after_seconds, 1);
  EXPECT_EQ(service.GetStats().queue_full, 1u);
  gated_->Release();
  for (auto* f : {&running, &q1, &q2}) EXPECT_EQ(f->get().status.code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(gated_->lookups(), 3) << "the refused attempt was never checked";
}

TEST_F(LoginServiceTest, AThrottledAddressIsRefusedWithoutAHashAndOthersAreNot) {
  LoginOptions o;
  o.throttle.max_failures_per_address = 3;
  o.throttle.failure_window_s = 120;
  o.throttle.global_failures_per_s = 0;
  LoginService service(o, auth_.get());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Submit(service, "203.0.113.9", "wrong-password").get().status.code(), StatusCode::kUnauthenticated);
  }
  const int checked = gated_->lookups();
  LoginOutcome refused = Submit(service, "203.0.113.9", "right-password").get();
  EXPECT_EQ(refused.status.code(), StatusCode::kResourceExhausted);
  EXPECT_GE(refused.retry_after_seconds, 110);
  EXPECT_LE(refused.retry_after_seconds, 120);
  EXPECT_NE(refused.status.message().find("too many failed logins"), std::string::npos) << refused.status.message();
  EXPECT_EQ(gated_->lookups(), checked) << "a throttled attempt costs no hash";
  EXPECT_EQ(service.GetStats().throttled, 1u);
  // Another host logs in; an IPv4-mapped form of the throttled one does not.
  EXPECT_TRUE(Submit(service, "203.0.113.10", "right-password").get().status.ok());
  EXPECT_EQ(Submit(service, "::ffff:203.0.113.9", "right-password").get().status.code(),
            StatusCode::kResourceExhausted);
}

TEST_F(LoginServiceTest, StopAnswersWhatStillWaits) {
  LoginService service({}, auth_.get());
  gated_->Hold();
  auto running = Submit(service, "10.0.0.1", "right-password");
  gated_->WaitForLookups(1);
  auto queued = Submit(service, "10.0.0.2", "right-password");
  std::thread stopper([&] { service.Stop(); });
  LoginOutcome out = queued.get();  // answered by Stop, while the running check is still held
  EXPECT_EQ(out.status.code(), StatusCode::kUnavailable) << out.status.ToString();
  gated_->Release();
  stopper.join();
  EXPECT_TRUE(running.get().status.ok()) << "a check already running finishes";
  EXPECT_EQ(Submit(service, "10.0.0.3", "right-password").get().status.code(), StatusCode::kUnavailable);
  service.Stop();  // idempotent
}

}  // namespace
}  // namespace sightline
