#pragma once

// The relational state schema, defined once for every state store: the
// ordered forward migrations 1..kStateSchemaVersion. A step's SQL is written
// once, in the SQL both SQLite and PostgreSQL run, with a placeholder where
// their type names differ; each store spells the placeholders in its own
// dialect (StateSqlDialect) and runs the result in its migration transaction.
//
//   {ID}   the auto-assigned 64-bit primary key column type:
//          SQLite `INTEGER PRIMARY KEY` (the rowid), PostgreSQL `BIGSERIAL PRIMARY KEY`
//   {INT}  a 64-bit integer: SQLite `INTEGER`, PostgreSQL `BIGINT`
//   {NOW}  the current unix seconds, as a column default:
//          SQLite `(unixepoch())`, PostgreSQL `(extract(epoch FROM now())::bigint)`
//
// Text is TEXT on both. Every time the stores write is bound by the caller,
// so the {NOW} defaults only matter to rows written by hand.

#include <span>
#include <string>

namespace sightline {

//! One forward step of the schema.
struct StateMigration {
  int version;       // what the database is at once this step ran
  const char* what;  // a few words, for messages
  const char* sql;   // one or more statements, with the placeholders above
};

//! How one store spells the placeholders.
struct StateSqlDialect {
  const char* id_column;    // {ID}
  const char* integer;      // {INT}
  const char* now_default;  // {NOW}
};

inline constexpr StateSqlDialect kSqliteStateDialect = {"INTEGER PRIMARY KEY", "INTEGER", "(unixepoch())"};
inline constexpr StateSqlDialect kPostgresStateDialect = {"BIGSERIAL PRIMARY KEY", "BIGINT",
                                                          "(extract(epoch FROM now())::bigint)"};

//! The migrations in order, 1..kStateSchemaVersion.
std::span<const StateMigration> StateMigrations();

//! The step's SQL with every placeholder spelt in `dialect`. SQL without
//! placeholders comes back as it is.
std::string SpellMigration(const StateMigration& migration, const StateSqlDialect& dialect);

}  // namespace sightline
