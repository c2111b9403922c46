// SignalWriter (group commit) against a recording SignalSink: grouping under a
// slow sink, the row cap per group, isolating a failing batch, callbacks only
// after the write, Stop draining the queue and refusing later batches.
// Batches are told apart by their project_id.

#include "storage/writer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace sightline {
namespace {

using std::chrono::milliseconds;

//! Records what it was asked to write. Optionally slow, blocked until released,
//! or failing any group that contains a given batch id.
class RecordingSink : public SignalSink {
 public:
  struct Shared {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::vector<int64_t>> groups;     // every call, ids in order
    std::vector<std::vector<size_t>> group_rows;  // rows of each batch per call
    std::vector<Signal> signals;                  // which Write* each call used
    std::set<int64_t> committed;                  // ids of successful writes
    int64_t fail_id = -1000;
    milliseconds delay{0};
    bool blocked = false;
    int calls_started = 0;
    std::atomic<int> concurrent{0};
    std::atomic<int> max_concurrent{0};

    void Release() {
      std::lock_guard<std::mutex> lock(mu);
      blocked = false;
      cv.notify_all();
    }
    void WaitForCalls(int n) {
      std::unique_lock<std::mutex> lock(mu);
      cv.wait(lock, [&] { return calls_started >= n; });
    }
  };

  explicit RecordingSink(Shared* shared) : s_(shared) {}

  Status WriteSpans(const std::vector<const SpanBatch*>& batches) override { return Write(Signal::kSpans, batches); }
  Status WriteLogs(const std::vector<const LogBatch*>& batches) override { return Write(Signal::kLogs, batches); }
  Status WriteMetrics(const std::vector<const MetricBatch*>& batches) override {
    return Write(Signal::kMetrics, batches);
  }

 private:
  template <typename Batch>
  Status Write(Signal signal, const std::vector<const Batch*>& batches) {
    int now = ++s_->concurrent;
    s_->max_concurrent = std::max(s_->max_concurrent.load(), now);
    std::vector<int64_t> ids;
    std::vector<size_t> rows;
    for (const Batch* b : batches) {
      ids.push_back(b->project_id);
      rows.push_back(b->rows());
    }
    {
      std::unique_lock<std::mutex> lock(s_->mu);
      s_->calls_started++;
      s_->cv.notify_all();
      s_->cv.wait(lock, [&] { return !s_->blocked; });
    }
    if (s_->delay.count() > 0) std::this_thread::sleep_for(s_->delay);
    bool fail = std::find(ids.begin(), ids.end(), s_->fail_id) != ids.end();
    {
      std::lock_guard<std::mutex> lock(s_->mu);
      s_->groups.push_back(ids);
      s_->group_rows.push_back(rows);
      s_->signals.push_back(signal);
      if (!fail) s_->committed.insert(ids.begin(), ids.end());
    }
    --s_->concurrent;
    if (fail) return Status::IoError("disk says no to batch " + std::to_string(s_->fail_id));
    return Status::Ok();
  }

  Shared* s_;
};

std::unique_ptr<AnyBatch> Spans(int64_t id, size_t rows = 1) {
  auto b = std::make_unique<AnyBatch>(std::in_place_type<SpanBatch>);
  auto& spans = std::get<SpanBatch>(*b);
  spans.project_id = id;
  spans.start_time_ns.assign(rows, 0);
  return b;
}

//! Collects callback outcomes by batch id and checks each OK came after its commit.
class Outcomes {
 public:
  explicit Outcomes(RecordingSink::Shared* sink) : sink_(sink) {}

  SignalWriter::Done For(int64_t id) {
    return [this, id](Status st) {
      bool committed;
      {
        std::lock_guard<std::mutex> lock(sink_->mu);
        committed = sink_->committed.count(id) > 0;
      }
      std::lock_guard<std::mutex> lock(mu_);
      if (st.ok() && !committed) ok_before_commit_.push_back(id);
      calls_[id]++;
      status_.emplace(id, st);
      cv_.notify_all();
    };
  }

