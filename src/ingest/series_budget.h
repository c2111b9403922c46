#pragma once

// The per-project cap on metric series (--max-series-per-project). Series
// rows are kept for good (retention deletes points, never series), so a
// sender that invents a new label value in every request would grow the
// series table, the writers' key sets and every catalog read without bound.
// Past the cap a project's new series are refused: their points are not
// stored and are counted in partial_success; its known series go on.

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "common/mutex.h"

namespace sightline {

//! Thread-safe. Knows every series id of every project (loaded at start from
//! the store, then each one it admits), about 40 bytes a series.
class SeriesBudget {
 public:
  //! 0 = no cap (nothing is tracked).
  explicit SeriesBudget(size_t max_per_project) : max_per_project_(max_per_project) {}

  size_t max_per_project() const { return max_per_project_; }
  //! A stored series (at start).
  void AddKnown(int64_t project_id, int64_t series_id) EXCLUDES(mu_);
  //! Sets keep[i] for each of `series_ids` that may be written: a known
  //! series, or a new one while the project is under the cap (it is counted
  //! from now on, whether or not its write commits). Returns how many were
  //! refused.
  size_t Admit(int64_t project_id, const std::vector<int64_t>& series_ids, std::vector<uint8_t>* keep) EXCLUDES(mu_);
  //! The series a project holds (tests, /metrics).
  size_t Count(int64_t project_id) EXCLUDES(mu_);

 private:
  const size_t max_per_project_;
  Mutex mu_;
  std::unordered_map<int64_t, std::unordered_set<int64_t>> known_ GUARDED_BY(mu_);
};

}  // namespace sightline
