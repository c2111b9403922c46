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

//! CREATE TABLE IF NOT EXISTS statements for every table, for `version`.
std::vector<std::string> CreateTablesSql(const std::string& database, const ServerVersion& version);

//! The column list of an INSERT into `table` (schema columns, then extras).
std::string InsertColumns(const char* table);

//! The key/value arrays of a JSON object's scalar attributes, as AttrFilter
//! compares them (strings as they are, true/false, numbers in their
//! shortest form); a repeated key keeps its first value; null, arrays and
//! objects are left out. Text that is not an object gives none.
void AttributeArrays(std::string_view json, std::vector<std::string>* keys, std::vector<std::string>* values);

//! The numbers of a JSON array (histogram bucket counts and bounds); none
//! for text that is not an array.
void NumberArray(std::string_view json, std::vector<double>* out);

}  // namespace sightline::clickhouse
