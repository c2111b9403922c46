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

}  // namespace sightline
