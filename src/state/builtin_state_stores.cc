#include <mutex>

#include "state/postgres/postgres_state_store.h"
#include "state/sqlite/sqlite_state_store.h"
#include "state/state_store.h"

namespace sightline {

void RegisterBuiltinStateStores() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The location is the data directory: `sqlite:///var/lib/sightline` or just the path.
    StateStoreRegistry::Instance().Register("sqlite",
                                            [](const std::string& data_dir) { return OpenSqliteStateStore(data_dir); });
    // libpq takes the whole URL (postgres:// and postgresql:// alike), so the scheme goes back on.
    for (std::string scheme : {"postgres", "postgresql"}) {
      StateStoreRegistry::Instance().Register(
          scheme, [scheme](const std::string& rest) { return OpenPostgresStateStore(scheme + "://" + rest); });
    }
  });
}

Result<std::unique_ptr<StateStore>> OpenStateStore(const std::string& location) {
  RegisterBuiltinStateStores();
  return StateStoreRegistry::Instance().Open(location);
}

}  // namespace sightline
