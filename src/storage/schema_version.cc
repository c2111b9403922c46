#include "storage/schema_version.h"

#include <string>
#include <utility>
#include <vector>

namespace sightline::schema {
namespace {

//! One migration: brings a database from version `from` to `from + 1`.
struct Step {
  int64_t from;
  //! Runs at open without asking; otherwise only under `sightline migrate`.
  //! Automatic steps are cheap and cannot lose anything.
  bool automatic;
  const char* what;
  Status (*run)(SchemaSession*);
};

std::vector<Step> Steps() { return {}; }

//! Rolls back unless committed.
class SchemaTransaction {
 public:
  explicit SchemaTransaction(SchemaSession* session) : session_(session) {}
  ~SchemaTransaction() {
    if (active_) session_->Rollback();
  }
  SchemaTransaction(const SchemaTransaction&) = delete;
  SchemaTransaction& operator=(const SchemaTransaction&) = delete;

  Status Begin() {
    SL_RETURN_IF_ERROR(session_->Begin());
    active_ = true;
    return Status::Ok();
  }
  Status Commit() {
    SL_RETURN_IF_ERROR(session_->Commit());
    active_ = false;
    return Status::Ok();
  }

 private:
  SchemaSession* session_;
  bool active_ = false;
};

Status CreateTables(SchemaSession* s) {
  for (const std::string& ddl : CreateAllTablesSql(s->types())) SL_RETURN_IF_ERROR(s->Exec(ddl));
  return s->Exec(std::string("CREATE TABLE IF NOT EXISTS ") + kVersionTable + " (version " + s->types().int64 +
                 " NOT NULL)");
}

Status Stamp(SchemaSession* s, int64_t version) {
  SL_RETURN_IF_ERROR(s->Exec(std::string("DELETE FROM ") + kVersionTable));
  return s->Exec(std::string("INSERT INTO ") + kVersionTable + " VALUES (" + std::to_string(version) + ")");
}

//! Version 1 databases may predate the derived span columns: add and fill
//! them (MigrationSql). Any other difference is refused.
Status AddDerivedColumns(SchemaSession* s) {
  for (const auto& [table, expected] : AllTableColumns()) {
    Result<std::vector<std::string>> actual = s->ColumnNames(table);
    if (!actual.ok()) return actual.status();
    Result<std::vector<std::string>> migration = MigrationSql(table, expected, *actual, s->types());
    if (!migration.ok()) return migration.status();
    for (const std::string& sql : *migration) {
      Status done = s->Exec(sql);
      if (!done.ok()) return Status::IoError(std::string("migrating ") + table + ": " + done.message());
    }
  }
  return Status::Ok();
}

//! Every table has exactly the columns of this version.
Status CheckColumns(SchemaSession* s) {
  for (const auto& [table, expected] : AllTableColumns()) {
    Result<std::vector<std::string>> actual = s->ColumnNames(table);
    if (!actual.ok()) return actual.status();
    std::vector<std::string> names;
    for (const Column& c : expected) names.emplace_back(c.name);
    SL_RETURN_IF_ERROR(CheckColumnNames(table, names, *actual));
  }
  return Status::Ok();
}

struct Found {
  int64_t version;
  bool recorded;  // in the version table
};

//! The version recorded in the database; else 0 when no table holds a row
//! (nothing was written under any version's rules), or 1 when data is there
//! (written before versions were recorded).
Result<Found> FoundVersion(SchemaSession* s) {
  Result<bool> has_version = s->TableExists(kVersionTable);
  if (!has_version.ok()) return has_version.status();
  if (*has_version) {
    std::vector<int64_t> versions;
    SL_RETURN_IF_ERROR(s->Query(std::string("SELECT version FROM ") + kVersionTable,
                                [&](const RowView& r) { versions.push_back(r.IsNull(0) ? -1 : r.GetInt(0)); }));
    if (versions.size() != 1 || versions[0] < 1) {
      return Status::InvalidArgument(std::string("the ") + kVersionTable + " table holds " +
                                     std::to_string(versions.size()) + " rows; expected one positive version");
    }
    return Found{versions[0], true};
  }
  for (const auto& [table, columns] : AllTableColumns()) {
    Result<bool> exists = s->TableExists(table);
    if (!exists.ok()) return exists.status();
    if (!*exists) continue;
    bool any = false;
    SL_RETURN_IF_ERROR(s->Query(std::string("SELECT 1 FROM ") + table + " LIMIT 1", [&](const RowView&) { any = true; }));
    if (any) return Found{1, false};
  }
  return Found{0, false};
}

}  // namespace

Result<SchemaReport> OpenSchema(SchemaSession* session, const char* engine, const StoreOptions& options) {
  SchemaTransaction txn(session);
  SL_RETURN_IF_ERROR(txn.Begin());
  Result<Found> found_or = FoundVersion(session);
  if (!found_or.ok()) return found_or.status();
  const Found found = *found_or;
  SchemaReport report;
  report.found_version = found.version;
  report.version = kCurrentVersion;
  const std::string where = std::string(engine) + " database in " + options.data_dir;
  const std::string versions = "schema version " + std::to_string(found.version);
  if (found.version > kCurrentVersion) {
    return Status::InvalidArgument("the " + where + " has " + versions + ", newer than this build's " +
                                   std::to_string(kCurrentVersion) +
                                   ": it was written by a newer Sightline, which is the one to run on it "
                                   "(a database is never downgraded; docs/STORAGE.md, Schema versions)");
  }
  std::vector<Step> steps;
  for (const Step& step : Steps()) {
    if (found.version != 0 && step.from >= found.version) steps.push_back(step);
  }
  for (const Step& step : steps) {
    if (step.automatic || options.migrate) continue;
    return Status::InvalidArgument("the " + where + " has " + versions + " and this build uses " +
                                   std::to_string(kCurrentVersion) + "; going from " + std::to_string(step.from) +
                                   " to " + std::to_string(step.from + 1) + " " + step.what +
                                   ". Stop the server and run `sightline migrate --data " + options.data_dir +
                                   " --storage " + engine + "` (docs/STORAGE.md, Schema versions)");
  }
  SL_RETURN_IF_ERROR(CreateTables(session));
  if (found.version <= 1) SL_RETURN_IF_ERROR(AddDerivedColumns(session));
  for (const Step& step : steps) {
    Status done = step.run(session);
    if (!done.ok()) {
      return Status(done.code(), "migrating the " + where + " from " + versions + " to " +
                                     std::to_string(step.from + 1) + ": " + done.message());
    }
    report.applied.push_back(step.what);
  }
  if (!found.recorded || found.version != kCurrentVersion) SL_RETURN_IF_ERROR(Stamp(session, kCurrentVersion));
  SL_RETURN_IF_ERROR(CheckColumns(session));
  SL_RETURN_IF_ERROR(txn.Commit());
  return report;
}

}  // namespace sightline::schema

namespace sightline {

Result<SchemaReport> MigrateStore(const std::string& engine, StoreOptions options) {
  options.migrate = true;
  Result<std::unique_ptr<TelemetryStore>> store = StoreRegistry::Instance().Open(engine, options);
  if (!store.ok()) return store.status();
  SchemaReport report = (*store)->schema_report();
  SL_RETURN_IF_ERROR((*store)->Close());
  return report;
}

}  // namespace sightline
