#include "storage/duckdb/duckdb_reader.h"

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string_view>
#include <vector>

namespace sightline {

namespace {

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

int64_t ClampToInt64(__int128 v) {
  return v > kInt64Max ? kInt64Max : v < kInt64Min ? kInt64Min : static_cast<int64_t>(v);
}

//! Rounds to nearest, ties to even, as DuckDB's cast does; NaN is 0 and
//! values out of range are clamped.
int64_t DoubleToInt64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return kInt64Max;
  if (v <= -9223372036854775808.0) return kInt64Min;
  return static_cast<int64_t>(std::nearbyint(v));
}

std::string Int128ToString(__int128 v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  unsigned __int128 u = negative ? -static_cast<unsigned __int128>(v) : static_cast<unsigned __int128>(v);
  char buf[48];
  char* end = buf + sizeof(buf);
  char* p = end;
  for (; u != 0; u /= 10) *--p = static_cast<char>('0' + static_cast<int>(u % 10));
  if (negative) *--p = '-';
  return std::string(p, end);
}

//! One result column inside the current chunk: how its values are stored and
//! where. DECIMAL columns are read through their storage integer and scale.
struct ColumnReader {
  duckdb_type type = DUCKDB_TYPE_INVALID;  // for DECIMAL, the storage type
  bool decimal = false;
  uint8_t scale = 0;
  const void* data = nullptr;
  const uint64_t* validity = nullptr;  // null: every row is valid

  bool IsNull(idx_t row) const {
    return type == DUCKDB_TYPE_SQLNULL ||
           (validity != nullptr && !duckdb_validity_row_is_valid(const_cast<uint64_t*>(validity), row));
  }

  template <typename T>
  T At(idx_t row) const {
    return static_cast<const T*>(data)[row];
  }

  //! The value of an integer-stored column (integers, booleans, decimals'
  //! storage) as a 128-bit integer.
  __int128 Integer(idx_t row) const {
    switch (type) {
      case DUCKDB_TYPE_BOOLEAN: return At<bool>(row) ? 1 : 0;
      case DUCKDB_TYPE_TINYINT: return At<int8_t>(row);
      case DUCKDB_TYPE_SMALLINT: return At<int16_t>(row);
      case DUCKDB_TYPE_INTEGER: return At<int32_t>(row);
      case DUCKDB_TYPE_BIGINT: return At<int64_t>(row);
      case DUCKDB_TYPE_UTINYINT: return At<uint8_t>(row);
      case DUCKDB_TYPE_USMALLINT: return At<uint16_t>(row);
      case DUCKDB_TYPE_UINTEGER: return At<uint32_t>(row);
      case DUCKDB_TYPE_UBIGINT: return At<uint64_t>(row);
      case DUCKDB_TYPE_HUGEINT: {
        duckdb_hugeint h = At<duckdb_hugeint>(row);
        return static_cast<__int128>(static_cast<unsigned __int128>(static_cast<uint64_t>(h.upper)) << 64 | h.lower);
      }
      default: return 0;
    }
  }

  bool IsFloat() const { return type == DUCKDB_TYPE_DOUBLE || type == DUCKDB_TYPE_FLOAT; }
  bool IsText() const { return type == DUCKDB_TYPE_VARCHAR || type == DUCKDB_TYPE_BLOB; }

  double Float(idx_t row) const { return type == DUCKDB_TYPE_DOUBLE ? At<double>(row) : At<float>(row); }

  //! Text with its explicit length: an embedded NUL byte is kept.
  std::string_view Text(idx_t row) const {
    const duckdb_string_t& s = static_cast<const duckdb_string_t*>(data)[row];
    uint32_t n = s.value.inlined.length;
    return {n <= sizeof(s.value.inlined.inlined) ? s.value.inlined.inlined : s.value.pointer.ptr, n};
  }

