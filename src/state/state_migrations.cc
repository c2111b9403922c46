#include "state/state_migrations.h"

#include <iterator>
#include <string_view>

#include "state/state_store.h"

namespace sightline {

namespace {

constexpr StateMigration kMigrations[] = {
    {1, "projects, tokens, users, sessions",
     // On SQLite, the schema of the releases before versioning, verbatim: on
     // their databases this step finds every table present and changes nothing.
     "CREATE TABLE IF NOT EXISTS projects(id {ID}, name TEXT NOT NULL UNIQUE,"
     "  created_at {INT} NOT NULL DEFAULT {NOW});"
     "CREATE TABLE IF NOT EXISTS tokens(hash TEXT PRIMARY KEY, project_id {INT} NOT NULL REFERENCES projects(id),"
     "  created_at {INT} NOT NULL DEFAULT {NOW});"
     "CREATE TABLE IF NOT EXISTS users(username TEXT PRIMARY KEY, salt TEXT NOT NULL, password_hash TEXT NOT NULL,"
     "  created_at {INT} NOT NULL DEFAULT {NOW});"
     "CREATE TABLE IF NOT EXISTS sessions(hash TEXT PRIMARY KEY, username TEXT NOT NULL REFERENCES users(username),"
     "  expires_at {INT} NOT NULL);"},
    {2, "password cost per user; tokens by project; sessions by expiry",
     // Every stored hash so far was computed with 100k iterations; recording
     // the count per user lets a later release raise it without locking
     // anyone out.
     "ALTER TABLE users ADD COLUMN pbkdf2_iterations {INT} NOT NULL DEFAULT 100000;"
     "CREATE INDEX tokens_by_project ON tokens(project_id);"
     "CREATE INDEX sessions_by_expiry ON sessions(expires_at);"},
    {3, "token scopes",
     // Every token so far was handed to exporters to send with, so each
     // becomes an ingest token; reading now needs a read token or a session.
     "ALTER TABLE tokens ADD COLUMN scope TEXT NOT NULL DEFAULT 'ingest' CHECK (scope IN ('ingest', 'read'));"},
    {4, "per-project retention",
     "CREATE TABLE project_retention(project_id {INT} NOT NULL REFERENCES projects(id),"
     "  signal TEXT NOT NULL CHECK (signal IN ('spans', 'logs', 'metrics')),"
     "  retention_seconds {INT} NOT NULL CHECK (retention_seconds >= 0),"
     "  PRIMARY KEY (project_id, signal));"},
};
static_assert(std::size(kMigrations) == kStateSchemaVersion, "one migration per schema version");

}  // namespace

std::span<const StateMigration> StateMigrations() { return kMigrations; }

std::string SpellMigration(const StateMigration& migration, const StateSqlDialect& dialect) {
  const std::string_view sql = migration.sql;
  std::string out;
  out.reserve(sql.size() + 64);
  for (size_t i = 0; i < sql.size();) {
    bool replaced = false;
    for (auto [name, spelling] : {std::pair<std::string_view, const char*>{"{ID}", dialect.id_column},
                                  {"{INT}", dialect.integer},
                                  {"{NOW}", dialect.now_default}}) {
      if (sql.substr(i, name.size()) == name) {
        out += spelling;
        i += name.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += sql[i++];
  }
  return out;
}

}  // namespace sightline