  bool WaitFor(size_t n, milliseconds timeout = milliseconds(30000)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return status_.size() >= n; });
  }

  std::map<int64_t, Status> status() {
    std::lock_guard<std::mutex> lock(mu_);
    return status_;
  }
  std::vector<int64_t> ok_before_commit() {
    std::lock_guard<std::mutex> lock(mu_);
    return ok_before_commit_;
  }
  //! Ids whose callback ran more than once.
  std::vector<int64_t> repeated() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<int64_t> out;
    for (auto [id, n] : calls_) {
      if (n > 1) out.push_back(id);
    }
    return out;
  }

 private:
  RecordingSink::Shared* sink_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int64_t, Status> status_;
  std::map<int64_t, int> calls_;
  std::vector<int64_t> ok_before_commit_;
};

SignalWriter::Options WithMaxRows(size_t rows) {
  SignalWriter::Options o;
  o.max_group_rows = rows;
  return o;
}

TEST(SignalWriterTest, ConcurrentSubmitsAreGroupedUnderASlowSink) {
  RecordingSink::Shared shared;
  shared.delay = milliseconds(20);
  SignalWriter writer(Signal::kSpans, std::make_unique<RecordingSink>(&shared), {});
  writer.Start();
  Outcomes outcomes(&shared);
  constexpr int kThreads = 4, kPerThread = 25;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        int64_t id = t * 1000 + i;
        writer.Submit(Spans(id, 2), outcomes.For(id));
        std::this_thread::sleep_for(milliseconds(1));
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_TRUE(outcomes.WaitFor(kThreads * kPerThread));
  writer.Stop();

  auto status = outcomes.status();
  ASSERT_EQ(status.size(), size_t{kThreads * kPerThread});
  for (const auto& [id, st] : status) EXPECT_TRUE(st.ok()) << id << ": " << st.ToString();
  EXPECT_TRUE(outcomes.ok_before_commit().empty());
  EXPECT_TRUE(outcomes.repeated().empty());

  std::lock_guard<std::mutex> lock(shared.mu);
  EXPECT_LT(shared.groups.size(), size_t{kThreads * kPerThread}) << "no grouping happened";
  std::multiset<int64_t> written;
  for (const auto& g : shared.groups) written.insert(g.begin(), g.end());
  EXPECT_EQ(written.size(), size_t{kThreads * kPerThread});
  EXPECT_EQ(std::set<int64_t>(written.begin(), written.end()).size(), written.size()) << "a batch written twice";
  // Each thread's batches keep their submission order.
  std::map<int64_t, int64_t> last_by_thread;
  for (const auto& g : shared.groups) {
    for (int64_t id : g) {
      auto it = last_by_thread.find(id / 1000);
      if (it != last_by_thread.end()) {
        EXPECT_LT(it->second, id);
      }
      last_by_thread[id / 1000] = id;
    }
  }
  EXPECT_EQ(shared.max_concurrent.load(), 1) << "the sink was called concurrently";

  auto stats = writer.GetStats();
  EXPECT_EQ(stats.commits, shared.groups.size());
  EXPECT_EQ(stats.committed_rows, uint64_t{2 * kThreads * kPerThread});
  EXPECT_EQ(stats.failed_commits, 0u);
  EXPECT_EQ(stats.queued_batches, 0u);
  EXPECT_EQ(stats.queued_rows, 0u);
}

// What `top -H` shows for the writer: its signal, so a busy core is told apart
// from the decoders and the other signals' writers.
TEST(SignalWriterTest, TheWriterThreadIsNamedAfterItsSignal) {
  RecordingSink::Shared shared;
  SignalWriter writer(Signal::kLogs, std::make_unique<RecordingSink>(&shared), {});
  writer.Start();
  std::set<std::string> names;
  for (int i = 0; i < 200 && !names.contains("sl-write-logs"); ++i) {
    std::this_thread::sleep_for(milliseconds(5));  // until the thread has named itself
    names.clear();
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream in(task.path() / "comm");
      std::string name;
      std::getline(in, name);
      names.insert(name);
    }
  }
  writer.Stop();
  EXPECT_TRUE(names.contains("sl-write-logs"));
}

