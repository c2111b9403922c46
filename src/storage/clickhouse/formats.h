#pragma once

// The wire formats the ClickHouse engine speaks: RowBinary for inserts,
// SQL string literals for values in statements, and TabSeparated for
// answers.

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "storage/sql/sql_connection.h"

namespace sightline::clickhouse {

//! Appends rows in ClickHouse's RowBinary format: fixed-width numbers little
//! endian, strings and arrays as a LEB128 length and their contents, in the
//! table's column order.
class RowBinaryWriter {
 public:
  void UInt8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void Int32(int32_t v) { Raw(&v, sizeof v); }
  void UInt32(uint32_t v) { Raw(&v, sizeof v); }
  void Int64(int64_t v) { Raw(&v, sizeof v); }
  void UInt64(uint64_t v) { Raw(&v, sizeof v); }
  void Float64(double v) { Raw(&v, sizeof v); }
  void VarUInt(uint64_t v) {
    while (v >= 0x80) {
      out_.push_back(static_cast<char>((v & 0x7F) | 0x80));
      v >>= 7;
    }
    out_.push_back(static_cast<char>(v));
  }
  void String(std::string_view s) {
    VarUInt(s.size());
    out_.append(s.data(), s.size());
  }
  //! Array(String).
  void StringArray(const std::vector<std::string>& values) {
    VarUInt(values.size());
    for (const std::string& v : values) String(v);
  }
  //! Array(Float64).
  void Float64Array(const std::vector<double>& values) {
    VarUInt(values.size());
    for (double v : values) Float64(v);
  }
  const std::string& data() const { return out_; }
  std::string Take() { return std::move(out_); }
  bool empty() const { return out_.empty(); }
  void Clear() { out_.clear(); }

 private:
  void Raw(const void* p, size_t n) {
    static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "RowBinary is little endian");
    out_.append(static_cast<const char*>(p), n);
  }
  std::string out_;
};

//! A ClickHouse string literal: quoted, with backslash, quote and control
//! characters escaped, so any bytes (user text included) stay one literal.
std::string Quote(std::string_view s);

//! An identifier in backquotes (database names from the configuration).
std::string QuoteIdentifier(std::string_view s);

//! One answer in TabSeparated (rows of tab-separated escaped cells; \N is
//! NULL), parsed whole.
class TsvResult {
 public:
  //! InvalidArgument when the text is not TabSeparated (a truncated answer).
  static Result<TsvResult> Parse(std::string_view body, bool with_names);
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::vector<std::optional<std::string>>>& rows() const { return rows_; }
  std::vector<std::vector<std::optional<std::string>>>& mutable_rows() { return rows_; }

 private:
  std::vector<std::string> names_;
  std::vector<std::vector<std::optional<std::string>>> rows_;
};

//! A RowView over one row of a TsvResult (GetInt of text that is not an
//! integer is 0; GetDouble reads nan and inf as ClickHouse writes them).
class TsvRowView final : public RowView {
 public:
  explicit TsvRowView(const std::vector<std::optional<std::string>>* row) : row_(row) {}
  bool IsNull(int col) const override;
  int64_t GetInt(int col) const override;
  double GetDouble(int col) const override;
  std::string GetString(int col) const override;
  uint64_t GetUInt(int col) const;

 private:
  const std::vector<std::optional<std::string>>* row_;
};

}  // namespace sightline::clickhouse
