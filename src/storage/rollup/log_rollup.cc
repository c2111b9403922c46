#include "storage/rollup/log_rollup.h"

#include <algorithm>

namespace sightline::rollup {

void AddLogs(const LogBatch& b, LogRollupMap* m) {
  internal::BatchGroups<LogRollupValue, 1> groups;
  for (size_t r = 0; r < b.rows(); ++r) {
    groups.Find(FloorTo(b.time_ns[r], kMinuteNs), b.severity_number[r], {b.service_name.Get(r)}).count++;
  }
  groups.ForEach([&](int64_t bucket_ns, int64_t severity, const auto& text, const LogRollupValue& v) {
    (*m)[LogRollupKey{b.project_id, bucket_ns, std::string(text[0]), severity}].Merge(v);
  });
}

Status LogRollupTraits::Read(const RowView& r, Key* k, Value* v) {
  k->project_id = r.GetInt(0);
  k->bucket_ns = r.GetInt(1);
  k->service = r.GetString(2);
  k->severity_number = r.GetInt(3);
  v->count = r.GetInt(4);
  return Status::Ok();
}

namespace {

struct LogRollupRows {
  std::vector<int64_t> project_id, bucket_ns, severity_number, count;
  StringColumn service;
};

std::vector<schema::Column> LogRollupColumns(const LogRollupRows& r) {
  using namespace schema::internal;
  return {Ints("project_id", r.project_id), Ints("bucket_ns", r.bucket_ns), Text("service_name", r.service),
          Ints("severity_number", r.severity_number), Ints("count", r.count)};
}

}  // namespace

Status LogRollupTraits::Append(RollupSession* s, const char* table, const LogRollupMap& m) {
  if (m.empty()) return Status::Ok();
  LogRollupRows rows;
  for (const auto& [k, v] : m) {
    rows.project_id.push_back(k.project_id);
    rows.bucket_ns.push_back(k.bucket_ns);
    rows.service.Append(k.service);
    rows.severity_number.push_back(k.severity_number);
    rows.count.push_back(v.count);
  }
  const std::vector<schema::Column> columns = LogRollupColumns(rows);
  return s->Append(table, columns, m.size());
}

std::vector<std::string> CreateLogRollupSql(const schema::TypeNames& types) {
  const LogRollupRows empty;
  return CreateRollupSql(kLogRollupTables, kLogStateTable, LogRollupColumns(empty), types);
}

Status InitLogRollupState(RollupSession* s) {
  return InitRollupState(s, kLogStateTable, {"SELECT max(time_ns) FROM logs"});
}

Status ExpireLogRollups(RollupSession* s, const std::string& project_filter, int64_t before_ns) {
  return Expire<LogRollupTraits>(
      s, kLogRollupTables, "", project_filter, before_ns, [&](int64_t from, int64_t to, LogRollupMap* m) {
        return s->Query(
            "SELECT project_id, time_ns, service_name, severity_number FROM logs WHERE time_ns >= ? AND time_ns < ?" +
                project_filter,
            {from, to}, [&](const RowView& r) {
              LogRollupKey k{r.GetInt(0), FloorTo(r.GetInt(1), kMinuteNs), r.GetString(2), r.GetInt(3)};
              (*m)[k].count++;
            });
      });
}

}  // namespace sightline::rollup
