#pragma once

// A raw SQL read connection: what the SQL engines (DuckDB, SQLite) hand the
// shared SQL implementation of the read contract (sql_reader.h). Nothing
// above storage/ sees it; query/ speaks TelemetryReader.

#include <cstdint>
#include <functional>
#include <string>
#include <variant>
#include <vector>

#include "common/status.h"

namespace sightline {

//! A value bound to a `?` placeholder.
using SqlParam = std::variant<int64_t, double, std::string>;

//! The current row of a query result, valid only inside the row callback.
//! GetInt/GetDouble of a NULL are 0; GetString of a NULL is "".
class RowView {
 public:
  virtual ~RowView() = default;
  virtual bool IsNull(int col) const = 0;
  virtual int64_t GetInt(int col) const = 0;
  virtual double GetDouble(int col) const = 0;
  virtual std::string GetString(int col) const = 0;
};
using RowCallback = std::function<void(const RowView&)>;

//! A read connection, usually leased from a ReadPool. Query() runs on the
//! caller's thread; Interrupt() may be called from any thread while it runs
//! and makes it return Cancelled promptly, leaving the connection usable.
class ReadConnection {
 public:
  virtual ~ReadConnection() = default;
  virtual Status Query(const std::string& sql, const std::vector<SqlParam>& params, const RowCallback& on_row) = 0;
  virtual void Interrupt() = 0;
};

}  // namespace sightline
