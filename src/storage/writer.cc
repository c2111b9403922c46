#include "storage/writer.h"

#include "common/thread_name.h"

namespace sightline {

SignalWriter::SignalWriter(Signal signal, std::unique_ptr<SignalSink> sink, Options options)
    : signal_(signal), options_(options), sink_(std::move(sink)) {}

SignalWriter::~SignalWriter() { Stop(); }

void SignalWriter::Start() {
  thread_ = std::thread([this] {
    switch (signal_) {
      case Signal::kSpans: NameThisThread("sl-write-spans"); break;
      case Signal::kLogs: NameThisThread("sl-write-logs"); break;
      case Signal::kMetrics: NameThisThread("sl-write-metric"); break;
    }
    Run();
  });
}

void SignalWriter::Submit(std::unique_ptr<AnyBatch> batch, Done done) {
  size_t rows = BatchRows(*batch);
  {
    MutexLock lock(&mu_);
    if (!stopping_) {
      queue_.push_back(Pending{std::move(batch), std::move(done), rows});
      queued_rows_ += rows;
      cv_.Signal();
      return;
    }
  }
  done(Status::Unavailable("server is shutting down"));
}

void SignalWriter::Stop() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    cv_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

SignalWriter::Stats SignalWriter::GetStats() {
  Stats s;
  {
    MutexLock lock(&mu_);
    s.queued_batches = queue_.size();
    s.queued_rows = queued_rows_;
  }
  s.commits = commits_.load();
  s.committed_rows = committed_rows_.load();
  s.failed_commits = failed_commits_.load();
  return s;
}

Status SignalWriter::WriteGroup(const std::vector<Pending>& group) {
  switch (signal_) {
    case Signal::kSpans: {
      std::vector<const SpanBatch*> v;
      for (const auto& p : group) v.push_back(&std::get<SpanBatch>(*p.batch));
      return sink_->WriteSpans(v);
    }
    case Signal::kLogs: {
      std::vector<const LogBatch*> v;
      for (const auto& p : group) v.push_back(&std::get<LogBatch>(*p.batch));
      return sink_->WriteLogs(v);
    }
    case Signal::kMetrics: {
      std::vector<const MetricBatch*> v;
      for (const auto& p : group) v.push_back(&std::get<MetricBatch>(*p.batch));
      return sink_->WriteMetrics(v);
    }
  }
  return Status::Internal("unknown signal");
}

void SignalWriter::Run() {
  std::vector<Pending> group;
  for (;;) {
    group.clear();
    {
      MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping and drained
      size_t rows = 0;
      while (!queue_.empty() && (group.empty() || rows + queue_.front().rows <= options_.max_group_rows)) {
        rows += queue_.front().rows;
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      queued_rows_ -= rows;
    }
    Status st = WriteGroup(group);
    if (!st.ok() && group.size() > 1) {
      // One bad batch must not fail its neighbours: retry each on its own.
      failed_commits_++;
      for (auto& p : group) {
        std::vector<Pending> one;
        one.push_back(std::move(p));
        Status s1 = WriteGroup(one);
        if (s1.ok()) {
          commits_++;
          committed_rows_ += one[0].rows;
        } else {
          failed_commits_++;
        }
        one[0].done(s1.ok() || s1.code() == StatusCode::kInvalidArgument
                        ? s1  // a batch the engine refuses is not worth retrying
                        : Status::Unavailable("storage write failed: " + s1.message()));
      }
      continue;
    }
    if (st.ok()) {
      commits_++;
      for (const auto& p : group) committed_rows_ += p.rows;
    } else {
      failed_commits_++;
      if (st.code() != StatusCode::kInvalidArgument) st = Status::Unavailable("storage write failed: " + st.message());
    }
    for (auto& p : group) p.done(st);
  }
}

}  // namespace sightline
