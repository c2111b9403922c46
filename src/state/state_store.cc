#include "state/state_store.h"

namespace sightline {

const char* TokenScopeName(TokenScope scope) {
  switch (scope) {
    case TokenScope::kIngest: return "ingest";
    case TokenScope::kRead: return "read";
  }
  return "ingest";
}

std::optional<TokenScope> ParseTokenScope(std::string_view name) {
  if (name == "ingest") return TokenScope::kIngest;
  if (name == "read") return TokenScope::kRead;
  return std::nullopt;
}

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
