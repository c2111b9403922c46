// AdmissionGate: the request and byte limits, growth after decompression,
// release by ticket lifetime (including moves), Close and WaitIdle, counters,
// and the fair shares between projects.

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

AdmissionGate::Ticket AdmitOk(AdmissionGate* gate, size_t bytes, int64_t project = 0) {
  auto r = gate->Admit(bytes, project);
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

// A clock the fair-share tests move by hand.
struct FakeClock {
  steady_clock::time_point now = steady_clock::time_point() + std::chrono::hours(1);
  AdmissionGate::Clock Get() {
    return [this] { return now; };
  }
};

AdmissionGate::Limits FairLimits(size_t bytes, int requests, int64_t window_ms = 10000) {
  AdmissionGate::Limits l = Limits(bytes, requests);
  l.active_window_ms = window_ms;
  return l;
}

bool IsShareRefusal(const Result<AdmissionGate::Ticket>& r) {
  return !r.ok() && r.status().code() == StatusCode::kUnavailable &&
         r.status().message().find("fair share") != std::string::npos;
}

TEST(AdmissionGateFairnessTest, AProjectAloneMayUseTheWholeBudget) {
  FakeClock clock;
  AdmissionGate gate(FairLimits(1000, 8), clock.Get());
  std::vector<AdmissionGate::Ticket> a;
  for (int i = 0; i < 8; ++i) a.push_back(AdmitOk(&gate, 125, /*project=*/1));
  EXPECT_EQ(gate.GetStats().inflight_bytes, 1000u);
  EXPECT_EQ(gate.GetStats().rejected_project_share, 0u);
  EXPECT_EQ(gate.GetStats().active_projects, 1);
}

TEST(AdmissionGateFairnessTest, WithTwoActiveProjectsEachGetsHalfTheRequests) {
  FakeClock clock;
  AdmissionGate gate(FairLimits(1u << 20, 8), clock.Get());
  auto b = AdmitOk(&gate, 10, /*project=*/2);  // B is active
  b = AdmissionGate::Ticket();                 // ... and idle again, but within the window
  std::vector<AdmissionGate::Ticket> a;
  for (int i = 0; i < 4; ++i) a.push_back(AdmitOk(&gate, 10, /*project=*/1));
  auto refused = gate.Admit(10, /*project=*/1);
  EXPECT_TRUE(IsShareRefusal(refused)) << refused.status().ToString();
  EXPECT_TRUE(refused.status().retryable());
  EXPECT_EQ(gate.GetStats().rejected_project_share, 1u);
  EXPECT_EQ(gate.GetStats().active_projects, 2);
  // B still gets all of its half while A waits.
  std::vector<AdmissionGate::Ticket> bs;
  for (int i = 0; i < 4; ++i) bs.push_back(AdmitOk(&gate, 10, /*project=*/2));
  EXPECT_FALSE(gate.Admit(10, /*project=*/2).ok());
  EXPECT_EQ(gate.GetStats().inflight_requests, 8);
}

TEST(AdmissionGateFairnessTest, WithTwoActiveProjectsEachGetsHalfTheBytes) {
  FakeClock clock;
  AdmissionGate gate(FairLimits(1000, 64), clock.Get());
  { auto b = AdmitOk(&gate, 1, /*project=*/2); }
  auto a1 = AdmitOk(&gate, 300, /*project=*/1);
  auto a2 = AdmitOk(&gate, 200, /*project=*/1);  // exactly its half
  EXPECT_TRUE(IsShareRefusal(gate.Admit(1, /*project=*/1)));
  auto b1 = AdmitOk(&gate, 500, /*project=*/2);
  EXPECT_EQ(gate.GetStats().inflight_bytes, 1000u);
}

TEST(AdmissionGateFairnessTest, AFloodingProjectCannotKeepAnotherOut) {
  // A fills the gate while alone; B arrives and is refused by the global
  // budget, which makes it active: from then on A is held to half, so B gets
  // in as soon as A's requests end, however fast A asks again.
  FakeClock clock;
  AdmissionGate gate(FairLimits(1u << 20, 4), clock.Get());
  std::vector<AdmissionGate::Ticket> a;
  for (int i = 0; i < 4; ++i) a.push_back(AdmitOk(&gate, 10, /*project=*/1));
  auto b_refused = gate.Admit(10, /*project=*/2);
  ASSERT_FALSE(b_refused.ok());
  EXPECT_FALSE(IsShareRefusal(b_refused)) << "B holds nothing: the global limit refused it";
  a.pop_back();                                                // one of A's requests ends
  EXPECT_TRUE(IsShareRefusal(gate.Admit(10, /*project=*/1)));  // A asks again first: over its half
  auto b1 = AdmitOk(&gate, 10, /*project=*/2);                 // B gets the slot
  a.pop_back();
  EXPECT_TRUE(IsShareRefusal(gate.Admit(10, /*project=*/1)));
  auto b2 = AdmitOk(&gate, 10, /*project=*/2);
  EXPECT_EQ(gate.GetStats().inflight_requests, 4);
}

TEST(AdmissionGateFairnessTest, AProjectIdleForTheWindowNoLongerCounts) {
  FakeClock clock;
  AdmissionGate gate(FairLimits(1u << 20, 4, /*window_ms=*/10000), clock.Get());
  { auto b = AdmitOk(&gate, 10, /*project=*/2); }
  std::vector<AdmissionGate::Ticket> a;
  a.push_back(AdmitOk(&gate, 10, /*project=*/1));
  a.push_back(AdmitOk(&gate, 10, /*project=*/1));
  EXPECT_TRUE(IsShareRefusal(gate.Admit(10, /*project=*/1)));
  clock.now += milliseconds(10001);
  EXPECT_EQ(gate.GetStats().active_projects, 1);
  a.push_back(AdmitOk(&gate, 10, /*project=*/1));
  a.push_back(AdmitOk(&gate, 10, /*project=*/1));
  EXPECT_EQ(gate.GetStats().inflight_requests, 4);
}

TEST(AdmissionGateFairnessTest, AProjectWithRequestsInFlightStaysActive) {
  FakeClock clock;
  AdmissionGate gate(FairLimits(1u << 20, 4, /*window_ms=*/1000), clock.Get());
  auto b = AdmitOk(&gate, 10, /*project=*/2);  // a slow request of B's
  clock.now += std::chrono::minutes(5);
  auto a1 = AdmitOk(&gate, 10, /*project=*/1);
  auto a2 = AdmitOk(&gate, 10, /*project=*/1);
  EXPECT_TRUE(IsShareRefusal(gate.Admit(10, /*project=*/1)));
  EXPECT_EQ(gate.GetStats().active_projects, 2);
}

TEST(AdmissionGateFairnessTest, EveryProjectGetsOneRequestWhenThereAreMoreProjectsThanSlots) {
  FakeClock clock;
  AdmissionGate gate(FairLimits(1u << 20, 4), clock.Get());
  for (int64_t p = 1; p <= 8; ++p) {  // 8 projects active
    auto t = AdmitOk(&gate, 10, p);
  }
  std::vector<AdmissionGate::Ticket> held;
  for (int64_t p = 1; p <= 4; ++p) held.push_back(AdmitOk(&gate, 10, p));
  EXPECT_TRUE(IsShareRefusal(gate.Admit(10, /*project=*/1)));  // a second one: over its share of 1
  auto fifth = gate.Admit(10, /*project=*/5);                  // the gate is full
  ASSERT_FALSE(fifth.ok());
  EXPECT_FALSE(IsShareRefusal(fifth));
  held.erase(held.begin());
  auto p5 = AdmitOk(&gate, 10, /*project=*/5);
}

TEST(AdmissionGateFairnessTest, GrowPastTheShareIsRefusedUnlessItIsTheProjectsOnlyRequest) {
  FakeClock clock;
  AdmissionGate gate(FairLimits(1000, 8), clock.Get());
  { auto b = AdmitOk(&gate, 0, /*project=*/2); }
  auto a1 = AdmitOk(&gate, 0, /*project=*/1);
  ASSERT_TRUE(a1.Grow(700).ok());  // A's only request: held to the global budget only
  EXPECT_TRUE(IsShareRefusal(gate.Admit(0, /*project=*/1))) << "A already holds more than its half";
  a1 = AdmissionGate::Ticket();
  a1 = AdmitOk(&gate, 0, /*project=*/1);
  ASSERT_TRUE(a1.Grow(400).ok());
  auto a2 = AdmitOk(&gate, 0, /*project=*/1);
  Status st = a2.Grow(101);
  EXPECT_EQ(st.code(), StatusCode::kUnavailable) << st.ToString();
  EXPECT_NE(st.message().find("fair share"), std::string::npos) << st.message();
  EXPECT_EQ(a2.bytes(), 0u);
  EXPECT_EQ(gate.GetStats().inflight_bytes, 400u);
  EXPECT_TRUE(a2.Grow(100).ok()) << "exactly A's half";
  auto b1 = AdmitOk(&gate, 0, /*project=*/2);
  EXPECT_TRUE(b1.Grow(500).ok());
  Status global = b1.Grow(1);
  EXPECT_EQ(global.code(), StatusCode::kUnavailable);
  EXPECT_EQ(global.message().find("fair share"), std::string::npos) << "the global budget: " << global.message();
  EXPECT_EQ(gate.GetStats().inflight_bytes, 1000u);
}

TEST(AdmissionGateFairnessTest, ConcurrentProjectsBalanceAndNeverExceedTheRequestLimit) {
  AdmissionGate gate(FairLimits(10000, 6));
  constexpr int kThreads = 6, kIterations = 2000;
  std::atomic<int> holders{0}, max_holders{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kIterations; ++i) {
        auto r = gate.Admit(static_cast<size_t>(10 + i % 100), /*project=*/t % 3);
        if (!r.ok()) continue;
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
  EXPECT_LE(max_holders.load(), 6);
  EXPECT_GT(s.admitted, 0u);
}

TEST(AdmissionGatePressureTest, RisesWithTheShareRefusedAndFadesWhenCalm) {
  FakeClock clock;
  AdmissionGate gate(Limits(1 << 20, 1), clock.Get());
  EXPECT_EQ(gate.Pressure(), 0.0);
  // Calm: everything admitted (and released at once).
  for (int i = 0; i < 9; ++i) ASSERT_TRUE(gate.Admit(10).ok());
  EXPECT_EQ(gate.Pressure(), 0.0);
  {
    auto held = gate.Admit(10);
    ASSERT_TRUE(held.ok());
    // Light overload: one refused among eleven.
    ASSERT_FALSE(gate.Admit(10).ok());
    const double light = gate.Pressure();
    EXPECT_GT(light, 0.0);
    EXPECT_LT(light, 0.15);
    // Saturated: the next hundred are all refused.
    for (int i = 0; i < 100; ++i) ASSERT_FALSE(gate.Admit(10).ok());
    const double saturated = gate.Pressure();
    EXPECT_GT(saturated, 0.85);
    EXPECT_LE(saturated, 1.0);
    EXPECT_EQ(gate.GetStats().pressure, saturated);
  }
  // Calm again: after a minute of admissions the old refusals weigh nothing.
  for (int i = 0; i < 60; ++i) {
    clock.now += std::chrono::seconds(1);
    ASSERT_TRUE(gate.Admit(10).ok());
  }
  EXPECT_LT(gate.Pressure(), 0.01);
}

TEST(AdmissionGatePressureTest, ARefusedGrowthCountsAsARefusal) {
  FakeClock clock;
  AdmissionGate gate(Limits(100, 4), clock.Get());
  auto a = gate.Admit(60);
  auto b = gate.Admit(10);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(gate.Pressure(), 0.0);
  EXPECT_FALSE(b->Grow(50).ok());
  EXPECT_GT(gate.Pressure(), 0.0);
}

}  // namespace
}  // namespace sightline
