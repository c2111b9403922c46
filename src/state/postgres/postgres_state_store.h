#pragma once

// The PostgreSQL state store, for several Sightline nodes sharing one set of
// projects, tokens, users and sessions. Opened from a libpq connection URL
// (`postgres://user@host:5432/sightline?sslmode=require`, handed to libpq
// whole, so every libpq parameter and PG* environment variable applies).
//
// Connections: a small pool (up to kMaxConnections, opened on demand). A call
// that finds its connection dropped (server restart, idle timeout, failover)
// closes it and runs once more on a new one, so a restarted PostgreSQL costs
// at most one failed call per connection, not a restart of every node. Every
// statement binds its values ($1, $2, ...); nothing is pasted into SQL.
//
// Schema versioning: the same migrations as SQLite (state/state_migrations.h,
// spelt in PostgreSQL's types) and the same schema_version table. Open()
// runs them in one transaction that first takes a transaction-level advisory
// lock (pg_advisory_xact_lock), so nodes starting at once migrate one after
// the other: the second finds the version the first recorded and does
// nothing. A failed step rolls the whole open back (PostgreSQL DDL is
// transactional); a database at a newer version is refused, never downgraded.

#include <memory>
#include <span>
#include <string>

#include "common/status.h"
#include "state/state_migrations.h"
#include "state/state_store.h"

namespace sightline {

//! Connections a store keeps at most: state traffic is a lookup per token
//! cache miss, per session check and per login.
inline constexpr int kPostgresStateMaxConnections = 4;

//! The advisory lock key every node's migration takes: a constant, so two
//! releases of Sightline exclude each other too.
inline constexpr int64_t kPostgresStateMigrationLock = 0x53'4c'53'54'41'54'45'31;  // "SLSTATE1"

//! Connects to `dsn` and migrates its database. IoError when it cannot
//! connect or a migration fails; InvalidArgument when the database is newer
//! than this binary.
Result<std::unique_ptr<StateStore>> OpenPostgresStateStore(const std::string& dsn);

//! The same with another list of migrations, whose last version is the one
//! this open migrates to. For tests (a failing step, a future version).
Result<std::unique_ptr<StateStore>> OpenPostgresStateStore(const std::string& dsn,
                                                           std::span<const StateMigration> migrations);

//! The connection URL with its password (if any) replaced by "***": what
//! messages and logs may show.
std::string RedactDsn(const std::string& dsn);

}  // namespace sightline
