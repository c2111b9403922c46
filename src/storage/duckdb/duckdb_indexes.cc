#include "storage/duckdb/duckdb_indexes.h"

namespace sightline::duckdb_index {

Status DuckDbIndexes::Open(duckdb_connection conn) {
  SL_RETURN_IF_ERROR(CreateTraceIndex(conn));
  SL_RETURN_IF_ERROR(CreateLogTokenIndex(conn));
  SL_RETURN_IF_ERROR(span_traces_.Load(conn));
  SL_RETURN_IF_ERROR(log_traces_.Load(conn));
  return tokens_.Load(conn);
}

bool DuckDbIndexes::WantsCompaction() const {
  return span_traces_.tail_rows() >= kTraceTailRows || log_traces_.tail_rows() >= kTraceTailRows ||
         tokens_.tail_rows() >= kTokenTailRows;
}

Status DuckDbIndexes::Compact(duckdb_connection conn) {
  SL_RETURN_IF_ERROR(span_traces_.Compact(conn));
  SL_RETURN_IF_ERROR(log_traces_.Compact(conn));
  // New tokens reach the dictionary before they leave the tail, so a search
  // always finds a token in one of the two.
  SL_RETURN_IF_ERROR(AddTailTokensToDictionary(conn));
  return tokens_.Compact(conn);
}

Status DuckDbIndexes::Expire(duckdb_connection conn, Signal signal, const ProjectSet& projects, int64_t before_ns) {
  SL_RETURN_IF_ERROR(ExpireTraceIndex(conn, signal, projects, before_ns));
  if (signal == Signal::kLogs) return ExpireLogTokens(conn, projects, before_ns);
  return Status::Ok();
}

Status IndexWriter::Add(const SpanBatch& b, const OpenAppender& open) {
  if (trace_appender_ == nullptr) {
    Result<duckdb_appender> a = open(kSpanTraceIndex.tail);
    if (!a.ok()) return a.status();
    trace_appender_ = *a;
    signal_ = Signal::kSpans;
  }
  Result<uint64_t> n = traces_.Append(trace_appender_, b);
  if (!n.ok()) return n.status();
  trace_rows_ += *n;
  return Status::Ok();
}

Status IndexWriter::Add(const LogBatch& b, const OpenAppender& open) {
  if (trace_appender_ == nullptr) {
    Result<duckdb_appender> a = open(kLogTraceIndex.tail);
    if (!a.ok()) return a.status();
    trace_appender_ = *a;
    signal_ = Signal::kLogs;
  }
  if (token_appender_ == nullptr) {
    Result<duckdb_appender> a = open(kLogTokens.tail);
    if (!a.ok()) return a.status();
    token_appender_ = *a;
  }
  Result<uint64_t> n = traces_.Append(trace_appender_, b);
  if (!n.ok()) return n.status();
  trace_rows_ += *n;
  Result<uint64_t> m = AppendLogTokens(token_appender_, b.project_id, *TokensOf(b));
  if (!m.ok()) return m.status();
  token_rows_ += *m;
  return Status::Ok();
}

void IndexWriter::Discard() {
  trace_rows_ = 0;
  token_rows_ = 0;
  trace_appender_ = nullptr;
  token_appender_ = nullptr;
}

void IndexWriter::Written(DuckDbIndexes* indexes) {
  indexes->traces(signal_).AddTailRows(trace_rows_);
  indexes->tokens().AddTailRows(token_rows_);
  Discard();
}

}  // namespace sightline::duckdb_index
