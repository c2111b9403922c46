// Shapes of the query API answers (docs/API.md, "Query API").

export type SignalName = 'spans' | 'logs' | 'metrics';

/** How long one signal's data is kept: seconds (null: forever), and whether
 * that is the project's own setting or the server's flag. */
export interface Retention {
  seconds: number | null;
  source: 'project' | 'server';
}

export interface Project {
  id: number | string;
  name: string;
  retention?: Record<SignalName, Retention>;
}

export interface ServiceRow {
  service: string;
  requests: number;
  errors: number;
  error_rate: number;
  rate_per_s: number;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
}

export interface EndpointRow {
  service: string;
  endpoint: string;
  count: number;
  errors: number;
  error_rate: number;
  p50_ms: number | null;
  p95_ms: number | null;
  p99_ms: number | null;
}

export interface SeriesAnswer<S> {
  step_ms: number;
  buckets: number[];
  series: S[];
}

export interface TraceRow {
  trace_id: string;
  service: string;
  name: string;
  start_ms: number;
  duration_ms: number;
  span_count: number;
  error: boolean;
}

export type Attrs = Record<string, unknown>;

export interface SpanEvent {
  name?: string;
  time_ns?: string;
  time_unix_nano?: string;
  time_ms?: number;
  attributes?: Attrs;
}

export interface SpanLink {
  trace_id: string;
  span_id: string;
  attributes?: Attrs;
}

export interface Span {
  span_id: string;
  parent_span_id: string | null;
  service: string;
  name: string;
  kind: number | string;
  start_time_ns: string;
  end_time_ns: string;
  duration_ms: number;
  status_code: number | string;
  status_message: string | null;
  attributes: Attrs;
  resource_attributes: Attrs;
  events: SpanEvent[];
  links: SpanLink[];
  scope_name: string | null;
}

export interface LogRow {
  time_ns: string;
  time_ms: number;
  severity_number: number;
  severity_text: string;
  body: unknown;
  service: string;
  trace_id: string | null;
  span_id: string | null;
  attributes: Attrs;
  event_name: string; // OTLP LogRecord.event_name, "" when none
}

export interface TraceDetail {
  trace_id: string;
  spans: Span[];
  logs: LogRow[];
  /** Past the server's --max-trace-spans: only the earliest spans (log records) came back. */
  spans_truncated?: boolean;
  logs_truncated?: boolean;
}

export interface ExceptionGroup {
  type: string;
  message: string;
  service: string;
  count: number;
  first_seen_ms: number;
  last_seen_ms: number;
  sample_trace_id: string | null;
  log_count: number; // of count, log records (log-based exception events)
}

export interface ExceptionSpan {
  trace_id: string; // '' for a log record without trace context
  span_id: string;
  service: string;
  name: string;
  start_ms: number;
  duration_ms: number;
  source: 'span' | 'log';
}

export interface MetricInfo {
  name: string;
  type: string;
  unit: string;
  description: string;
  monotonic?: boolean;
  temporality?: 'delta' | 'cumulative' | 'unspecified';
  services: string[];
}
