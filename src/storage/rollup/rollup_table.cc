#include "storage/rollup/rollup_table.h"

namespace sightline::rollup {

std::vector<std::string> CreateRollupSql(const RollupTables& t, const char* state_table,
                                         std::span<const schema::Column> columns, const schema::TypeNames& types) {
  std::vector<std::string> out;
  for (const char* table : {t.delta, t.minute, t.hour}) {
    if (table != nullptr) out.push_back(schema::CreateTableSql(table, columns, types));
  }
  out.push_back(std::string("CREATE TABLE IF NOT EXISTS ") + state_table + " (complete_from_ns " + types.int64 + ")");
  return out;
}

Status StageFoldKeys(RollupSession* s, const std::vector<int64_t>& values) {
  SL_RETURN_IF_ERROR(s->Exec(std::string("CREATE TEMP TABLE IF NOT EXISTS ") + kFoldKeysTable + " (k BIGINT)", {}));
  SL_RETURN_IF_ERROR(s->Exec(std::string("DELETE FROM ") + kFoldKeysTable, {}));
  if (values.empty()) return Status::Ok();
  const schema::Column column = schema::internal::Ints("k", values);
  return s->Append(kFoldKeysTable, std::span(&column, 1), values.size());
}

Status InitRollupState(RollupSession* s, const char* state_table, std::initializer_list<const char*> newest_sql) {
  bool present = false;
  SL_RETURN_IF_ERROR(s->Query(std::string("SELECT count(*) FROM ") + state_table, {},
                              [&](const RowView& r) { present = r.GetInt(0) > 0; }));
  if (present) return Status::Ok();
  int64_t from = INT64_MIN;
  for (const char* sql : newest_sql) {
    SL_RETURN_IF_ERROR(s->Query(sql, {}, [&](const RowView& r) {
      if (!r.IsNull(0)) from = std::max(from, FloorTo(r.GetInt(0), kHourNs) + kHourNs);
    }));
  }
  return s->Exec(std::string("INSERT INTO ") + state_table + " VALUES (?)", {from});
}

}  // namespace sightline::rollup
