#include "storage/duckdb/duckdb_reader.h"

namespace sightline {

namespace {

class DuckDbRow final : public RowView {
 public:
  DuckDbRow(duckdb_result* result, idx_t row) : result_(result), row_(row) {}
  bool IsNull(int col) const override { return duckdb_value_is_null(result_, col, row_); }
  int64_t GetInt(int col) const override { return duckdb_value_int64(result_, col, row_); }
  double GetDouble(int col) const override { return duckdb_value_double(result_, col, row_); }
  std::string GetString(int col) const override {
    char* s = duckdb_value_varchar(result_, col, row_);
    std::string out = s ? s : "";
    duckdb_free(s);
    return out;
  }

 private:
  duckdb_result* result_;
  idx_t row_;
};

class DuckDbReader final : public ReadConnection {
 public:
  explicit DuckDbReader(duckdb_connection conn) : conn_(conn) {}
  ~DuckDbReader() override { duckdb_disconnect(&conn_); }

  Status Query(const std::string& sql, const std::vector<SqlParam>& params, const RowCallback& on_row) override {
    duckdb_prepared_statement stmt = nullptr;
    if (duckdb_prepare(conn_, sql.c_str(), &stmt) != DuckDBSuccess) {
      std::string err = duckdb_prepare_error(stmt) ? duckdb_prepare_error(stmt) : "prepare failed";
      duckdb_destroy_prepare(&stmt);
      return Status::Internal("duckdb: " + err);
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
      return Status::Internal("duckdb: " + err);
    }
    idx_t rows = duckdb_row_count(&result);
    for (idx_t r = 0; r < rows; ++r) on_row(DuckDbRow(&result, r));
    duckdb_destroy_result(&result);
    return Status::Ok();
  }

  void Interrupt() override { duckdb_interrupt(conn_); }

 private:
  duckdb_connection conn_;
};

}  // namespace

std::unique_ptr<ReadConnection> NewDuckDbReader(duckdb_connection conn) { return std::make_unique<DuckDbReader>(conn); }

}  // namespace sightline
