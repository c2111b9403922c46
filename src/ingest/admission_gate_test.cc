// AdmissionGate: the request and byte limits, growth after decompression,
// release by ticket lifetime (including moves), Close and WaitIdle, counters.

#include "ingest/admission_gate.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace sightline {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

AdmissionGate::Limits Limits(size_t bytes, int requests) {
  AdmissionGate::Limits l;
  l.max_inflight_bytes = bytes;
  l.max_inflight_requests = requests;
  return l;
}

AdmissionGate::Ticket AdmitOk(AdmissionGate* gate, size_t bytes) {
  auto r = gate->Admit(bytes);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  if (!r.ok()) return {};
  return std::move(r).value();
}

TEST(AdmissionGateTest, RequestLimitRefusesWithUnavailable) {
  AdmissionGate gate(Limits(1000, 3));
  std::vector<AdmissionGate::Ticket> tickets;
  for (int i = 0; i < 3; ++i) tickets.push_back(AdmitOk(&gate, 10));
  auto refused = gate.Admit(10);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(refused.status().retryable());
  EXPECT_NE(refused.status().message().find("concurrent"), std::string::npos) << refused.status().message();

  auto s = gate.GetStats();
  EXPECT_EQ(s.inflight_requests, 3);
  EXPECT_EQ(s.inflight_bytes, 30u);
  EXPECT_EQ(s.admitted, 3u);
  EXPECT_EQ(s.rejected_requests, 1u);
  EXPECT_EQ(s.rejected_bytes, 0u);

  tickets.pop_back();
  EXPECT_TRUE(gate.Admit(10).ok());  // a slot is free again (and released at once)
  EXPECT_EQ(gate.GetStats().admitted, 4u);
}

TEST(AdmissionGateTest, ByteBudgetRefusesWhatWouldOverflowIt) {
  AdmissionGate gate(Limits(100, 10));
  auto a = AdmitOk(&gate, 60);
  auto refused = gate.Admit(41);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("budget"), std::string::npos) << refused.status().message();
  auto b = AdmitOk(&gate, 40);  // exactly the budget
  EXPECT_FALSE(gate.Admit(1).ok());
  EXPECT_TRUE(gate.Admit(0).ok());

  auto s = gate.GetStats();
  EXPECT_EQ(s.inflight_bytes, 100u);
  EXPECT_EQ(s.inflight_requests, 2);
  EXPECT_EQ(s.rejected_bytes, 2u);
  EXPECT_EQ(s.rejected_requests, 0u);
  EXPECT_EQ(s.peak_inflight_bytes, 100u);
}

TEST(AdmissionGateTest, ARequestLargerThanTheBudgetIsAdmittedOnlyAlone) {
  AdmissionGate gate(Limits(100, 10));
  {
    auto big = AdmitOk(&gate, 500);
    EXPECT_EQ(big.bytes(), 500u);
    EXPECT_FALSE(gate.Admit(1).ok());
  }
  auto small = AdmitOk(&gate, 1);
  EXPECT_FALSE(gate.Admit(500).ok());
  EXPECT_EQ(gate.GetStats().peak_inflight_bytes, 500u);
}

TEST(AdmissionGateTest, GrowBeyondTheBudgetIsRefusedWithoutChange) {
  AdmissionGate gate(Limits(100, 10));
  auto a = AdmitOk(&gate, 10);
  auto b = AdmitOk(&gate, 10);
  ASSERT_TRUE(a.Grow(80).ok());
  EXPECT_EQ(a.bytes(), 90u);
  EXPECT_EQ(gate.GetStats().inflight_bytes, 100u);
  Status st = a.Grow(1);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_TRUE(st.retryable());
  EXPECT_EQ(a.bytes(), 90u);
  EXPECT_EQ(gate.GetStats().inflight_bytes, 100u);
  EXPECT_EQ(gate.GetStats().rejected_bytes, 1u);
  EXPECT_TRUE(a.Grow(0).ok());
}

TEST(AdmissionGateTest, ALoneRequestMayGrowPastTheBudget) {
  AdmissionGate gate(Limits(100, 10));
  auto a = AdmitOk(&gate, 50);
  ASSERT_TRUE(a.Grow(200).ok());
  EXPECT_EQ(a.bytes(), 250u);
  EXPECT_FALSE(gate.Admit(1).ok());
  EXPECT_EQ(gate.GetStats().peak_inflight_bytes, 250u);
}

TEST(AdmissionGateTest, DestroyingATicketReleasesAllItsBytes) {
  AdmissionGate gate(Limits(100, 2));
  {
    auto a = AdmitOk(&gate, 30);
    auto b = AdmitOk(&gate, 20);
    ASSERT_TRUE(a.Grow(25).ok());
    EXPECT_EQ(gate.GetStats().inflight_bytes, 75u);
  }
  auto s = gate.GetStats();
  EXPECT_EQ(s.inflight_bytes, 0u);
  EXPECT_EQ(s.inflight_requests, 0);
  EXPECT_EQ(s.peak_inflight_bytes, 75u);
  EXPECT_EQ(s.admitted, 2u);
  // The whole budget is available again.
  auto c = AdmitOk(&gate, 60);
  auto d = AdmitOk(&gate, 40);
}

