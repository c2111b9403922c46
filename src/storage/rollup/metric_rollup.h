#pragma once

// Metric rollups: per project, per minute and per hour, per series, what
// AggregateSeries reads of the points whose time_ns falls in the bucket:
// - the count, sum, min and max of the points with a value (Want::kStats);
// - the newest point with a value: its time and value (Want::kLast);
// - the newest point with a distribution (explicit or exponential buckets,
//   or quantiles): its time and texts, which is all a cumulative series'
//   chart reads (Want::kHistograms);
// - for a delta series (temporality 1), the explicit bucket counts summed,
//   which is what its chart reads, while every summed point had the same
//   bounds and as many counts; otherwise (another layout, an exponential
//   histogram, or points written as another temporality) the row says it
//   cannot be summed and the read takes the raw points instead.
// Every part merges exactly (sums of integers, min, max, the newer of two),
// so a read from the rollups equals the raw read. Three tables as every
// rollup (rollup_table.h), folded by the metric writer.
//
// Unlike the other rollups, a commit of points does not append its deltas:
// a series has a row per minute, so they would be about as many rows as the
// points (a series sends a point every few seconds). The writer keeps them in
// memory and folds them every few seconds; each commit records only the
// (project, minute) pairs it touched for the first time since the last fold,
// in kMetricDirtyTable, and a read takes the points of a dirty minute (and
// of every later one) raw. The fold empties the table in its transaction; a
// crash leaves it, and the next open rebuilds those minutes from the points
// (RebuildDirtyMetricMinutes).

#include <chrono>
#include <compare>
#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/batch.h"
#include "storage/rollup/rollup_table.h"
#include "storage/schema.h"
#include "storage/sql/sql_connection.h"

namespace sightline::rollup {

//! No delta table: the writer keeps a commit's rollups in memory and folds
//! them (FoldMetricRollups).
inline constexpr RollupTables kMetricRollupTables{nullptr, "metric_rollup_minute", "metric_rollup_hour"};
//! Where builds before the in-memory fold appended each commit's rollups;
//! FoldLegacyMetricDeltas folds what one left there and drops it.
inline constexpr const char* kLegacyMetricDeltaTable = "metric_rollup_delta";
//! One row, complete_from_ns, as span_rollup_state (over metric points).
inline constexpr const char* kMetricStateTable = "metric_rollup_state";
//! (project_id, bucket_ns): the minutes with points no fold has added to
//! the minute and hour rows yet.
inline constexpr const char* kMetricDirtyTable = "metric_rollup_dirty";
using ProjectMinute = std::pair<int64_t, int64_t>;

struct MetricRollupKey {
  int64_t project_id = 0;
  int64_t bucket_ns = 0;
  int64_t series_id = 0;
  auto operator<=>(const MetricRollupKey&) const = default;
};

struct MetricRollupValue {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

  // Points with a value.
  int64_t count = 0;
  double sum = 0, min = kNaN, max = kNaN;
  int64_t last_ns = INT64_MIN;  // the newest of them; INT64_MIN: none
  double last = kNaN;

  // The newest point with a distribution; INT64_MIN: none.
  int64_t dist_ns = INT64_MIN;
  std::string counts, bounds, exp, quantiles;  // "" where that point had none

  // Explicit bucket counts summed over the points that have them.
  enum class Summed : int64_t { kNone = 0, kCounts = 1, kUnsummable = 2 };
  Summed summed = Summed::kNone;
  std::vector<double> summed_counts;
  std::string summed_bounds;

