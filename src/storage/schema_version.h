#pragma once

// The telemetry database's schema version and its migrations, for every SQL
// engine. Each database records the version it was written in (a one-row
// table, schema_version, created in the transaction that creates the tables).
// Opening a database of an older version migrates it when the step is cheap
// and safe, and otherwise refuses with a message that names
// `sightline migrate`; a newer version is always refused. Never silently:
// data written under one version's rules is not read or extended under
// another's. docs/STORAGE.md, "Schema versions", lists the versions.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/schema.h"
#include "storage/sql/sql_connection.h"
#include "storage/telemetry_store.h"

namespace sightline::schema {

//! The version this build reads and writes.
inline constexpr int64_t kCurrentVersion = 8;
inline constexpr const char* kVersionTable = "schema_version";

//! What an engine lends the version check and the migrations: one connection
//! and the transaction on it. Used by one thread, during open.
class SchemaSession {
 public:
  virtual ~SchemaSession() = default;
  virtual Status Begin() = 0;
  virtual Status Commit() = 0;
  //! Ends the transaction Begin() opened without keeping anything.
  virtual void Rollback() = 0;
  virtual Status Exec(const std::string& sql) = 0;
  virtual Status Query(const std::string& sql, const RowCallback& on_row) = 0;
  virtual Result<bool> TableExists(const char* table) = 0;
  //! The columns of an existing table, in order.
  virtual Result<std::vector<std::string>> ColumnNames(const char* table) = 0;
  virtual const TypeNames& types() const = 0;
};

//! Creates the tables of a new database at kCurrentVersion, or checks an
//! existing one and brings it to kCurrentVersion, in one transaction on
//! `session`; on error nothing has changed. A database without a version
//! table was written before versions were recorded: when every table is
//! empty it is simply stamped, else it is version 1. Steps that are not
//! automatic run only when `options.migrate` is set (`sightline migrate`);
//! otherwise they are refused with InvalidArgument, as is a newer version.
//! `engine` and `options.data_dir` go into the messages.
Result<SchemaReport> OpenSchema(SchemaSession* session, const char* engine, const StoreOptions& options);

}  // namespace sightline::schema

namespace sightline {

//! `sightline migrate`: opens the store with every migration allowed, then
//! closes it. The report says which version the database was at and which
//! steps ran; none when it was current already.
Result<SchemaReport> MigrateStore(const std::string& engine, StoreOptions options);

}  // namespace sightline
