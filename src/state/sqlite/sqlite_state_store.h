#pragma once

// The SQLite state store: one file, state.sqlite, in the data directory, with
// the production pragmas (WAL; common/sqlite_pragmas.h). Several processes may open it
// at once: `sightline token create|revoke` writes while the server runs.
//
// Schema versioning: the version is the one row of the schema_version table
// (a table rather than PRAGMA user_version, so the PostgreSQL store can keep
// it the same way). Open() takes the write lock (BEGIN IMMEDIATE), reads the
// version, applies every later migration and records the new version in that
// one transaction: a failed migration leaves the database as it was. A
// database from before versioning has no schema_version table and counts as
// version 0; migration 1 creates the original tables only where missing, so it
// adopts them unchanged. The migrations are state/state_migrations.h, the same
// list the PostgreSQL store runs, spelt in SQLite's types.

#include <memory>
#include <span>
#include <string>

#include "common/status.h"
#include "state/state_migrations.h"
#include "state/state_store.h"

namespace sightline {

//! Opens (creating the directory, the database and its tables as needed)
//! data_dir/state.sqlite and migrates it. IoError when it cannot be opened or
//! a migration fails; InvalidArgument when the database is newer than this
//! binary.
Result<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& data_dir);

//! The same with another list of migrations, whose last version is the one
//! this open migrates to. For tests (a failing step, a future version).
Result<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& data_dir,
                                                         std::span<const StateMigration> migrations);

}  // namespace sightline