// Prepare runs on the thread that calls it (a decoder), not on the writer
// thread; what it leaves on the batch reaches the writer thread's Write.
class PreparingSink : public SignalSink {
 public:
  struct Mark : PreparedForEngine {
    std::thread::id prepared_on;
    size_t ByteSize() const override { return sizeof(*this); }
  };
  struct Seen {
    std::thread::id prepared_on;  // default: Write found no mark
    std::thread::id written_on;
  };
  explicit PreparingSink(std::vector<Seen>* seen) : seen_(seen) {}
  void Prepare(AnyBatch* batch) const override {
    if (LogBatch* logs = std::get_if<LogBatch>(batch)) {
      auto mark = std::make_shared<Mark>();
      mark->prepared_on = std::this_thread::get_id();
      logs->prepared = mark;
    }
  }
  Status WriteLogs(const std::vector<const LogBatch*>& batches) override {
    for (const LogBatch* b : batches) {
      const auto* mark = dynamic_cast<const Mark*>(b->prepared.get());
      seen_->push_back({mark != nullptr ? mark->prepared_on : std::thread::id(), std::this_thread::get_id()});
    }
    return Status::Ok();
  }

 private:
  std::vector<Seen>* seen_;  // read after Stop()
};

TEST(SignalWriterTest, PrepareRunsOnTheCallersThreadAndReachesTheWriter) {
  std::vector<PreparingSink::Seen> seen;
  SignalWriter writer(Signal::kLogs, std::make_unique<PreparingSink>(&seen), {});
  writer.Start();
  auto batch = std::make_unique<AnyBatch>(LogBatch{});
  std::get<LogBatch>(*batch).time_ns.push_back(1);
  writer.Prepare(batch.get());
  std::promise<Status> done;
  writer.Submit(std::move(batch), [&done](Status s) { done.set_value(s); });
  EXPECT_TRUE(done.get_future().get().ok());
  writer.Stop();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].prepared_on, std::this_thread::get_id());
  EXPECT_NE(seen[0].written_on, std::this_thread::get_id());
}

TEST(SignalWriterTest, GroupsRespectMaxGroupRows) {
  RecordingSink::Shared shared;
  shared.blocked = true;
  SignalWriter writer(Signal::kSpans, std::make_unique<RecordingSink>(&shared), WithMaxRows(10));
  writer.Start();
  Outcomes outcomes(&shared);
  writer.Submit(Spans(0, 1), outcomes.For(0));
  shared.WaitForCalls(1);  // the writer is now stuck in the sink; the rest queue up
  const std::vector<std::pair<int64_t, size_t>> batches = {{1, 4}, {2, 4}, {3, 4}, {4, 25}, {5, 3},
                                                           {6, 3}, {7, 3}, {8, 1}, {9, 10}, {10, 0}};
  size_t queued_rows = 0;
  for (auto [id, rows] : batches) {
    writer.Submit(Spans(id, rows), outcomes.For(id));
    queued_rows += rows;
  }
  auto stats = writer.GetStats();
  EXPECT_EQ(stats.queued_batches, batches.size());
  EXPECT_EQ(stats.queued_rows, queued_rows);
  shared.Release();
  ASSERT_TRUE(outcomes.WaitFor(batches.size() + 1));
  writer.Stop();

  std::lock_guard<std::mutex> lock(shared.mu);
  std::vector<std::vector<int64_t>> want = {{0}, {1, 2}, {3}, {4}, {5, 6, 7, 8}, {9, 10}};
  EXPECT_EQ(shared.groups, want);
  for (const auto& rows : shared.group_rows) {
    size_t total = 0;
    for (size_t r : rows) total += r;
    EXPECT_TRUE(total <= 10 || rows.size() == 1) << total << " rows in a group of " << rows.size();
  }
  for (const auto& [id, st] : outcomes.status()) EXPECT_TRUE(st.ok()) << id;
}

