#pragma once

// The in-memory reference engine: rows in plain structs, every read operation
// of storage/telemetry_reader.h in plain C++ written for clarity, not speed.
// It is the independent answer the read conformance suite
// (storage/read_conformance_test.cc) holds every engine to, so it shares no
// read code with the SQL engines. Not registered for `serve`: nothing is
// persisted, and every operation scans every row.

#include <atomic>
#include <memory>
#include <string>

#include "common/mutex.h"
#include "common/status.h"
#include "storage/memory/memory_tables.h"
#include "storage/telemetry_reader.h"
#include "storage/telemetry_store.h"

namespace sightline {

//! How LogFilter::text folds case. The contract lets engines differ here:
//! SQLite's LIKE folds ASCII only; DuckDB's lower() folds Unicode.
enum class TextFolding {
  kAscii,  // A-Z only, as SQLite
  //! Also the one-to-one lowercase mappings of Latin-1 (À-Þ), basic Greek
  //! (Ά-Ϋ) and basic Cyrillic (Ѐ-Я), as Unicode's simple case mapping (DuckDB's
  //! lower()) gives them. Other characters compare as they are: the reference
  //! covers the characters of the conformance dataset, not all of Unicode.
  kSimpleUnicode,
};

struct MemoryReaderOptions {
  TextFolding text_folding = TextFolding::kAscii;
};

//! Thread-safe, like every store: sinks write from their own threads while
//! readers read. Each write is applied under one lock after the whole call
//! validated, so a reader sees all of it or none. Sinks and readers must not
//! outlive the store.
class MemoryStore final : public TelemetryStore {
 public:
  MemoryStore() = default;
  ~MemoryStore() override = default;

  const char* name() const override { return "memory"; }
  Result<std::unique_ptr<SignalSink>> NewSink(Signal signal) override;
  StoreStats Stats() EXCLUDES(mu_) override;
  //! InvalidArgument: the memory engine has no SQL.
  Result<SqlResult> ExecuteSql(const std::string& sql) override;
  Status ForEachSeries(const std::function<void(int64_t project_id, int64_t series_id)>& fn) EXCLUDES(mu_) override;
  //! A reader over the committed rows, folding log text as ASCII. Readers are
  //! independent and there is no pool, so this never waits and never fails.
  Result<std::unique_ptr<TelemetryReader>> AcquireReader(int64_t wait_ms) override;
  //! Internal while sinks are open; otherwise OK (there is nothing to flush).
  Status Close() override;
  Result<uint64_t> DeleteBefore(Signal signal, const ProjectSet& projects, int64_t before_ns) EXCLUDES(mu_) override;
  Result<std::optional<int64_t>> OldestTime(Signal signal) EXCLUDES(mu_) override;
  //! OK: erased rows are freed at once.
  Status ReclaimSpace() override { return Status::Ok(); }
  //! All zero: nothing is on disk.
  Result<StoreFootprint> Footprint() override { return StoreFootprint{}; }

  //! AcquireReader with a choice of text folding (the reference for an engine
  //! that folds Unicode).
  Result<std::unique_ptr<TelemetryReader>> OpenReader(MemoryReaderOptions options);

  //! Runs f(const memory::Tables&) under the store lock and returns its result.
  template <typename F>
  auto Read(F&& f) const EXCLUDES(mu_) {
    MutexLock lock(&mu_);
    return f(static_cast<const memory::Tables&>(tables_));
  }

  //! Appends rows of a validated write under the store lock (sinks call it).
  void Commit(memory::Tables&& rows) EXCLUDES(mu_);

  void SinkOpened() { open_sinks_.fetch_add(1); }
  void SinkClosed() { open_sinks_.fetch_sub(1); }

 private:
  mutable Mutex mu_;
  memory::Tables tables_ GUARDED_BY(mu_);
  std::atomic<int> open_sinks_{0};
};

//! Opens an empty memory store (options are ignored). Never fails.
Result<std::unique_ptr<TelemetryStore>> OpenMemoryStore(const StoreOptions& options);

}  // namespace sightline
