#include "maintenance/retention_policy.h"

#include <algorithm>
#include <limits>
#include <string>

namespace sightline {

namespace {

std::optional<Signal> SignalNamed(const std::string& name) {
  for (int s = 0; s < kSignalCount; ++s) {
    if (name == SignalName(Signal(s))) return Signal(s);
  }
  return std::nullopt;
}

//! now - seconds, without overflowing for retentions reaching before 1970.
int64_t Cutoff(int64_t now_ns, int64_t seconds, int64_t chunk_ns) {
  // A retention longer than int64 nanoseconds reaches before any row.
  if (seconds > std::numeric_limits<int64_t>::max() / kNanosPerSecond) return std::numeric_limits<int64_t>::min();
  const int64_t span = seconds * kNanosPerSecond;
  const int64_t cutoff =
      now_ns < std::numeric_limits<int64_t>::min() + span ? std::numeric_limits<int64_t>::min() : now_ns - span;
  return AlignDown(cutoff, chunk_ns);
}

}  // namespace

Result<RetentionPolicy> RetentionPolicy::Make(std::array<int64_t, kSignalCount> default_seconds,
                                              const std::vector<RetentionRecord>& records) {
  RetentionPolicy p;
  p.default_seconds = default_seconds;
  for (const RetentionRecord& r : records) {
    std::optional<Signal> s = SignalNamed(r.signal);
    if (!s) return Status::InvalidArgument("retention of project '" + r.project + "' names no signal: " + r.signal);
    p.overrides[r.project_id][static_cast<int>(*s)] = r.seconds;
  }
  return p;
}

int64_t RetentionPolicy::Effective(int64_t project, Signal signal) const {
  auto it = overrides.find(project);
  if (it != overrides.end() && it->second[static_cast<int>(signal)]) return *it->second[static_cast<int>(signal)];
  return default_seconds[static_cast<int>(signal)];
}

bool RetentionPolicy::Overridden(int64_t project, Signal signal) const {
  auto it = overrides.find(project);
  return it != overrides.end() && it->second[static_cast<int>(signal)].has_value();
}

int64_t AlignDown(int64_t t, int64_t chunk_ns) {
  if (t < std::numeric_limits<int64_t>::min() + chunk_ns) return std::numeric_limits<int64_t>::min();
  int64_t r = t % chunk_ns;
  return r < 0 ? t - r - chunk_ns : t - r;
}

std::vector<PlannedDelete> PlanRetention(const RetentionPolicy& policy, int64_t now_ns, int64_t chunk_ns) {
  std::vector<PlannedDelete> out;
  for (int s = 0; s < kSignalCount; ++s) {
    const Signal signal = Signal(s);
    std::vector<int64_t> overridden;
    std::map<int64_t, std::vector<int64_t>> by_seconds;  // override -> its projects
    for (const auto& [project, per_signal] : policy.overrides) {
      if (!per_signal[s]) continue;
      overridden.push_back(project);
      if (*per_signal[s] > 0) by_seconds[*per_signal[s]].push_back(project);
    }
    if (policy.default_seconds[s] > 0) {
      out.push_back({signal, ProjectSet::AllBut(overridden), Cutoff(now_ns, policy.default_seconds[s], chunk_ns)});
    }
    for (auto& [seconds, projects] : by_seconds) {
      out.push_back({signal, ProjectSet::Only(std::move(projects)), Cutoff(now_ns, seconds, chunk_ns)});
    }
  }
  return out;
}

std::optional<int64_t> BudgetCutoff(const std::array<std::optional<int64_t>, kSignalCount>& oldest, int64_t chunk_ns) {
  std::optional<int64_t> first;
  for (const std::optional<int64_t>& t : oldest) {
    if (t && (!first || *t < *first)) first = *t;
  }
  if (!first) return std::nullopt;
  const int64_t start = AlignDown(*first, chunk_ns);
  return start > std::numeric_limits<int64_t>::max() - chunk_ns ? std::numeric_limits<int64_t>::max()
                                                                : start + chunk_ns;
}

}  // namespace sightline
