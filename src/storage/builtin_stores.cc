#include <duckdb.h>
#include <sqlite3.h>

#include <mutex>

#include "storage/clickhouse/clickhouse_store.h"
#include "storage/telemetry_store.h"

namespace sightline {

Result<std::unique_ptr<TelemetryStore>> OpenDuckDbStore(const StoreOptions& options);
Result<std::unique_ptr<TelemetryStore>> OpenSqliteStore(const StoreOptions& options);

void RegisterBuiltinStores() {
  static std::once_flag once;
  std::call_once(once, [] {
    StoreRegistry::Instance().Register("duckdb", OpenDuckDbStore);
    StoreRegistry::Instance().Register("sqlite", OpenSqliteStore);
    StoreRegistry::Instance().Register("clickhouse", OpenClickHouseStore);
  });
}

EngineVersions BuiltinEngineVersions() { return EngineVersions{duckdb_library_version(), sqlite3_libversion()}; }

}  // namespace sightline
