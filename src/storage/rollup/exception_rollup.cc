#include "storage/rollup/exception_rollup.h"

#include <algorithm>
#include <utility>

namespace sightline::rollup {

void ExceptionRollupValue::Add(int64_t t, uint64_t high, uint64_t low) {
  ++count;
  first_ns = std::min(first_ns, t);
  last_ns = std::max(last_ns, t);
  if (std::pair{high, low} > std::pair{trace_high, trace_low}) {
    trace_high = high;
    trace_low = low;
  }
}

void ExceptionRollupValue::Merge(const ExceptionRollupValue& other) {
  count += other.count;
  first_ns = std::min(first_ns, other.first_ns);
  last_ns = std::max(last_ns, other.last_ns);
  if (std::pair{other.trace_high, other.trace_low} > std::pair{trace_high, trace_low}) {
    trace_high = other.trace_high;
    trace_low = other.trace_low;
  }
}

namespace {

template <typename Batch>
void AddExceptions(const Batch& b, const std::vector<int64_t>& times, int64_t is_log, ExceptionRollupMap* m) {
  ExceptionRollupKey key;
  key.project_id = b.project_id;
  key.is_log = is_log;
  for (size_t r = 0; r < times.size(); ++r) {
    // has_exception for spans; "exception_type or exception_message is set" for logs.
    if (b.exception_type.Get(r).empty() && b.exception_message.Get(r).empty()) continue;
    key.bucket_ns = FloorTo(times[r], kMinuteNs);
    key.service.assign(b.service_name.Get(r));
    key.type.assign(b.exception_type.Get(r));
    key.group.assign(b.exception_group.Get(r));
    (*m)[key].Add(times[r], b.trace_id_high[r], b.trace_id_low[r]);
  }
}

}  // namespace

void AddSpanExceptions(const SpanBatch& b, ExceptionRollupMap* m) { AddExceptions(b, b.start_time_ns, 0, m); }
void AddLogExceptions(const LogBatch& b, ExceptionRollupMap* m) { AddExceptions(b, b.time_ns, 1, m); }

Status ExceptionRollupTraits::Read(const RowView& r, Key* k, Value* v) {
  k->project_id = r.GetInt(0);
  k->bucket_ns = r.GetInt(1);
  k->service = r.GetString(2);
  k->type = r.GetString(3);
  k->group = r.GetString(4);
  k->is_log = r.GetInt(5);
  v->count = r.GetInt(6);
  v->first_ns = r.GetInt(7);
  v->last_ns = r.GetInt(8);
  v->trace_high = static_cast<uint64_t>(r.GetInt(9));
  v->trace_low = static_cast<uint64_t>(r.GetInt(10));
  return Status::Ok();
}

namespace {

struct ExceptionRollupRows {
  std::vector<int64_t> project_id, bucket_ns, is_log, count, first_ns, last_ns;
  std::vector<uint64_t> trace_high, trace_low;
  StringColumn service, type, group;
};

std::vector<schema::Column> ExceptionRollupColumns(const ExceptionRollupRows& r) {
  using namespace schema::internal;
  return {
      Ints("project_id", r.project_id),
      Ints("bucket_ns", r.bucket_ns),
      Text("service_name", r.service),
      Text("exception_type", r.type),
      Text("exception_group", r.group),
      Ints("is_log", r.is_log),
      Ints("count", r.count),
      Ints("first_ns", r.first_ns),
      Ints("last_ns", r.last_ns),
      // The same bits as the spans' ids; 0, 0 (none) is NULL.
      Id("trace_id_high", r.trace_high, r.trace_low),
      Id("trace_id_low", r.trace_low, r.trace_high),
  };
}

}  // namespace

Status ExceptionRollupTraits::Append(RollupSession* s, const char* table, const ExceptionRollupMap& m) {
  if (m.empty()) return Status::Ok();
  ExceptionRollupRows rows;
  for (const auto& [k, v] : m) {
    rows.project_id.push_back(k.project_id);
    rows.bucket_ns.push_back(k.bucket_ns);
    rows.service.Append(k.service);
    rows.type.Append(k.type);
    rows.group.Append(k.group);
    rows.is_log.push_back(k.is_log);
    rows.count.push_back(v.count);
    rows.first_ns.push_back(v.first_ns);
    rows.last_ns.push_back(v.last_ns);
    rows.trace_high.push_back(v.trace_high);
    rows.trace_low.push_back(v.trace_low);
  }
  const std::vector<schema::Column> columns = ExceptionRollupColumns(rows);
  return s->Append(table, columns, m.size());
}

std::vector<std::string> CreateExceptionRollupSql(const schema::TypeNames& types) {
  const ExceptionRollupRows empty;
  return CreateRollupSql(kExceptionRollupTables, kExceptionStateTable, ExceptionRollupColumns(empty), types);
}

Status InitExceptionRollupState(RollupSession* s) {
  return InitRollupState(s, kExceptionStateTable,
                         {"SELECT max(start_time_ns) FROM spans", "SELECT max(time_ns) FROM logs"});
}

Status ExpireExceptionRollups(RollupSession* s, bool logs, const std::string& project_filter, int64_t before_ns) {
  // A span's exception is in span_details, with its service (schema 8).
  const std::string raw =
      std::string("SELECT project_id, ") + (logs ? "time_ns" : "start_time_ns") +
      ", service_name, coalesce(exception_type, ''), coalesce(exception_group, ''), trace_id_high, trace_id_low FROM " +
      (logs ? std::string("log_exceptions WHERE time_ns >= ? AND time_ns < ?")
            : std::string("span_details WHERE start_time_ns >= ? AND start_time_ns < ? AND ") +
                  schema::kSpanDetailHasException);
  auto read_raw = [&](int64_t from, int64_t to, ExceptionRollupMap* m) {
    return s->Query(raw + project_filter, {from, to}, [&](const RowView& r) {
      const int64_t t = r.GetInt(1);
      ExceptionRollupKey k{r.GetInt(0),    FloorTo(t, kMinuteNs), r.GetString(2),
                           r.GetString(3), r.GetString(4),        logs ? 1 : 0};
      (*m)[k].Add(t, static_cast<uint64_t>(r.GetInt(5)), static_cast<uint64_t>(r.GetInt(6)));
    });
  };
  return Expire<ExceptionRollupTraits>(s, kExceptionRollupTables, ExceptionSource(logs), project_filter, before_ns,
                                       read_raw);
}

}  // namespace sightline::rollup
