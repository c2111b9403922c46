#pragma once

// Small pieces every `sightline bench` sub-command shares: a description of
// the machine for the JSON, temp data directories, spawned-server tokens, and
// median/min/max of repeated measurements.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"

namespace sightline {
class JsonWriter;
}

namespace sightline::bench {

struct Machine {
  unsigned cores = 0;
  std::string cpu_model;
  uint64_t mem_bytes = 0;
  std::string kernel;
};

//! Cores, CPU model, memory and kernel, from /proc and uname.
Machine DescribeMachine();

//! The 1-minute load average (-1 when unreadable); recorded before each run
//! because this machine is shared and noisy.
double LoadAverage1m();

//! A fresh random ingest token for a spawned server.
std::string RandomToken();

//! mkdtemp of PARENT/sightline-bench-XXXXXX, making PARENT first if missing.
std::optional<std::string> MakeTempDir(const std::string& parent);

//! Writes "machine": {"cores", "cpu_model", "mem_bytes", "kernel"} (key included).
void WriteMachineJson(JsonWriter* w, const Machine& m);

//! The current UTC time as 2026-11-29T23:40:00Z (the JSON's started_at).
std::string UtcNowIso8601();

//! $TMPDIR, or /tmp.
std::string DefaultWorkParent();

//! Samples a server's RSS (from /proc or deep health: `probe`) on its own
//! thread until Stop(); returns the peak.
class RssPeakSampler {
 public:
  explicit RssPeakSampler(std::function<uint64_t()> probe,
                          std::chrono::milliseconds interval = std::chrono::milliseconds(200))
      : probe_(std::move(probe)), interval_(interval) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~RssPeakSampler() { Stop(); }
  uint64_t Stop() EXCLUDES(mu_) {
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    cv_.SignalAll();
    if (thread_.joinable()) thread_.join();
    return peak_.load();
  }

 private:
  void Loop() EXCLUDES(mu_) {
    for (;;) {
      {
        MutexLock lock(&mu_);
        if (stop_) return;
      }
      peak_ = std::max<uint64_t>(peak_.load(), probe_());
      const CondVar::Clock::time_point next = CondVar::Clock::now() + interval_;
      MutexLock lock(&mu_);
      while (!stop_) {
        if (!cv_.WaitUntil(&mu_, next)) break;
      }
    }
  }
  std::function<uint64_t()> probe_;
  std::chrono::milliseconds interval_;
  Mutex mu_;
  CondVar cv_{&mu_};  // signalled by Stop()
  bool stop_ GUARDED_BY(mu_) = false;
  std::atomic<uint64_t> peak_{0};
  std::thread thread_;
};

//! Nearest-rank percentile (p in 0..100) of already sorted values; 0 when empty.
double NearestRankSorted(const std::vector<float>& sorted, double p);

//! Nearest-rank percentile (p in 0..100) of values; 0 when empty. Sorts values.
double Percentile(std::vector<float>* values, double p);

//! Request latencies, milliseconds: nearest-rank p50/p95/p99 and the max.
struct LatencySummary {
  double p50 = 0, p95 = 0, p99 = 0, max = 0;
};

//! Sorts *values_ms once and reads all four figures from it.
LatencySummary SummarizeLatency(std::vector<float>* values_ms);

//! Writes "latency_ms": {"p50", "p95", "p99", "max"} (key included).
void WriteLatencyJson(JsonWriter* w, const LatencySummary& s);

struct Spread {
  double median = 0, min = 0, max = 0;
};

//! Median (mean of the middle two for even counts), min and max; zeros when empty.
Spread SpreadOf(std::vector<double> v);

//! 1234567 -> "1.23M", 45678 -> "45.7k", 999 -> "999".
std::string Human(double v);

//! The engine a run names in its JSON and tables: the spawned one, with
//! "-cluster" when the spawned server was given --clickhouse-cluster;
//! "external" for a server the bench did not start.
std::string EngineLabel(const std::string& spawn, const std::vector<std::string>& server_args);

}  // namespace sightline::bench
