#pragma once

// The ClickHouse tables: the columns of storage/schema.h (same names, each
// with the narrowest ClickHouse type of its source), the columns only this
// engine has (an insertion sequence, attribute key/value arrays), and the
// DDL per server version. docs/STORAGE.md, "ClickHouse", gives the reasons.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/batch.h"
#include "storage/schema.h"

namespace sightline::clickhouse {

//! The server's version and what it supports.
struct ServerVersion {
  int major = 0;
  int minor = 0;
  std::string text;
  bool AtLeast(int ma, int mi) const { return major > ma || (major == ma && minor >= mi); }
  //! LowCardinality, column codecs, TTL and skip indexes without
  //! experimental settings (all stable by 20.1).
  bool modern() const { return AtLeast(20, 1); }
  //! insert_deduplication_token (22.2) on non-replicated tables with a
  //! deduplication window (non_replicated_deduplication_window, 21.3).
  bool dedup_token() const { return AtLeast(22, 2); }
};

//! "18.16.1" -> {18, 16}; InvalidArgument for text that is not a version.
Result<ServerVersion> ParseVersion(const std::string& text);

//! The version of the ClickHouse schema (its own numbering: the embedded
//! engines' schema_version.h versions do not apply).
inline constexpr int64_t kSchemaVersion = 1;
inline constexpr const char* kVersionTable = "schema_version";

//! The ClickHouse type of a schema column (without LowCardinality).
const char* TypeOf(const schema::Column& c);

//! The columns this engine adds after a table's schema columns, in order.
struct ExtraColumn {
  const char* name;
  const char* type;
};
std::vector<ExtraColumn> ExtraColumns(const char* table);

//! Where the tables live: one server, or the shards of a cluster
//! (docs/STORAGE.md, "ClickHouse cluster").
struct Layout {
  std::string cluster;      // as named in remote_servers; empty: one server
  bool replicated = false;  // Replicated*MergeTree local tables (cluster only)
  bool clustered() const { return !cluster.empty(); }
  //! " ON CLUSTER <name>" for DDL, "" on one server.
  std::string OnCluster() const;
  //! The table holding a table's rows on each server: "<table>_local" on a
  //! cluster (the Distributed table has the table's own name), else `table`.
  std::string LocalName(const char* table) const;
};

//! The sharding key of a table's Distributed table: a trace's spans and
//! logs on one shard (cityHash64 of the trace id; a log without one by its
//! seq), a series' points with the series (cityHash64(series_id)), a keyed
//! row by its key.
std::string ShardingKey(const char* table);

//! CREATE TABLE IF NOT EXISTS statements for every table, for `version`; on
//! a cluster each table's local table and then its Distributed table, both
//! ON CLUSTER. The schema_version table is local to each server.
std::vector<std::string> CreateTablesSql(const std::string& database, const ServerVersion& version,
                                         const Layout& layout = Layout());

//! The column list of an INSERT into `table` (schema columns, then extras).
std::string InsertColumns(const char* table);

//! The attribute arrays of a JSON object, the columns AttrFilter's operators
//! read (attr_keys, attr_values, attr_numbers, attr_other): each key's first
//! value decides (a repeated key keeps its first); a scalar (string,
//! true/false, number) goes to keys/values as AttrFilter compares it
//! (numbers in their shortest form), with its number (NaN for strings and
//! booleans) at the same index in numbers; an array or object value only
//! puts its key in `other` (it exists, and compares to nothing); null is
//! left out. Text that is not an object gives none.
struct AttributeArrays {
  std::vector<std::string> keys;
  std::vector<std::string> values;
  std::vector<double> numbers;
  std::vector<std::string> other;
  void Parse(std::string_view json);
};

//! The engine's extra columns holding AttributeArrays, in order.
inline constexpr ExtraColumn kAttributeArrayColumns[] = {{"attr_keys", "Array(String)"},
                                                         {"attr_values", "Array(String)"},
                                                         {"attr_numbers", "Array(Float64)"},
                                                         {"attr_other", "Array(String)"}};

//! The numbers of a JSON array (histogram bucket counts and bounds); none
//! for text that is not an array.
void NumberArray(std::string_view json, std::vector<double>* out);

}  // namespace sightline::clickhouse
