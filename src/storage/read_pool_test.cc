// ReadPool: leases up to the pool size, a timed-out Acquire is Unavailable, a
// released lease wakes a waiter, and under contention from many threads no
// connection is ever used by two leases at once and every one comes back.
// Run under ThreadSanitizer by `make test`.

#include "storage/read_pool.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sightline {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

//! Counts its concurrent users; a second user at once is a pool bug.
class FakeConnection : public ReadConnection {
 public:
  struct Shared {
    std::atomic<int> overlaps{0};
    std::atomic<int> queries{0};
    std::atomic<int> interrupts{0};
  };
  FakeConnection(Shared* shared, int id) : shared_(shared), id_(id) {}

  Status Query(const std::string& sql, const std::vector<SqlParam>& params, const RowCallback& on_row) override {
    if (users_.fetch_add(1) != 0) shared_->overlaps++;
    shared_->queries++;
    last_sql_ = sql;  // unsynchronised on purpose: TSan flags two users at once
    std::this_thread::yield();
    users_--;
    return sql == "fail" ? Status::IoError("connection " + std::to_string(id_)) : Status::Ok();
  }
  void Interrupt() override { shared_->interrupts++; }

 private:
  Shared* shared_;
  const int id_;
  std::atomic<int> users_{0};
  std::string last_sql_;
};

std::unique_ptr<ReadPool> MakePool(FakeConnection::Shared* shared, int size) {
  std::vector<std::unique_ptr<ReadConnection>> conns;
  for (int i = 0; i < size; ++i) conns.push_back(std::make_unique<FakeConnection>(shared, i));
  return std::make_unique<ReadPool>(std::move(conns));
}

TEST(ReadPoolTest, LeasesUpToItsSizeThenTimesOutWithUnavailable) {
  FakeConnection::Shared shared;
  auto pool = MakePool(&shared, 2);
  EXPECT_EQ(pool->size(), 2);
  auto ra = pool->Acquire(0);
  auto rb = pool->Acquire(0);
  ASSERT_TRUE(ra.ok() && rb.ok());
  std::unique_ptr<ReadConnection> a = std::move(ra).value();
  EXPECT_EQ(pool->in_use(), 2);

  auto start = steady_clock::now();
  auto refused = pool->Acquire(50);
  auto waited = steady_clock::now() - start;
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(refused.status().retryable());
  EXPECT_NE(refused.status().message().find("2 read connections are busy"), std::string::npos);
  EXPECT_GE(waited, milliseconds(50)) << "gave up before its wait";
  EXPECT_LT(waited, milliseconds(5000));

  a.reset();  // destroying the lease puts its connection back
  EXPECT_EQ(pool->in_use(), 1);
  EXPECT_TRUE(pool->Acquire(0).ok());
  EXPECT_EQ(pool->in_use(), 1) << "a lease that was never kept is returned at once";
}

TEST(ReadPoolTest, ALeaseForwardsToItsConnection) {
  FakeConnection::Shared shared;
  auto pool = MakePool(&shared, 1);
  auto lease = pool->Acquire(0);
  ASSERT_TRUE(lease.ok());
  EXPECT_TRUE((*lease)->Query("select", {}, [](const RowView&) {}).ok());
  Status failed = (*lease)->Query("fail", {}, [](const RowView&) {});
  EXPECT_EQ(failed.code(), StatusCode::kIoError);
  (*lease)->Interrupt();
  EXPECT_EQ(shared.queries.load(), 2);
  EXPECT_EQ(shared.interrupts.load(), 1);
}

TEST(ReadPoolTest, AReleasedLeaseWakesAWaiter) {
  FakeConnection::Shared shared;
  auto pool = MakePool(&shared, 1);
  auto acquired = pool->Acquire(0);
  ASSERT_TRUE(acquired.ok());
  std::unique_ptr<ReadConnection> held = std::move(acquired).value();
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto lease = pool->Acquire(30000);
    got = lease.ok();
  });
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_FALSE(got.load());
  auto start = steady_clock::now();
  held.reset();
  waiter.join();
  EXPECT_TRUE(got.load());
  EXPECT_LT(steady_clock::now() - start, milliseconds(10000)) << "the waiter was not woken";
  EXPECT_EQ(pool->in_use(), 0);
}

TEST(ReadPoolTest, ManyThreadsNeverShareAConnection) {
  FakeConnection::Shared shared;
  auto pool = MakePool(&shared, 3);
  constexpr int kThreads = 8, kRounds = 200;
  std::atomic<int> ok{0}, timed_out{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        // Some callers wait only briefly and give up: timeouts race with releases.
        auto lease = pool->Acquire(i % 4 == 0 ? 0 : 30000);
        if (!lease.ok()) {
          EXPECT_EQ(lease.status().code(), StatusCode::kUnavailable);
          timed_out++;
          continue;
        }
        EXPECT_TRUE((*lease)->Query("q" + std::to_string(t), {}, [](const RowView&) {}).ok());
        ok++;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(shared.overlaps.load(), 0);
  EXPECT_EQ(ok.load() + timed_out.load(), kThreads * kRounds);
  EXPECT_EQ(shared.queries.load(), ok.load());
  EXPECT_GT(ok.load(), kThreads * kRounds * 3 / 4 - 1);
  EXPECT_EQ(pool->in_use(), 0) << "a connection was not returned";
  std::vector<Result<std::unique_ptr<ReadConnection>>> all;
  for (int i = 0; i < 3; ++i) all.push_back(pool->Acquire(0));
  for (const auto& lease : all) EXPECT_TRUE(lease.ok());
}

}  // namespace
}  // namespace sightline