  static __int128 Pow10(uint8_t scale) {
    __int128 p = 1;
    for (uint8_t i = 0; i < scale; ++i) p *= 10;
    return p;
  }
};

//! Whether the reader can convert a column of this type; the types dashboards
//! produce (integers, sums as HUGEINT, averages and quantiles as DOUBLE,
//! decimal literals, text, booleans).
bool Readable(duckdb_type type) {
  switch (type) {
    case DUCKDB_TYPE_BOOLEAN:
    case DUCKDB_TYPE_TINYINT:
    case DUCKDB_TYPE_SMALLINT:
    case DUCKDB_TYPE_INTEGER:
    case DUCKDB_TYPE_BIGINT:
    case DUCKDB_TYPE_UTINYINT:
    case DUCKDB_TYPE_USMALLINT:
    case DUCKDB_TYPE_UINTEGER:
    case DUCKDB_TYPE_UBIGINT:
    case DUCKDB_TYPE_HUGEINT:
    case DUCKDB_TYPE_FLOAT:
    case DUCKDB_TYPE_DOUBLE:
    case DUCKDB_TYPE_VARCHAR:
    case DUCKDB_TYPE_BLOB:
    case DUCKDB_TYPE_SQLNULL: return true;
    default: return false;
  }
}

class DuckDbRow final : public RowView {
 public:
  explicit DuckDbRow(const std::vector<ColumnReader>* columns) : columns_(columns) {}
  void set_row(idx_t row) { row_ = row; }

  bool IsNull(int col) const override { return column(col).IsNull(row_); }

  int64_t GetInt(int col) const override {
    const ColumnReader& c = column(col);
    if (c.IsNull(row_)) return 0;
    if (c.IsFloat()) return DoubleToInt64(c.Float(row_));
    if (c.IsText()) {
      std::string_view s = c.Text(row_);
      int64_t v = 0;
      auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec == std::errc() && end == s.data() + s.size()) return v;
      double d = 0;  // "2.75" casts to 3 in DuckDB
      std::from_chars(s.data(), s.data() + s.size(), d);
      return DoubleToInt64(d);
    }
    __int128 v = c.Integer(row_);
    if (c.decimal) {
      __int128 p = ColumnReader::Pow10(c.scale);
      __int128 q = v / p, r = v % p;
      if (2 * (r < 0 ? -r : r) >= p) q += v < 0 ? -1 : 1;
      v = q;
    }
    return ClampToInt64(v);
  }

  double GetDouble(int col) const override {
    const ColumnReader& c = column(col);
    if (c.IsNull(row_)) return 0;
    if (c.IsFloat()) return c.Float(row_);
    if (c.IsText()) {
      std::string_view s = c.Text(row_);
      double v = 0;
      std::from_chars(s.data(), s.data() + s.size(), v);
      return v;
    }
    double v = static_cast<double>(c.Integer(row_));
    return c.decimal ? v / std::pow(10.0, c.scale) : v;
  }

  std::string GetString(int col) const override {
    const ColumnReader& c = column(col);
    if (c.IsNull(row_)) return std::string();
    if (c.IsText()) return std::string(c.Text(row_));
    if (c.type == DUCKDB_TYPE_BOOLEAN) return c.At<bool>(row_) ? "true" : "false";
    if (c.IsFloat()) {
      // The shortest text that reads back as the same value.
      char buf[64];
      auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), c.Float(row_));
      return ec == std::errc() ? std::string(buf, end) : std::string();
    }
    __int128 v = c.Integer(row_);
    if (!c.decimal || c.scale == 0) return Int128ToString(v);
    std::string digits = Int128ToString(v < 0 ? -v : v);
    if (digits.size() <= c.scale) digits.insert(0, c.scale + 1 - digits.size(), '0');
    digits.insert(digits.size() - c.scale, 1, '.');
    return v < 0 ? "-" + digits : digits;
  }

 private:
  const ColumnReader& column(int col) const { return (*columns_)[static_cast<size_t>(col)]; }

  const std::vector<ColumnReader>* columns_;
  idx_t row_ = 0;
};

//! A failed query's status. After a failed checkpoint DuckDB refuses every
//! statement until the instance is reopened: that is the server being
//! unavailable for a while (503, retry), not a bad query (500).
Status QueryError(const std::string& err) {
  if (err.find("FATAL Error") != std::string::npos || err.find("database has been invalidated") != std::string::npos) {
    return Status::Unavailable("duckdb: the database is being recovered: " + err);
  }
  return Status::Internal("duckdb: " + err);
}

class DuckDbReader final : public ReadConnection {
 public:
  DuckDbReader(duckdb_connection conn, bool owns) : conn_(conn), owns_(owns) {}
  ~DuckDbReader() override {
    if (owns_) duckdb_disconnect(&conn_);
  }

