#include "ingest/series_budget.h"

namespace sightline {

void SeriesBudget::AddKnown(int64_t project_id, int64_t series_id) {
  if (max_per_project_ == 0) return;
  MutexLock lock(&mu_);
  known_[project_id].insert(series_id);
}

size_t SeriesBudget::Admit(int64_t project_id, const std::vector<int64_t>& series_ids, std::vector<uint8_t>* keep) {
  keep->assign(series_ids.size(), 1);
  if (max_per_project_ == 0) return 0;
  size_t refused = 0;
  MutexLock lock(&mu_);
  std::unordered_set<int64_t>& known = known_[project_id];
  for (size_t i = 0; i < series_ids.size(); ++i) {
    if (known.contains(series_ids[i])) continue;
    if (known.size() < max_per_project_) {
      known.insert(series_ids[i]);
      continue;
    }
    (*keep)[i] = 0;
    refused++;
  }
  return refused;
}

size_t SeriesBudget::Count(int64_t project_id) {
  MutexLock lock(&mu_);
  auto it = known_.find(project_id);
  return it == known_.end() ? 0 : it->second.size();
}

}  // namespace sightline
