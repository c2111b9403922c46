#pragma once

// A mergeable latency sketch with a stated relative error, for the span
// rollups (storage/rollup/span_rollup.h): log-linear buckets as in DDSketch.
// A positive duration d falls in bucket ceil(log_gamma(d)), whose every
// value lies within kRelativeError of the bucket's representative value, so
// any rank's value is known to that error. Sketches of any two sets of spans
// merge by adding bucket counts, which is what lets a minute's or an hour's
// rollup row stand in for its spans.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace sightline {

class LatencySketch {
 public:
  //! The promise docs/API.md states: every percentile read from a sketch
  //! (the interpolated rank of PercentileSorted, from the representative
  //! values of the two buckets around it) is within this fraction of the
  //! exact one, for non-negative durations.
  static constexpr double kRelativeError = 0.01;

  void Add(int64_t duration_ns) { AddKey(KeyOf(duration_ns), 1); }
  void Merge(const LatencySketch& other);
  //! Adds the counts of an encoded sketch (Encode's text).
  Status MergeEncoded(std::string_view text);
  //! "key:count" pairs separated by spaces, keys ascending: text every SQL
  //! engine stores as a string. Empty for an empty sketch.
  std::string Encode() const;

  int64_t count() const { return count_; }
  //! The heap memory it holds.
  size_t ByteSize() const { return buckets_.capacity() * sizeof(buckets_[0]); }
  //! The interpolated percentile (q in [0,1]) at the representative values,
  //! clamped to [min_ns, max_ns] (the exact extremes the caller kept). NaN
  //! when empty.
  double Percentile(double q, int64_t min_ns, int64_t max_ns) const;

  //! The bucket key of a duration: 0 for 0, i + 1 for a positive duration in
  //! bucket i, -(i + 1) for a negative one.
  static int32_t KeyOf(int64_t duration_ns);
  //! The value a bucket key stands for.
  static double ValueOf(int32_t key);

 private:
  void AddKey(int32_t key, int64_t n);
  //! The representative value of the rank-th smallest duration (0-based).
  double ValueAtRank(int64_t rank) const;

  //! (key, count) of the non-empty buckets, by key: sparse, so a sketch
  //! holds no more entries than values (two spans a second and an hour
  //! apart are two entries, not the ~1,400 buckets between them).
  std::vector<std::pair<int32_t, int64_t>> buckets_;
  int64_t count_ = 0;
};

}  // namespace sightline