  Status Query(const std::string& sql, const std::vector<SqlParam>& params, const RowCallback& on_row) override {
    duckdb_prepared_statement stmt = nullptr;
    if (duckdb_prepare(conn_, sql.c_str(), &stmt) != DuckDBSuccess) {
      std::string err = duckdb_prepare_error(stmt) ? duckdb_prepare_error(stmt) : "prepare failed";
      duckdb_destroy_prepare(&stmt);
      return QueryError(err);
    }
    for (size_t i = 0; i < params.size(); ++i) {
      idx_t idx = i + 1;
      duckdb_state st;
      if (auto* v = std::get_if<int64_t>(&params[i])) st = duckdb_bind_int64(stmt, idx, *v);
      else if (auto* d = std::get_if<double>(&params[i])) st = duckdb_bind_double(stmt, idx, *d);
      else {
        const std::string& s = std::get<std::string>(params[i]);
        st = duckdb_bind_varchar_length(stmt, idx, s.data(), s.size());
      }
      if (st != DuckDBSuccess) {
        duckdb_destroy_prepare(&stmt);
        return Status::Internal("duckdb: cannot bind parameter " + std::to_string(idx));
      }
    }
    duckdb_result result;
    duckdb_state st = duckdb_execute_prepared(stmt, &result);
    duckdb_destroy_prepare(&stmt);
    if (st != DuckDBSuccess) {
      std::string err = duckdb_result_error(&result) ? duckdb_result_error(&result) : "query failed";
      duckdb_error_type type = duckdb_result_error_type(&result);
      duckdb_destroy_result(&result);
      if (type == DUCKDB_ERROR_INTERRUPT || err.find("nterrupt") != std::string::npos) {
        return Status::Cancelled("duckdb: query interrupted");
      }
      return QueryError(err);
    }
    Status status = ForEachDuckDbRow(&result, on_row);
    duckdb_destroy_result(&result);
    return status;
  }

  void Interrupt() override { duckdb_interrupt(conn_); }

 private:
  duckdb_connection conn_;
  bool owns_;
};

}  // namespace

Status ForEachDuckDbRow(duckdb_result* result, const RowCallback& on_row) {
  const idx_t column_count = duckdb_column_count(result);
  std::vector<ColumnReader> columns(column_count);
  for (idx_t c = 0; c < column_count; ++c) {
    duckdb_logical_type type = duckdb_column_logical_type(result, c);
    ColumnReader& reader = columns[c];
    reader.type = duckdb_get_type_id(type);
    if (reader.type == DUCKDB_TYPE_DECIMAL) {
      reader.decimal = true;
      reader.scale = duckdb_decimal_scale(type);
      reader.type = duckdb_decimal_internal_type(type);
    }
    duckdb_destroy_logical_type(&type);
    if (!Readable(reader.type)) {
      const char* name = duckdb_column_name(result, c);
      return Status::Internal(std::string("duckdb: result column '") + (name != nullptr ? name : "?") +
                              "' has a type the reader does not convert (type id " +
                              std::to_string(static_cast<int>(reader.type)) + "); cast it in the SQL");
    }
  }
  DuckDbRow row(&columns);
  struct ChunkDeleter {
    void operator()(_duckdb_data_chunk* chunk) const { duckdb_destroy_data_chunk(&chunk); }
  };
  for (;;) {
    std::unique_ptr<_duckdb_data_chunk, ChunkDeleter> chunk(duckdb_fetch_chunk(*result));
    if (chunk == nullptr) break;
    const idx_t n = duckdb_data_chunk_get_size(chunk.get());
    for (idx_t c = 0; c < column_count; ++c) {
      duckdb_vector vector = duckdb_data_chunk_get_vector(chunk.get(), c);
      columns[c].data = duckdb_vector_get_data(vector);
      columns[c].validity = duckdb_vector_get_validity(vector);
    }
    for (idx_t r = 0; r < n; ++r) {
      row.set_row(r);
      on_row(row);
    }
  }
  return Status::Ok();
}

std::unique_ptr<ReadConnection> NewDuckDbReader(duckdb_connection conn) {
  return std::make_unique<DuckDbReader>(conn, /*owns=*/true);
}

std::unique_ptr<ReadConnection> BorrowDuckDbConnection(duckdb_connection conn) {
  return std::make_unique<DuckDbReader>(conn, /*owns=*/false);
}

}  // namespace sightline