TEST(AdmissionGateTest, MovedTicketsReleaseOnce) {
  AdmissionGate gate(Limits(100, 5));
  auto a = AdmitOk(&gate, 30);
  AdmissionGate::Ticket b(std::move(a));
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): the moved-from state is the contract
  EXPECT_TRUE(b.valid());
  EXPECT_EQ(b.bytes(), 30u);
  EXPECT_EQ(a.Grow(1).code(), StatusCode::kInternal);  // NOLINT(bugprone-use-after-move)
  { AdmissionGate::Ticket sink = std::move(a); }       // NOLINT(bugprone-use-after-move): releasing nothing
  EXPECT_EQ(gate.GetStats().inflight_requests, 1);
  EXPECT_EQ(gate.GetStats().inflight_bytes, 30u);

  // Move assignment releases what the target held.
  auto c = AdmitOk(&gate, 20);
  EXPECT_EQ(gate.GetStats().inflight_bytes, 50u);
  c = std::move(b);
  EXPECT_EQ(gate.GetStats().inflight_requests, 1);
  EXPECT_EQ(gate.GetStats().inflight_bytes, 30u);
  EXPECT_EQ(c.bytes(), 30u);

  std::vector<AdmissionGate::Ticket> v;
  v.push_back(std::move(c));
  for (int i = 0; i < 3; ++i) v.push_back(AdmitOk(&gate, 1));  // reallocation moves tickets
  EXPECT_EQ(gate.GetStats().inflight_requests, 4);
  EXPECT_EQ(gate.GetStats().inflight_bytes, 33u);
  v.clear();
  EXPECT_EQ(gate.GetStats().inflight_requests, 0);
  EXPECT_EQ(gate.GetStats().inflight_bytes, 0u);
}

TEST(AdmissionGateTest, DefaultTicketHoldsNothing) {
  AdmissionGate gate(Limits(100, 5));
  AdmissionGate::Ticket t;
  EXPECT_FALSE(t.valid());
  EXPECT_EQ(t.bytes(), 0u);
  EXPECT_EQ(t.Grow(5).code(), StatusCode::kInternal);
  t = AdmitOk(&gate, 7);
  EXPECT_TRUE(t.valid());
  EXPECT_EQ(gate.GetStats().inflight_bytes, 7u);
}

TEST(AdmissionGateTest, CloseRefusesNewRequestsButKeepsAdmittedOnes) {
  AdmissionGate gate(Limits(100, 5));
  auto a = AdmitOk(&gate, 10);
  gate.Close();
  auto refused = gate.Admit(1);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("shutting down"), std::string::npos);
  EXPECT_TRUE(a.Grow(5).ok());
  EXPECT_EQ(gate.GetStats().inflight_bytes, 15u);
  EXPECT_EQ(gate.GetStats().admitted, 1u);
}

TEST(AdmissionGateTest, WaitIdleReturnsAtOnceWhenNothingIsInFlight) {
  AdmissionGate gate(Limits(100, 5));
  auto start = steady_clock::now();
  EXPECT_TRUE(gate.WaitIdle(10000));
  EXPECT_LT(steady_clock::now() - start, milliseconds(1000));
}

TEST(AdmissionGateTest, WaitIdleTimesOutWhileATicketIsHeld) {
  AdmissionGate gate(Limits(100, 5));
  auto a = AdmitOk(&gate, 10);
  auto start = steady_clock::now();
  EXPECT_FALSE(gate.WaitIdle(50));
  EXPECT_GE(steady_clock::now() - start, milliseconds(50));
}

TEST(AdmissionGateTest, WaitIdleWakesWhenTheLastTicketIsReleased) {
  AdmissionGate gate(Limits(100, 5));
  auto a = AdmitOk(&gate, 10);
  auto b = AdmitOk(&gate, 10);
  gate.Close();
  std::atomic<bool> released{false};
  std::thread t([&] {
    std::this_thread::sleep_for(milliseconds(30));
    a = AdmissionGate::Ticket();
    std::this_thread::sleep_for(milliseconds(30));
    released = true;
    b = AdmissionGate::Ticket();
  });
  auto start = steady_clock::now();
  EXPECT_TRUE(gate.WaitIdle(20000));
  EXPECT_TRUE(released.load());
  EXPECT_LT(steady_clock::now() - start, milliseconds(10000));
  t.join();
  EXPECT_EQ(gate.GetStats().inflight_requests, 0);
}

TEST(AdmissionGateTest, ConcurrentAdmitsNeverExceedTheLimitsAndBalance) {
  constexpr size_t kBudget = 1000;
  constexpr int kRequests = 4;
  AdmissionGate gate(Limits(kBudget, kRequests));
  constexpr int kThreads = 8, kIterations = 2000;
  std::atomic<uint64_t> ok{0}, refused{0};
  std::atomic<int> holders{0};
  std::atomic<int> max_holders{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        auto r = gate.Admit(static_cast<size_t>(50 + (i * 7 + t) % 200));
        if (!r.ok()) {
          refused++;
          continue;
        }
        ok++;
        int now = ++holders;
        int seen = max_holders.load();
        while (now > seen && !max_holders.compare_exchange_weak(seen, now)) {
        }
        (void)r->Grow(static_cast<size_t>(i % 50));
        --holders;
      }
    });
  }
  for (auto& th : threads) th.join();
  auto s = gate.GetStats();
  EXPECT_EQ(s.inflight_bytes, 0u);
  EXPECT_EQ(s.inflight_requests, 0);
  EXPECT_EQ(s.admitted, ok.load());
  EXPECT_EQ(ok + refused, uint64_t{kThreads} * kIterations);
  EXPECT_LE(max_holders.load(), kRequests);
  EXPECT_LE(s.peak_inflight_bytes, kBudget);
  EXPECT_GT(ok.load(), 0u);
  EXPECT_TRUE(gate.WaitIdle(0));
}

}  // namespace
}  // namespace sightline