TEST(SignalWriterTest, AFailingBatchDoesNotFailItsGroup) {
  RecordingSink::Shared shared;
  shared.blocked = true;
  shared.fail_id = 13;
  SignalWriter writer(Signal::kSpans, std::make_unique<RecordingSink>(&shared), {});
  writer.Start();
  Outcomes outcomes(&shared);
  writer.Submit(Spans(1, 1), outcomes.For(1));
  shared.WaitForCalls(1);
  for (int64_t id : {11, 12, 13, 14, 15}) writer.Submit(Spans(id, 2), outcomes.For(id));
  shared.Release();
  ASSERT_TRUE(outcomes.WaitFor(6));
  writer.Stop();

  auto status = outcomes.status();
  for (int64_t id : {1, 11, 12, 14, 15}) EXPECT_TRUE(status.at(id).ok()) << id << ": " << status.at(id).ToString();
  const Status& bad = status.at(13);
  EXPECT_EQ(bad.code(), StatusCode::kUnavailable) << bad.ToString();
  EXPECT_TRUE(bad.retryable());
  EXPECT_NE(bad.message().find("disk says no"), std::string::npos) << bad.message();
  EXPECT_TRUE(outcomes.ok_before_commit().empty());
  EXPECT_TRUE(outcomes.repeated().empty());

  {
    std::lock_guard<std::mutex> lock(shared.mu);
    std::vector<std::vector<int64_t>> want = {{1}, {11, 12, 13, 14, 15}, {11}, {12}, {13}, {14}, {15}};
    EXPECT_EQ(shared.groups, want);
    EXPECT_EQ(shared.committed, (std::set<int64_t>{1, 11, 12, 14, 15}));
  }
  auto stats = writer.GetStats();
  EXPECT_EQ(stats.commits, 5u);
  EXPECT_EQ(stats.committed_rows, 9u);
  EXPECT_EQ(stats.failed_commits, 2u);
}

TEST(SignalWriterTest, ASingleFailingBatchGetsARetryableError) {
  RecordingSink::Shared shared;
  shared.fail_id = 5;
  SignalWriter writer(Signal::kSpans, std::make_unique<RecordingSink>(&shared), {});
  writer.Start();
  Outcomes outcomes(&shared);
  writer.Submit(Spans(5, 3), outcomes.For(5));
  ASSERT_TRUE(outcomes.WaitFor(1));
  writer.Submit(Spans(6, 3), outcomes.For(6));
  ASSERT_TRUE(outcomes.WaitFor(2));
  writer.Stop();
  auto status = outcomes.status();
  EXPECT_EQ(status.at(5).code(), StatusCode::kUnavailable);
  EXPECT_TRUE(status.at(6).ok());
  auto stats = writer.GetStats();
  EXPECT_EQ(stats.failed_commits, 1u);
  EXPECT_EQ(stats.commits, 1u);
  EXPECT_EQ(stats.committed_rows, 3u);
}

TEST(SignalWriterTest, StopDrainsQueuedBatchesThenRefuses) {
  RecordingSink::Shared shared;
  shared.blocked = true;
  SignalWriter writer(Signal::kSpans, std::make_unique<RecordingSink>(&shared), WithMaxRows(3));
  writer.Start();
  Outcomes outcomes(&shared);
  writer.Submit(Spans(0), outcomes.For(0));
  shared.WaitForCalls(1);
  for (int64_t id = 1; id <= 20; ++id) writer.Submit(Spans(id), outcomes.For(id));

  std::thread stopper([&] { writer.Stop(); });
  // Stop has begun once a new batch is refused on the spot (those queued
  // before that point are part of the drain).
  int64_t probe = 100;
  for (;;) {
    // 0: queued, 1: refused. A queued probe's callback runs later, on the writer thread.
    auto state = std::make_shared<std::atomic<int>>(0);
    writer.Submit(Spans(probe), [state](Status st) {
      if (!st.ok()) *state = 1;
    });
    if (state->load() == 1) break;
    ++probe;
    std::this_thread::sleep_for(milliseconds(1));
  }
  shared.Release();
  stopper.join();

  // Everything queued before Stop committed, without waiting for anything else.
  auto status = outcomes.status();
  ASSERT_EQ(status.size(), 21u);
  for (const auto& [id, st] : status) EXPECT_TRUE(st.ok()) << id << ": " << st.ToString();
  {
    std::lock_guard<std::mutex> lock(shared.mu);
    std::set<int64_t> want;
    for (int64_t id = 0; id <= 20; ++id) want.insert(id);
    for (int64_t id = 100; id < probe; ++id) want.insert(id);
    EXPECT_EQ(shared.committed, want);
  }

  // After Stop: refused at once, on the caller's thread, with a retryable status.
  Status late;
  bool called = false;
  std::thread::id caller = std::this_thread::get_id(), ran_on;
  writer.Submit(Spans(999), [&](Status st) {
    called = true;
    late = st;
    ran_on = std::this_thread::get_id();
  });
  EXPECT_TRUE(called);
  EXPECT_EQ(late.code(), StatusCode::kUnavailable);
  EXPECT_TRUE(late.retryable());
  EXPECT_EQ(ran_on, caller);
  writer.Stop();  // a second Stop is harmless
}

