#include "storage/rollup/signal_rollups.h"

#include <memory>

#include "storage/rollup/exception_rollup.h"
#include "storage/rollup/log_rollup.h"
#include "storage/rollup/metric_rollup.h"
#include "storage/rollup/span_rollup.h"

namespace sightline::rollup {

Status CreateRollups(RollupSession* s, const schema::TypeNames& types) {
  for (const auto& create :
       {CreateSpanRollupSql, CreateExceptionRollupSql, CreateLogRollupSql, CreateMetricRollupSql}) {
    for (const std::string& sql : create(types)) SL_RETURN_IF_ERROR(s->Exec(sql, {}));
  }
  SL_RETURN_IF_ERROR(InitSpanRollupState(s));
  SL_RETURN_IF_ERROR(InitLogRollupState(s));
  SL_RETURN_IF_ERROR(InitMetricRollupState(s));
  return InitExceptionRollupState(s);
}

namespace {

//! The heap bytes of a string beyond the object itself.
size_t HeapBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

}  // namespace

size_t PreparedSpanDeltas::ByteSize() const {
  // A map node: the pair and the tree's links.
  constexpr size_t kSpanNode = sizeof(SpanRollupMap::value_type) + 32;
  constexpr size_t kExceptionNode = sizeof(ExceptionRollupMap::value_type) + 32;
  size_t n = sizeof(*this);
  for (const auto& [k, v] : spans) n += kSpanNode + HeapBytes(k.service) + HeapBytes(k.endpoint) + v.sketch.ByteSize();
  for (const auto& [k, v] : exceptions) {
    n += kExceptionNode + HeapBytes(k.service) + HeapBytes(k.type) + HeapBytes(k.group);
  }
  return n;
}

PreparedSpanDeltas::PreparedSpanDeltas(const SpanBatch& b) {
  AddSpans(b, &spans);
  AddSpanExceptions(b, &exceptions);
}

void PrepareDeltas(SpanBatch* b) { b->prepared = std::make_shared<const PreparedSpanDeltas>(*b); }

Status AppendDeltas(RollupSession* s, const std::vector<const SpanBatch*>& batches) {
  auto prepared = [](const SpanBatch* b) { return dynamic_cast<const PreparedSpanDeltas*>(b->prepared.get()); };
  if (batches.size() == 1 && prepared(batches[0]) != nullptr) {  // the usual group: as its decoder left it
    const PreparedSpanDeltas& p = *prepared(batches[0]);
    SL_RETURN_IF_ERROR(SpanRollupTraits::Append(s, kSpanDeltaTable, p.spans));
    return ExceptionRollupTraits::Append(s, kExceptionDeltaTable, p.exceptions);
  }
  SpanRollupMap deltas;
  ExceptionRollupMap exceptions;
  for (const SpanBatch* b : batches) {
    if (const PreparedSpanDeltas* p = prepared(b)) {
      for (const auto& [k, v] : p->spans) deltas[k].Merge(v);
      for (const auto& [k, v] : p->exceptions) exceptions[k].Merge(v);
      continue;
    }
    AddSpans(*b, &deltas);
    AddSpanExceptions(*b, &exceptions);
  }
  SL_RETURN_IF_ERROR(SpanRollupTraits::Append(s, kSpanDeltaTable, deltas));
  return ExceptionRollupTraits::Append(s, kExceptionDeltaTable, exceptions);
}

Status AppendDeltas(RollupSession* s, const std::vector<const LogBatch*>& batches) {
  LogRollupMap counts;
  ExceptionRollupMap exceptions;
  for (const LogBatch* b : batches) {
    AddLogs(*b, &counts);
    AddLogExceptions(*b, &exceptions);
  }
  SL_RETURN_IF_ERROR(LogRollupTraits::Append(s, kLogRollupTables.delta, counts));
  return ExceptionRollupTraits::Append(s, kExceptionDeltaTable, exceptions);
}

Status CompactSignalRollups(RollupSession* s, Signal signal) {
  if (signal == Signal::kMetrics) return Status::Ok();
  const bool logs = signal == Signal::kLogs;
  Result<int64_t> folded = logs ? CompactLogRollups(s) : CompactSpanRollups(s);
  if (!folded.ok()) return folded.status();
  folded = CompactExceptionRollups(s, logs);
  return folded.ok() ? Status::Ok() : folded.status();
}

Status ExpireSignalRollups(RollupSession* s, Signal signal, const std::string& filter, int64_t before_ns,
                           bool whole_hours) {
  switch (signal) {
    case Signal::kSpans:
      if (whole_hours) {
        SL_RETURN_IF_ERROR(DropHoursBefore<SpanRollupTraits>(s, kSpanRollupTables, "", filter, before_ns));
        return DropHoursBefore<ExceptionRollupTraits>(s, kExceptionRollupTables, ExceptionSource(false), filter,
                                                      before_ns);
      }
      SL_RETURN_IF_ERROR(ExpireSpanRollups(s, filter, before_ns));
      return ExpireExceptionRollups(s, /*logs=*/false, filter, before_ns);
    case Signal::kLogs:
      if (whole_hours) {
        SL_RETURN_IF_ERROR(DropHoursBefore<LogRollupTraits>(s, kLogRollupTables, "", filter, before_ns));
        return DropHoursBefore<ExceptionRollupTraits>(s, kExceptionRollupTables, ExceptionSource(true), filter,
                                                      before_ns);
      }
      SL_RETURN_IF_ERROR(ExpireLogRollups(s, filter, before_ns));
      return ExpireExceptionRollups(s, /*logs=*/true, filter, before_ns);
    case Signal::kMetrics:
      if (whole_hours) return DropHoursBefore<MetricRollupTraits>(s, kMetricRollupTables, "", filter, before_ns);
      return ExpireMetricRollups(s, filter, before_ns);
  }
  return Status::Ok();
}

}  // namespace sightline::rollup
