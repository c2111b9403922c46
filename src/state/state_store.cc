#include "state/state_store.h"

namespace sightline {

StateStoreRegistry& StateStoreRegistry::Instance() {
  static StateStoreRegistry registry;
  return registry;
}

void StateStoreRegistry::Register(const std::string& scheme, StateStoreFactory factory) {
  factories_[scheme] = std::move(factory);
}

Result<std::unique_ptr<StateStore>> StateStoreRegistry::Open(const std::string& location) const {
  std::string scheme = "sqlite", rest = location;
  size_t sep = location.find("://");
  if (sep != std::string::npos) {
    scheme = location.substr(0, sep);
    rest = location.substr(sep + 3);
  }
  auto it = factories_.find(scheme);
  if (it == factories_.end()) {
    std::string known;
    for (const auto& [name, factory] : factories_) known += (known.empty() ? "" : ", ") + name;
    return Status::InvalidArgument("no state store for '" + scheme + "://' (known: " + known + ")");
  }
  return it->second(rest);
}

}  // namespace sightline
