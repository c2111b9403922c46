// CondVar bound to a Mutex: Signal wakes a waiter, SignalAll wakes them all,
// WaitUntil gives up at its deadline, and a producer/consumer hand-off loses
// nothing. Run under ThreadSanitizer by `make test`.

#include "common/mutex.h"

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sightline {
namespace {

using std::chrono::milliseconds;

class Mailbox {
 public:
  void Put(int v) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    items_.push_back(v);
    cv_.Signal();
  }
  void Close() EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    closed_ = true;
    cv_.SignalAll();
  }
  //! Blocks for an item; false once closed and empty.
  bool Take(int* v) EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    while (items_.empty() && !closed_) cv_.Wait(&mu_);
    if (items_.empty()) return false;
    *v = items_.back();
    items_.pop_back();
    return true;
  }
  //! Waits up to `timeout` for an item; false if none came.
  bool TakeFor(milliseconds timeout, int* v) EXCLUDES(mu_) {
    const auto deadline = CondVar::Clock::now() + timeout;
    MutexLock lock(&mu_);
    while (items_.empty()) {
      if (!cv_.WaitUntil(&mu_, deadline)) break;
    }
    if (items_.empty()) return false;
    *v = items_.back();
    items_.pop_back();
    return true;
  }

 private:
  Mutex mu_;
  CondVar cv_{&mu_};
  std::vector<int> items_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
};

TEST(CondVarTest, EveryItemIsTakenExactlyOnce) {
  Mailbox box;
  constexpr int kConsumers = 4, kItems = 2000;
  std::vector<long> sums(kConsumers, 0);
  std::vector<int> counts(kConsumers, 0);
  std::vector<std::thread> consumers;
  for (int c = 0; c < kConsumers; ++c) {
    consumers.emplace_back([&, c] {
      int v;
      while (box.Take(&v)) {
        sums[c] += v;
        counts[c]++;
      }
    });
  }
  std::thread producer([&] {
    for (int i = 1; i <= kItems; ++i) box.Put(i);
    box.Close();
  });
  producer.join();
  for (auto& t : consumers) t.join();
  long sum = 0;
  int count = 0;
  for (int c = 0; c < kConsumers; ++c) {
    sum += sums[c];
    count += counts[c];
  }
  EXPECT_EQ(count, kItems);
  EXPECT_EQ(sum, long{kItems} * (kItems + 1) / 2);
}

TEST(CondVarTest, SignalAllWakesEveryWaiter) {
  Mailbox box;
  std::vector<std::thread> waiters;
  std::vector<int> woke(3, 0);
  for (int i = 0; i < 3; ++i) {
    waiters.emplace_back([&, i] {
      int v;
      woke[i] = box.Take(&v) ? 2 : 1;  // closed with nothing: 1
    });
  }
  std::this_thread::sleep_for(milliseconds(20));  // let them block
  box.Close();
  for (auto& t : waiters) t.join();
  EXPECT_EQ(woke, (std::vector<int>{1, 1, 1}));
}

TEST(CondVarTest, WaitUntilGivesUpAtTheDeadline) {
  Mailbox box;
  int v = 0;
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(box.TakeFor(milliseconds(50), &v));
  auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, milliseconds(50));
  EXPECT_LT(waited, milliseconds(5000));
}

TEST(CondVarTest, WaitUntilReturnsAsSoonAsSignalled) {
  Mailbox box;
  std::thread producer([&] {
    std::this_thread::sleep_for(milliseconds(20));
    box.Put(7);
  });
  int v = 0;
  auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(box.TakeFor(milliseconds(30000), &v));
  EXPECT_EQ(v, 7);
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(10000));
  producer.join();
}

#ifndef NDEBUG
TEST(CondVarDeathTest, WaitingWithAnotherMutexIsABug) {
  Mutex bound, other;
  CondVar cv(&bound);
  EXPECT_DEATH(
      {
        MutexLock lock(&other);
        cv.Wait(&other);
      },
      "check failed: mu == mu_");
}
#endif

}  // namespace
}  // namespace sightline
