#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <variant>

#include "common/mutex.h"
#include "common/status.h"
#include "model/batch.h"
#include "storage/telemetry_store.h"

namespace sightline {

//! The write path's group commit: one writer (and one thread) per signal.
//! Submit() queues a decoded batch; the writer thread takes everything queued,
//! hands it to its SignalSink as one transaction, and then calls each batch's
//! callback with the outcome. A callback sees OK only after its rows are
//! committed, which is what lets a request be acknowledged.
//!
//! Lifecycle: Start() once, Submit() from any thread, Stop() refuses new
//! batches, commits everything already queued and joins. Thread-safe.
class SignalWriter {
 public:
  using Done = std::function<void(Status)>;

  struct Options {
    size_t max_group_rows = 500000;  // bounds one transaction's size
  };

  SignalWriter(Signal signal, std::unique_ptr<SignalSink> sink, Options options);
  ~SignalWriter();

  void Start();
  //! The sink's SignalSink::Prepare, on the calling thread (a decoder): call
  //! it before Submit to move that work off the writer thread. Thread-safe.
  void Prepare(AnyBatch* batch) const { sink_->Prepare(batch); }
  //! Queues a batch; `done` runs on the writer thread. After Stop() the batch is
  //! refused: `done` runs at once with Unavailable.
  void Submit(std::unique_ptr<AnyBatch> batch, Done done) EXCLUDES(mu_);
  void Stop() EXCLUDES(mu_);

  struct Stats {
    uint64_t queued_batches = 0;
    uint64_t queued_rows = 0;
    uint64_t commits = 0;
    uint64_t committed_rows = 0;
    uint64_t failed_commits = 0;
  };
  Stats GetStats() EXCLUDES(mu_);
  Signal signal() const { return signal_; }

 private:
  struct Pending {
    std::unique_ptr<AnyBatch> batch;
    Done done;
    size_t rows;
  };
  void Run();
  Status WriteGroup(const std::vector<Pending>& group);

  const Signal signal_;
  const Options options_;
  std::unique_ptr<SignalSink> sink_;
  std::thread thread_;

  Mutex mu_;
  CondVar cv_{&mu_};  // signalled on a new batch and on Stop()
  std::deque<Pending> queue_ GUARDED_BY(mu_);
  uint64_t queued_rows_ GUARDED_BY(mu_) = 0;
  bool stopping_ GUARDED_BY(mu_) = false;

  std::atomic<uint64_t> commits_{0};
  std::atomic<uint64_t> committed_rows_{0};
  std::atomic<uint64_t> failed_commits_{0};
};

}  // namespace sightline
