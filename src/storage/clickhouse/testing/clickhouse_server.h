#pragma once

// Test support: one real clickhouse-server per test binary, started at first
// use on free loopback ports with a minimal configuration in a temporary
// directory, and stopped (and the directory removed) when the binary exits.
// Tests get a database of their own (UniqueDatabase), so they stay
// independent while sharing the server.

#include <string>
#include <vector>

#include "common/status.h"
#include "storage/telemetry_store.h"

namespace sightline::clickhouse::testing {

//! The running server's HTTP URL, starting it on first call. An error (never
//! a skip) when the binary is missing or the server does not come up: the
//! ClickHouse tests must fail then. The binary is $SIGHTLINE_CLICKHOUSE_SERVER,
//! else /usr/sbin/clickhouse-server, else clickhouse-server on the PATH.
Result<std::string> ServerUrl();

//! A second user of the server, with a password (the default user has none).
inline constexpr const char* kTestUser = "sightline_test";
inline constexpr const char* kTestPassword = "test-password";

//! A database name no other call in this process returns.
std::string UniqueDatabase(const std::string& hint);

//! Store options for the shared server and a fresh database; when the server
//! cannot start, a URL nothing listens on (the open then fails).
StoreOptions StoreOptionsForTest(const std::string& hint);

//! The cluster of ClusterUrls: two shards of one replica each.
inline constexpr const char* kTestCluster = "sightline_test";

//! A ClickHouse cluster per test binary, started at first call: a ZooKeeper
//! (Debian's zookeeper package: $JAVA or java, $SIGHTLINE_ZOOKEEPER_JAR or
//! /usr/share/java/zookeeper.jar) and two clickhouse-servers as the two
//! shards of kTestCluster (remote_servers, zookeeper, distributed_ddl and
//! {shard}/{replica} macros in their configs), each on free loopback ports
//! in a temporary directory; all stopped when the binary exits. The shards'
//! HTTP URLs; an error (never a skip) when a part is missing or does not
//! come up. Separate from ServerUrl()'s single server.
Result<std::vector<std::string>> ClusterUrls();

//! Store options for the cluster in cluster mode with replicated tables and
//! an insert quorum of 1, reached through shard `shard` (0 or 1), and a
//! fresh database.
StoreOptions ClusterStoreOptionsForTest(const std::string& hint, int shard = 0);

//! The in-process ClickHouse of this binary (chdb_transport.h): chdb:// on a
//! temporary directory made at first call and removed at exit. The library
//! is where chdb_transport.h says; a missing one fails the open (never a skip).
std::string ChdbUrl();

//! Store options for the in-process ClickHouse and a fresh database.
StoreOptions ChdbStoreOptionsForTest(const std::string& hint);

//! StoreOptionsForTest for "clickhouse" (the server), ChdbStoreOptionsForTest
//! for "chdb": the two ways the engine runs in the tests.
StoreOptions StoreOptionsForTest(const std::string& variant, const std::string& hint);

}  // namespace sightline::clickhouse::testing