TEST(SignalWriterTest, DestructorDrainsLikeStop) {
  RecordingSink::Shared shared;
  shared.delay = milliseconds(5);
  Outcomes outcomes(&shared);
  {
    SignalWriter writer(Signal::kSpans, std::make_unique<RecordingSink>(&shared), {});
    writer.Start();
    for (int64_t id = 0; id < 10; ++id) writer.Submit(Spans(id), outcomes.For(id));
  }
  auto status = outcomes.status();
  EXPECT_EQ(status.size(), 10u);
  for (const auto& [id, st] : status) EXPECT_TRUE(st.ok()) << id;
}

TEST(SignalWriterTest, EachSignalUsesItsOwnSinkMethod) {
  RecordingSink::Shared shared;
  Outcomes outcomes(&shared);
  {
    SignalWriter logs(Signal::kLogs, std::make_unique<RecordingSink>(&shared), {});
    EXPECT_EQ(logs.signal(), Signal::kLogs);
    logs.Start();
    auto b = std::make_unique<AnyBatch>(std::in_place_type<LogBatch>);
    std::get<LogBatch>(*b).project_id = 1;
    std::get<LogBatch>(*b).time_ns = {1, 2, 3};
    logs.Submit(std::move(b), outcomes.For(1));
    ASSERT_TRUE(outcomes.WaitFor(1));
    EXPECT_EQ(logs.GetStats().committed_rows, 3u);
  }
  {
    SignalWriter metrics(Signal::kMetrics, std::make_unique<RecordingSink>(&shared), {});
    metrics.Start();
    auto b = std::make_unique<AnyBatch>(std::in_place_type<MetricBatch>);
    std::get<MetricBatch>(*b).project_id = 2;
    std::get<MetricBatch>(*b).time_ns = {1, 2};
    metrics.Submit(std::move(b), outcomes.For(2));
    ASSERT_TRUE(outcomes.WaitFor(2));
    EXPECT_EQ(metrics.GetStats().committed_rows, 2u);
  }
  std::lock_guard<std::mutex> lock(shared.mu);
  EXPECT_EQ(shared.signals, (std::vector<Signal>{Signal::kLogs, Signal::kMetrics}));
  EXPECT_EQ(shared.groups, (std::vector<std::vector<int64_t>>{{1}, {2}}));
}

TEST(BatchRowsTest, CountsRowsOfEachBatchKind) {
  SpanBatch s;
  s.start_time_ns = {1, 2};
  LogBatch l;
  l.time_ns = {1, 2, 3};
  MetricBatch m;
  m.time_ns = {1};
  m.series_id = {1, 2, 3, 4};  // series are not rows
  EXPECT_EQ(BatchRows(AnyBatch(s)), 2u);
  EXPECT_EQ(BatchRows(AnyBatch(l)), 3u);
  EXPECT_EQ(BatchRows(AnyBatch(m)), 1u);
}

}  // namespace
}  // namespace sightline
