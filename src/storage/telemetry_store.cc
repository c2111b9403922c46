#include "storage/telemetry_store.h"

namespace sightline {

Status SignalSink::WriteSpans(const std::vector<const SpanBatch*>&) {
  return Status::Internal("this sink does not take spans");
}
Status SignalSink::WriteLogs(const std::vector<const LogBatch*>&) {
  return Status::Internal("this sink does not take logs");
}
Status SignalSink::WriteMetrics(const std::vector<const MetricBatch*>&) {
  return Status::Internal("this sink does not take metrics");
}

StoreRegistry& StoreRegistry::Instance() {
  static StoreRegistry registry;
  return registry;
}

void StoreRegistry::Register(const std::string& name, StoreFactory factory) { factories_[name] = std::move(factory); }

Result<std::unique_ptr<TelemetryStore>> StoreRegistry::Open(const std::string& name,
                                                            const StoreOptions& options) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    std::string known;
    for (const auto& [n, f] : factories_) known += (known.empty() ? "" : ", ") + n;
    return Status::InvalidArgument("unknown storage engine '" + name + "' (known: " + known + ")");
  }
  return it->second(options);
}

std::vector<std::string> StoreRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [n, f] : factories_) names.push_back(n);
  return names;
}

Status TelemetryStore::ForEachSeries(const std::function<void(int64_t project_id, int64_t series_id)>& fn) {
  SL_ASSIGN_OR_RETURN(SqlResult r, ExecuteSql("SELECT project_id, series_id FROM metric_series"));
  for (const auto& row : r.rows) {
    if (row.size() != 2 || !row[0] || !row[1]) return Status::Internal("metric_series: a NULL key");
    fn(std::stoll(*row[0]), std::stoll(*row[1]));
  }
  return Status::Ok();
}

}  // namespace sightline