  //! Adds point r of the batch, of a delta series or not.
  void Add(const MetricBatch& b, size_t r, bool delta);
  void Merge(const MetricRollupValue& other);
  bool Empty() const { return count == 0 && dist_ns == INT64_MIN && summed == Summed::kNone; }
};

using MetricRollupMap = std::map<MetricRollupKey, MetricRollupValue>;

//! Every point of the batch, by time_ns.
void AddPoints(const MetricBatch& b, MetricRollupMap* m);

struct MetricRollupTraits {
  using Key = MetricRollupKey;
  using Value = MetricRollupValue;
  static constexpr const char* kSelect =
      "project_id, bucket_ns, series_id, count, sum, min, max, last_ns, last, dist_ns, bucket_counts, "
      "explicit_bounds, exp_histogram, quantiles, summed, summed_counts, summed_bounds";
  static Status Read(const RowView& r, Key* k, Value* v);
  static Status Append(RollupSession* s, const char* table, const MetricRollupMap& m);
  // A minute holds a row per series: a fold rewrites only the series it adds to.
  static constexpr const char* kNarrowColumn = "series_id";
  static int64_t NarrowValue(const Key& k) { return k.series_id; }
};

//! A JSON array of the numbers, as the points' bucket_counts are written.
std::string JsonNumbers(const std::vector<double>& v);
//! The numbers of a JSON array of numbers ("[1,2.5,0]", "[]"); false for
//! anything else.
bool ParseJsonNumbers(std::string_view text, std::vector<double>* out);

//! CREATE TABLE IF NOT EXISTS for the four tables.
std::vector<std::string> CreateMetricRollupSql(const schema::TypeNames& types);
//! Records minutes a commit added points to, in its transaction.
Status MarkDirtyMinutes(RollupSession* s, const std::vector<ProjectMinute>& minutes);
//! The writer's pending rollups folded into the minute and hour tables, and
//! no minute dirty (straight from memory).
Status FoldMetricRollups(RollupSession* s, const MetricRollupMap& pending);

//! What a metric writer holds between folds (DuckDB, SQLite): the rollups of
//! the points committed since the last fold, merged per (series, minute),
//! and the minutes its commits marked dirty. Not thread-safe: the engine's
//! write lock guards it.
class PendingMetricRollups {
 public:
  //! A writer folds before its interval once this many (series, minute) rows
  //! are pending (a few hundred bytes each) or this many minutes are dirty
  //! (each a raw read until the fold, and a rebuild at the next open after
  //! a crash).
  static constexpr size_t kMaxRows = 8192;
  static constexpr size_t kMaxDirtyMinutes = 1024;

  //! One commit's share: its rollups and the minutes it marks.
  struct Commit {
    MetricRollupMap series;
    std::vector<ProjectMinute> dirty;
  };
  //! In the commit's transaction: the rollups of `batches` into *c, and
  //! MarkDirtyMinutes of the (project, minute) pairs they touch that no
  //! commit since the last fold has marked.
  Status Mark(RollupSession* s, const std::vector<const MetricBatch*>& batches, Commit* c) const;
  //! Once that transaction has committed.
  void Committed(Commit&& c);

  //! Everything pending into the minute and hour tables, in s's transaction
  //! (FoldMetricRollups); Folded() once it has committed. A fold that fails
  //! leaves the minutes dirty: reads take them raw, an open rebuilds them.
  Status Fold(RollupSession* s) const;
  void Folded();

  bool empty() const { return rows_.empty() && dirty_.empty(); }
  bool Full() const { return rows_.size() >= kMaxRows || dirty_.size() >= kMaxDirtyMinutes; }
  std::chrono::steady_clock::time_point committed_at() const { return committed_at_; }
  std::chrono::steady_clock::time_point folded_at() const { return folded_at_; }

 private:
  MetricRollupMap rows_;
  std::set<ProjectMinute> dirty_;
  std::chrono::steady_clock::time_point committed_at_;
  std::chrono::steady_clock::time_point folded_at_ = std::chrono::steady_clock::now();
};

//! At open: the rows a build before the in-memory fold left in
//! kLegacyMetricDeltaTable folded into the minute and hour tables, and that
//! table dropped; nothing when there is none (DuckDB only: information_schema).
Status FoldLegacyMetricDeltas(RollupSession* s);
//! At open: the minutes left dirty by a process that stopped before its
//! fold, rebuilt from their points, and their hours from their minutes.
//! Sets *rebuilt to the number of minutes.
Status RebuildDirtyMetricMinutes(RollupSession* s, int64_t* rebuilt);
//! The state row if there is none: the lowest time for a database without
//! points, else the hour after the newest.
Status InitMetricRollupState(RollupSession* s);
//! Retention's share (rollup_table.h Expire), before the points themselves
//! are deleted in the transaction.
Status ExpireMetricRollups(RollupSession* s, const std::string& project_filter, int64_t before_ns);

}  // namespace sightline::rollup
