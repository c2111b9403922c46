#include "storage/rollup/signal_rollups.h"

#include "storage/rollup/exception_rollup.h"
#include "storage/rollup/log_rollup.h"
#include "storage/rollup/metric_rollup.h"
#include "storage/rollup/span_rollup.h"

namespace sightline::rollup {

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
