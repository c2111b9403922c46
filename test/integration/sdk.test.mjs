// The official OpenTelemetry JS SDK exports traces, logs and metrics to a real
// sightline server (OTLP/HTTP protobuf and JSON, OTLP/gRPC, gzip), for each storage
// engine; after a clean stop, every stored field is checked with `sightline sql`
// against what the SDK handed its exporters.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import {
  trace, ROOT_CONTEXT, SpanKind, SpanStatusCode, ValueType, TraceFlags, createTraceState,
  diag, DiagLogLevel,
} from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { LoggerProvider, BatchLogRecordProcessor } from '@opentelemetry/sdk-logs';
import {
  MeterProvider, PeriodicExportingMetricReader, AggregationType, AggregationTemporality, DataPointType,
} from '@opentelemetry/sdk-metrics';
import { OTLPTraceExporter as TraceProto } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPTraceExporter as TraceJson } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPLogExporter as LogsProto } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPLogExporter as LogsJson } from '@opentelemetry/exporter-logs-otlp-http';
import { OTLPMetricExporter as MetricsProto } from '@opentelemetry/exporter-metrics-otlp-proto';
import { OTLPMetricExporter as MetricsJson } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter as TraceGrpc } from '@opentelemetry/exporter-trace-otlp-grpc';
import { OTLPLogExporter as LogsGrpc } from '@opentelemetry/exporter-logs-otlp-grpc';
import { OTLPMetricExporter as MetricsGrpc } from '@opentelemetry/exporter-metrics-otlp-grpc';
import { Metadata } from '@grpc/grpc-js';

import { ENGINES, HEX, TOKEN, startServer } from './lib/server.mjs';
import { hrTimeToNs, parseJsonExact } from './lib/otlp.mjs';

const PROTOCOLS = ['proto', 'json', 'grpc'];

// SDK diagnostics (failed exports, unexpected drops) fail the export test. The
// span limits below drop events and links on purpose; those warnings are expected.
const diagProblems = [];
const EXPECTED_WARNINGS = /^Dropped \d+ (events|links) because \w+ reached/;
diag.setLogger({
  error: (...a) => diagProblems.push(`error: ${a.join(' ')}`),
  warn: (...a) => { if (!EXPECTED_WARNINGS.test(String(a[0]))) diagProblems.push(`warn: ${a.join(' ')}`); },
  info: () => {}, debug: () => {}, verbose: () => {},
}, DiagLogLevel.WARN);

// Which cases go through the API port's /api/otel prefix (the rest use the OTLP port).
function usesApiPort(engine, protocol) {
  return (engine === 'duckdb' && protocol === 'json') || (engine === 'sqlite' && protocol === 'proto');
}

// ---------------------------------------------------------------- helpers --

//! Records every batch an exporter is given and the ExportResult it reports.
function captureExports(exporter) {
  const capture = { batches: [], results: [] };
  const orig = exporter.export.bind(exporter);
  exporter.export = (items, done) => orig(items, (result) => {
    capture.batches.push(items);
    capture.results.push(result);
    done(result);
  });
  return capture;
}

function assertAllSucceeded(capture, what) {
  assert.ok(capture.results.length > 0, `${what}: the exporter was never called`);
  capture.results.forEach((r, i) => {
    assert.equal(r.code, 0, `${what}: export #${i} failed: ${r.error?.stack ?? r.error}`);
  });
}

//! What an attribute value should look like in the stored JSON.
function toStoredJson(v) {
  if (v instanceof Uint8Array) return Buffer.from(v).toString('base64');
  if (Array.isArray(v)) return v.map(toStoredJson);
  if (v !== null && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, toStoredJson(x)]));
  }
  return v;
}

//! Expected value normalised like parseJsonExact() normalises the stored text.
function expectedJson(v) {
  return parseJsonExact(JSON.stringify(toStoredJson(v ?? {})));
}

function parseStored(cell, what) {
  assert.equal(typeof cell, 'string', `${what}: expected JSON text, got ${cell}`);
  try {
    return parseJsonExact(cell);
  } catch (e) {
    assert.fail(`${what}: not valid JSON (${e.message}): ${cell}`);
  }
}

//! An empty JSON object column may be stored as '{}' or ''.
function parseStoredObject(cell, what) {
  if (cell === '' || cell === null) return {};
  return parseStored(cell, what);
}

//! Key-order independent JSON text, to match attribute sets.
function canon(v) {
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}

function emptyish(cell) { return cell === null || cell === ''; }
function num(cell) { return cell === null ? null : Number(cell); }
function boolCell(cell) {
  if (cell === '1' || cell === 'true') return true;
  if (cell === '0' || cell === 'false') return false;
  return cell;
}

// OTLP span flags as the SDK's serializer builds them (W3C flags | HAS_IS_REMOTE | IS_REMOTE).
function otlpSpanFlags(traceFlags, isRemote) {
  return (traceFlags & 0xff) | 0x100 | (isRemote ? 0x200 : 0);
}

//! Assertions that record a failure and go on, so one run lists every wrong field.
function softAssert() {
  const failures = [];
  const wrap = (fn) => (...args) => {
    try {
      fn(...args);
    } catch (e) {
      if (!(e instanceof assert.AssertionError)) throw e;
      failures.push(e.message);
    }
  };
  return {
    equal: wrap(assert.equal), deepEqual: wrap(assert.deepEqual), ok: wrap(assert.ok), match: wrap(assert.match),
    done(what) {
      if (failures.length) assert.fail(`${what}: ${failures.length} mismatches\n- ${failures.join('\n- ')}`);
    },
  };
}

function sqlString(s) {
  return `'${s.replace(/'/g, "''")}'`;
}

// ------------------------------------------------------------- the export --

const T0 = Math.floor(Date.now() / 1000) - 120;  // two minutes ago, whole seconds
const REMOTE_PARENT = {
  traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
  spanId: '00f067aa0ba902b7',
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
  traceState: createTraceState('rojo=00f067aa0ba902b7,congo=t61rcWkgMzE'),
};
const LINKED = {
  traceId: '0af7651916cd43dd8448eb211c80319c',
  spanId: 'b7ad6b7169203331',
  traceFlags: TraceFlags.SAMPLED,
  isRemote: true,
  traceState: createTraceState('vendor=v1'),
};
const ROOT_ATTRIBUTES = {
  'http.request.method': 'GET',
  'http.route': '/orders/:id',
  'http.response.status_code': 500,
  'it.string': 'héllo ✓ "quoted" \\ back\nslash',
  'it.empty': '',
  'it.int': 42,
  'it.negative': -7,
  'it.big': 9007199254740991,
  'it.double': 3.25,
  'it.tenth': 0.1,
  'it.true': true,
  'it.false': false,
  'it.strings': ['a', 'b', ''],
  'it.ints': [1, 2, 3],
  'it.doubles': [1.5, -2.5],
  'it.bools': [true, false],
};
const EXCEPTION = {
  name: 'TypeError',
  message: 'bad thing happened',
  stack: 'TypeError: bad thing happened\n    at handler (orders.js:10:5)',
};

async function exportAll(server, engine, protocol) {
  const base = usesApiPort(engine, protocol) ? `${server.apiUrl}/api/otel` : server.otlpUrl;
  const common = { headers: { Authorization: `Bearer ${TOKEN}` }, compression: 'gzip', timeoutMillis: 10_000 };
  const service = `sdk-${engine}-${protocol}`;
  const resource = resourceFromAttributes({
    'service.name': service,
    'service.version': '1.2.3',
    'deployment.environment.name': 'integration',
    'host.cpu.count': 2,
  });
  let traceExporter;
  let logExporter;
  let metricExporter;
  if (protocol === 'grpc') {
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${TOKEN}`);
    const grpc = { url: server.grpcUrl, metadata, compression: 'gzip', timeoutMillis: 10_000 };
    traceExporter = new TraceGrpc(grpc);
    logExporter = new LogsGrpc(grpc);
    metricExporter = new MetricsGrpc(grpc);
  } else if (protocol === 'proto') {
    traceExporter = new TraceProto({ ...common, url: `${base}/v1/traces` });
    logExporter = new LogsProto({ ...common, url: `${base}/v1/logs` });
    metricExporter = new MetricsProto({ ...common, url: `${base}/v1/metrics` });
  } else {
    traceExporter = new TraceJson({ ...common, url: `${base}/v1/traces` });
    logExporter = new LogsJson({ ...common, url: `${base}/v1/logs` });
    metricExporter = new MetricsJson({ ...common, url: `${base}/v1/metrics` });
  }
  const traces = captureExports(traceExporter);
  const logs = captureExports(logExporter);
  const metrics = captureExports(metricExporter);

  // Traces: a server span with a client child, and a consumer span whose parent
  // is remote (carrying trace state); limits make the SDK drop a few items.
  const tracerProvider = new BasicTracerProvider({
    resource,
    spanLimits: { attributeCountLimit: 20, eventCountLimit: 5, linkCountLimit: 3 },
    spanProcessors: [new BatchSpanProcessor(traceExporter, { scheduledDelayMillis: 60_000 })],
  });
  const tracer = tracerProvider.getTracer('sightline-it', '0.1.0');
  const root = tracer.startSpan('GET /orders/:id', {
    kind: SpanKind.SERVER,
    attributes: ROOT_ATTRIBUTES,
    startTime: [T0, 123_456_789],
  }, ROOT_CONTEXT);
  root.addEvent('cache.miss', { 'cache.key': 'order:42', attempt: 2 }, [T0, 200_000_001]);
  root.recordException(EXCEPTION, [T0, 300_000_002]);
  root.setStatus({ code: SpanStatusCode.ERROR, message: 'boom: upstream failed' });

  const child = tracer.startSpan('SELECT orders', {
    kind: SpanKind.CLIENT,
    attributes: { 'db.system': 'postgresql', 'db.statement': 'SELECT * FROM orders WHERE id = $1' },
    links: [{ context: LINKED, attributes: { 'link.reason': 'batch', 'link.index': 0 } }],
    startTime: [T0, 150_000_000],
  }, trace.setSpan(ROOT_CONTEXT, root));
  child.setStatus({ code: SpanStatusCode.OK });
  child.end([T0, 450_000_000]);
  root.end([T0 + 1, 5]);

  const consumer = tracer.startSpan('orders.process', {
    kind: SpanKind.CONSUMER,
    startTime: [T0 + 2, 0],
  }, trace.setSpanContext(ROOT_CONTEXT, REMOTE_PARENT));
  for (let i = 0; i < 25; i++) consumer.setAttribute(`it.attr.${String(i).padStart(2, '0')}`, i);
  for (let i = 0; i < 7; i++) consumer.addEvent(`tick.${i}`, { i }, [T0 + 2, 1000 + i]);
  for (let i = 0; i < 4; i++) {
    consumer.addLink({ context: { ...LINKED, spanId: `00000000000000a${i}` }, attributes: { i } });
  }
  consumer.end([T0 + 2, 999_999_999]);

  // Logs: a string body inside the server span's context, a map body, an array body.
  const loggerProvider = new LoggerProvider({
    resource,
    processors: [new BatchLogRecordProcessor({ exporter: logExporter, scheduledDelayMillis: 60_000 })],
  });
  const logger = loggerProvider.getLogger('sightline-it-logger', '0.2.0');
  logger.emit({
    timestamp: [T0, 310_000_000],
    observedTimestamp: [T0, 310_000_500],
    severityNumber: SeverityNumber.ERROR,
    severityText: 'ERROR',
    body: 'payment failed for order 42',
    attributes: {
      'order.id': 42,
      retry: true,
      ratio: 0.5,
      tags: ['x', 'y'],
      nested: { a: 1, b: 'two', deeper: { c: [false] } },
      raw: new Uint8Array([0, 1, 2, 253, 254, 255]),
      note: 'ünïcode "q"',
    },
    context: trace.setSpan(ROOT_CONTEXT, root),
  });
  logger.emit({
    timestamp: [T0, 320_000_000],
    observedTimestamp: [T0, 320_000_000],
    severityNumber: SeverityNumber.INFO,
    severityText: 'INFO',
    body: { event: 'checkout', items: [1, 2], ok: true, amount: 9.75, who: { id: 'u1' } },
    attributes: { 'it.kind': 'map-body' },
    eventName: 'checkout.completed',
  });
  logger.emit({
    timestamp: [T0, 330_000_000],
    observedTimestamp: [T0, 330_000_001],
    severityNumber: SeverityNumber.WARN2,
    severityText: 'warning',
    body: ['a', 1, true],
    // A log-based exception event.
    attributes: { 'exception.type': 'OrderError', 'exception.message': 'order 42 not found' },
  });

  // Metrics: cumulative counter, up-down counter, explicit-bucket histogram,
  // observable gauge, exponential histogram.
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 600_000 });
  const meterProvider = new MeterProvider({
    resource,
    readers: [reader],
    views: [{ instrumentName: 'it.exp_latency', aggregation: { type: AggregationType.EXPONENTIAL_HISTOGRAM } }],
  });
  const meter = meterProvider.getMeter('sightline-it-meter', '0.3.0');
  const counter = meter.createCounter('it.requests', {
    valueType: ValueType.INT, unit: '{request}', description: 'Requests served',
  });
  counter.add(3, { route: '/a' });
  counter.add(4, { route: '/a' });
  counter.add(10, { route: '/b', ok: true });
  const upDown = meter.createUpDownCounter('it.queue.depth', { unit: '{item}', description: 'Queue depth' });
  upDown.add(10.5, { queue: 'q1' });
  upDown.add(-3.25, { queue: 'q1' });
  const histogram = meter.createHistogram('it.latency', {
    unit: 'ms', description: 'Latency', advice: { explicitBucketBoundaries: [10, 50, 100] },
  });
  for (const v of [5, 20, 70, 150, 30]) histogram.record(v, { route: '/a' });
  const gauge = meter.createObservableGauge('it.temperature', { unit: 'Cel', description: 'Temperature' });
  gauge.addCallback((obs) => {
    obs.observe(21.5, { sensor: 's1' });
    obs.observe(-3, { sensor: 's2' });
  });
  const expHistogram = meter.createHistogram('it.exp_latency', { unit: 's', description: 'Exp latency' });
  for (const v of [0, 0.5, 1, 2, 4, 8, 8, 1000]) expHistogram.record(v, { route: '/exp' });

  await tracerProvider.forceFlush();
  await loggerProvider.forceFlush();
  await meterProvider.forceFlush();
  await tracerProvider.shutdown();
  await loggerProvider.shutdown();
  await meterProvider.shutdown();  // exports once more: a second cumulative point per series

  assertAllSucceeded(traces, `${protocol} traces`);
  assertAllSucceeded(logs, `${protocol} logs`);
  assertAllSucceeded(metrics, `${protocol} metrics`);
  const problems = diagProblems.splice(0);
  assert.deepEqual(problems, [], `OpenTelemetry SDK reported problems:\n${problems.join('\n')}`);

  const spans = traces.batches.flat();
  const logRecords = logs.batches.flat();
  const resourceMetrics = metrics.batches;
  assert.equal(spans.length, 3);
  assert.equal(logRecords.length, 3);
  assert.ok(resourceMetrics.length >= 2, 'expected the flush and the shutdown to export metrics');
  return {
    service, resource, spans, logRecords, resourceMetrics,
    ids: { root: root.spanContext(), child: child.spanContext(), consumer: consumer.spanContext() },
  };
}

// ------------------------------------------------------------ the checks --

// Resource and scope are stored once per (resource, scope) in span_resources,
// log_resources and metric_resources (docs/STORAGE.md); a row names its own by
// resource_id.
const RESOURCE_COLUMNS = 'r.resource_attributes, r.scope_name, r.scope_version, r.scope_attributes';
const joinResources = (table) =>
  `LEFT JOIN ${table} r ON r.project_id = s.project_id AND r.resource_id = s.resource_id`;

// On the embedded engines a span's trace state, status message, exception,
// events and links are in its span_details row (schema 7); ClickHouse keeps
// them in spans (docs/STORAGE.md).
const DETAIL_COLUMNS = 'd.trace_state, d.status_message, d.exception_type, d.exception_message, d.events, d.links, '
  + 'd.exception_group';
// Its key renamed, so that HEX's unqualified id columns name the span's.
const joinDetails = 'LEFT JOIN (SELECT project_id AS d_project, trace_id_high AS d_high, trace_id_low AS d_low, '
  + `span_id AS d_span, start_time_ns AS d_start, ${DETAIL_COLUMNS.replaceAll('d.', '')} FROM span_details) d `
  + 'ON d.d_project = s.project_id AND d.d_high = s.trace_id_high AND d.d_low = s.trace_id_low '
  + 'AND d.d_span = s.span_id AND d.d_start = s.start_time_ns';

async function checkSpans(server, c) {
  const soft = softAssert();
  const embedded = server.engine !== 'clickhouse';
  const out = await server.sql(
    `SELECT s.*, ${HEX.trace_id} AS trace_id_hex, ${HEX.span_id} AS span_id_hex, ${HEX.parent_span_id} AS parent_hex,
            ${RESOURCE_COLUMNS}${embedded ? `, ${DETAIL_COLUMNS}` : ''}
     FROM spans s ${joinResources('span_resources')} ${embedded ? joinDetails : ''}
     WHERE s.service_name = ${sqlString(c.service)} ORDER BY s.start_time_ns`);
  out.objects = out.objects.map((r) =>
    ({ ...r, trace_id: r.trace_id_hex, span_id: r.span_id_hex, parent_span_id: r.parent_hex }));
  assert.equal(out.rows.length, c.spans.length, `spans stored for ${c.service}`);
  const byId = new Map(out.objects.map((r) => [r.span_id, r]));
  assert.equal(byId.size, c.spans.length, 'span ids are unique');

  for (const s of c.spans) {
    const ctx = s.spanContext();
    const row = byId.get(ctx.spanId);
    const what = `span ${s.name}`;
    assert.ok(row, `${what}: span_id ${ctx.spanId} not stored; stored: ${[...byId.keys()]}`);
    soft.equal(row.trace_id, ctx.traceId, `${what}: trace_id`);
    soft.equal(row.parent_span_id ?? '', s.parentSpanContext?.spanId ?? '', `${what}: parent_span_id`);
    soft.equal(row.trace_state ?? '', ctx.traceState?.serialize() ?? '', `${what}: trace_state`);
    soft.equal(num(row.flags), otlpSpanFlags(ctx.traceFlags, s.parentSpanContext?.isRemote), `${what}: flags`);
    soft.equal(row.name, s.name, `${what}: name`);
    soft.equal(num(row.kind), s.kind + 1, `${what}: kind`);
    const start = hrTimeToNs(s.startTime);
    const end = hrTimeToNs(s.endTime);
    soft.equal(row.start_time_ns, String(start), `${what}: start_time_ns`);
    soft.equal(row.end_time_ns, String(end), `${what}: end_time_ns`);
    soft.equal(row.duration_ns, String(end - start), `${what}: duration_ns`);
    soft.equal(num(row.status_code), s.status.code, `${what}: status_code`);
    soft.equal(row.status_message ?? '', s.status.message ?? '', `${what}: status_message`);
    soft.equal(row.service_name, c.service, `${what}: service_name`);
    soft.deepEqual(parseStoredObject(row.attributes, `${what} attributes`), expectedJson(s.attributes),
      `${what}: attributes`);
    soft.equal(num(row.dropped_attributes_count), s.droppedAttributesCount, `${what}: dropped_attributes_count`);
    soft.equal(num(row.dropped_events_count), s.droppedEventsCount, `${what}: dropped_events_count`);
    soft.equal(num(row.dropped_links_count), s.droppedLinksCount, `${what}: dropped_links_count`);

    const events = row.events === '' || row.events === null ? [] : parseStored(row.events, `${what} events`);
    soft.deepEqual(events.map((e) => ({
      time_unix_nano: String(e.time_unix_nano),
      name: e.name,
      attributes: e.attributes ?? {},
      dropped_attributes_count: num(e.dropped_attributes_count),
    })), s.events.map((e) => ({
      time_unix_nano: String(hrTimeToNs(e.time)),
      name: e.name,
      attributes: expectedJson(e.attributes),
      dropped_attributes_count: e.droppedAttributesCount ?? 0,
    })), `${what}: events`);

    const links = row.links === '' || row.links === null ? [] : parseStored(row.links, `${what} links`);
    soft.deepEqual(links.map((l) => ({
      trace_id: l.trace_id,
      span_id: l.span_id,
      trace_state: l.trace_state ?? '',
      attributes: l.attributes ?? {},
      dropped_attributes_count: num(l.dropped_attributes_count),
      flags: num(l.flags),
    })), s.links.map((l) => ({
      trace_id: l.context.traceId,
      span_id: l.context.spanId,
      trace_state: l.context.traceState?.serialize() ?? '',
      attributes: expectedJson(l.attributes),
      dropped_attributes_count: l.droppedAttributesCount ?? 0,
      flags: otlpSpanFlags(l.context.traceFlags, l.context.isRemote),
    })), `${what}: links`);

    soft.deepEqual(parseStoredObject(row.resource_attributes, `${what} resource`),
      expectedJson(c.resource.attributes), `${what}: resource_attributes`);
    soft.equal(row.scope_name, 'sightline-it', `${what}: scope_name`);
    soft.equal(row.scope_version, '0.1.0', `${what}: scope_version`);
    soft.deepEqual(parseStoredObject(row.scope_attributes, `${what} scope`), {}, `${what}: scope_attributes`);
  }

  // Hand-written expectations, so a wrong capture cannot make both sides agree.
  const root = byId.get(c.ids.root.spanId);
  const child = byId.get(c.ids.child.spanId);
  const consumer = byId.get(c.ids.consumer.spanId);
  soft.equal(root.parent_span_id ?? '', '');
  soft.equal(root.start_time_ns, `${T0}123456789`);
  soft.equal(root.end_time_ns, `${T0 + 1}000000005`);
  soft.equal(root.kind, '2');
  soft.equal(root.status_code, '2');
  soft.equal(root.status_message, 'boom: upstream failed');
  soft.equal(root.http_route, '/orders/:id');
  soft.equal(root.http_method, 'GET');
  soft.equal(num(root.http_status_code), 500);
  soft.equal(root.exception_type, 'TypeError');
  soft.equal(root.exception_message, 'bad thing happened');
  soft.match(root.attributes, /"it\.big"\s*:\s*9007199254740991\b/, 'big int stored as a JSON number');
  const rootAttrs = parseStored(root.attributes, 'root attributes');
  soft.equal(rootAttrs['it.string'], 'héllo ✓ "quoted" \\ back\nslash');
  soft.equal(rootAttrs['it.double'], 3.25);
  soft.equal(rootAttrs['it.tenth'], 0.1);
  soft.deepEqual(rootAttrs['it.bools'], [true, false]);
  const rootEvents = parseStored(root.events, 'root events');
  soft.equal(rootEvents.length, 2);
  soft.equal(String(rootEvents[0].time_unix_nano), `${T0}200000001`);
  soft.equal(rootEvents[1].name, 'exception');
  soft.equal(rootEvents[1].attributes['exception.type'], 'TypeError');
  soft.equal(rootEvents[1].attributes['exception.stacktrace'], EXCEPTION.stack);
  soft.equal(child.parent_span_id, c.ids.root.spanId);
  soft.equal(child.trace_id, c.ids.root.traceId);
  soft.equal(child.kind, '3');
  soft.equal(child.status_code, '1');
  soft.equal(child.db_system, 'postgresql');
  soft.ok(emptyish(child.http_route), 'child has no http.route');
  soft.ok(emptyish(child.exception_type), 'child has no exception');
  const childLinks = parseStored(child.links, 'child links');
  soft.deepEqual(childLinks.map((l) => [l.trace_id, l.span_id, l.trace_state, num(l.flags)]),
    [[LINKED.traceId, LINKED.spanId, 'vendor=v1', 0x301]]);
  soft.deepEqual(childLinks[0].attributes, { 'link.reason': 'batch', 'link.index': 0 });
  soft.equal(consumer.trace_id, REMOTE_PARENT.traceId);
  soft.equal(consumer.parent_span_id, REMOTE_PARENT.spanId);
  soft.equal(consumer.trace_state, 'rojo=00f067aa0ba902b7,congo=t61rcWkgMzE');
  soft.equal(num(consumer.flags), 0x301);
  soft.equal(consumer.kind, '5');
  soft.equal(consumer.status_code, '0');
  soft.equal(num(consumer.dropped_attributes_count), 5);
  soft.equal(num(consumer.dropped_events_count), 2);
  soft.equal(num(consumer.dropped_links_count), 1);
  soft.done('checkSpans ' + c.service);
}

async function checkLogs(server, c) {
  const soft = softAssert();
  const out = await server.sql(
    `SELECT s.*, ${HEX.trace_id} AS trace_id_hex, ${HEX.span_id} AS span_id_hex, ${RESOURCE_COLUMNS}
     FROM logs s ${joinResources('log_resources')}
     WHERE s.service_name = ${sqlString(c.service)} ORDER BY s.time_ns`);
  out.objects = out.objects.map((r) => ({ ...r, trace_id: r.trace_id_hex, span_id: r.span_id_hex }));
  assert.equal(out.rows.length, c.logRecords.length, `logs stored for ${c.service}`);
  const bodyType = (b) => {
    if (typeof b === 'string') return 1;
    if (typeof b === 'boolean') return 2;
    if (typeof b === 'number') return Number.isInteger(b) ? 3 : 4;
    if (Array.isArray(b)) return 5;
    if (b instanceof Uint8Array) return 7;
    return 6;
  };
  const expected = [...c.logRecords].sort((a, b) => Number(hrTimeToNs(a.hrTime) - hrTimeToNs(b.hrTime)));
  expected.forEach((rec, i) => {
    const row = out.objects[i];
    const what = `log ${i} (${rec.severityText})`;
    soft.equal(row.time_ns, String(hrTimeToNs(rec.hrTime)), `${what}: time_ns`);
    soft.equal(row.observed_time_ns, String(hrTimeToNs(rec.hrTimeObserved)), `${what}: observed_time_ns`);
    soft.equal(num(row.severity_number), rec.severityNumber, `${what}: severity_number`);
    soft.equal(row.severity_text, rec.severityText, `${what}: severity_text`);
    soft.equal(num(row.body_type), bodyType(rec.body), `${what}: body_type`);
    if (typeof rec.body === 'string') {
      soft.equal(row.body, rec.body, `${what}: body`);
    } else {
      soft.deepEqual(parseStored(row.body, `${what} body`), expectedJson(rec.body), `${what}: body`);
    }
    soft.equal(row.trace_id ?? '', rec.spanContext?.traceId ?? '', `${what}: trace_id`);
    soft.equal(row.span_id ?? '', rec.spanContext?.spanId ?? '', `${what}: span_id`);
    soft.equal(num(row.flags), rec.spanContext?.traceFlags ?? 0, `${what}: flags`);
    soft.equal(row.service_name, c.service, `${what}: service_name`);
    soft.deepEqual(parseStoredObject(row.attributes, `${what} attributes`), expectedJson(rec.attributes),
      `${what}: attributes`);
    soft.equal(num(row.dropped_attributes_count), rec.droppedAttributesCount ?? 0, `${what}: dropped`);
    soft.equal(row.event_name ?? '', rec.eventName ?? '', `${what}: event_name`);
    soft.deepEqual(parseStoredObject(row.resource_attributes, `${what} resource`),
      expectedJson(c.resource.attributes), `${what}: resource_attributes`);
    soft.equal(row.scope_name, 'sightline-it-logger', `${what}: scope_name`);
    soft.equal(row.scope_version, '0.2.0', `${what}: scope_version`);
  });
  // Hand-written expectations.
  const [first, second, third] = out.objects;
  soft.equal(first.body, 'payment failed for order 42');
  soft.equal(first.severity_number, '17');
  soft.equal(first.trace_id, c.ids.root.traceId);
  soft.equal(first.span_id, c.ids.root.spanId);
  soft.equal(first.flags, '1');
  soft.equal(parseStored(first.attributes, 'log attributes').raw, 'AAEC/f7/', 'bytes attribute as base64');
  soft.deepEqual(parseStored(first.attributes, 'log attributes').nested, { a: 1, b: 'two', deeper: { c: [false] } });
  soft.equal(second.body_type, '6');
  soft.deepEqual(JSON.parse(second.body), { event: 'checkout', items: [1, 2], ok: true, amount: 9.75, who: { id: 'u1' } });
  soft.ok(emptyish(second.trace_id), 'log without context has no trace_id');
  soft.ok(emptyish(second.span_id), 'log without context has no span_id');
  soft.equal(third.body_type, '5');
  soft.deepEqual(JSON.parse(third.body), ['a', 1, true]);
  soft.equal(third.observed_time_ns, `${T0}330000001`);
  soft.equal(second.event_name, 'checkout.completed');
  soft.ok(emptyish(first.event_name), 'a record without an event name has none');
  // A log-based exception: on the embedded engines a row of log_exceptions
  // for each record that has one (schema 6); ClickHouse keeps the columns in
  // logs (docs/STORAGE.md).
  let exceptions = out.objects.filter((r) => !emptyish(r.exception_type));
  if (server.engine !== 'clickhouse') {
    exceptions = (await server.sql(
      `SELECT time_ns, exception_type, exception_message, exception_group FROM log_exceptions
       WHERE service_name = ${sqlString(c.service)} ORDER BY time_ns`)).objects;
  }
  soft.equal(exceptions.length, 1, 'one record is an exception event; the others are none');
  const exception = exceptions[0] ?? {};
  soft.equal(exception.time_ns, third.time_ns, 'the exception is the third record\'s');
  soft.equal(exception.exception_type, 'OrderError');
  soft.equal(exception.exception_message, 'order 42 not found');
  soft.equal(exception.exception_group, 'order <n> not found');
  soft.done('checkLogs ' + c.service);
}

function expectedMetricPoints(c) {
  const points = [];
  for (const rm of c.resourceMetrics) {
    for (const sm of rm.scopeMetrics) {
      for (const m of sm.metrics) {
        for (const dp of m.dataPoints) points.push({ scope: sm.scope, metric: m, dp });
      }
    }
  }
  return points;
}

async function checkMetrics(server, c) {
  const soft = softAssert();
  const out = await server.sql(`
    SELECT s.metric_name, s.metric_type, s.unit, s.description, s.temporality, s.is_monotonic,
           s.service_name, r.resource_attributes, r.scope_name, r.scope_version, s.attributes,
           p.series_id, p.time_ns, p.start_time_ns, p.value, p.int_value, p.count, p.sum, p.min, p.max,
           p.bucket_counts, p.explicit_bounds, p.exp_histogram, p.quantiles, p.exemplars, p.flags
    FROM metric_series s JOIN metric_points p ON p.project_id = s.project_id AND p.series_id = s.series_id
    ${joinResources('metric_resources')}
    WHERE s.service_name = ${sqlString(c.service)}
    ORDER BY s.metric_name, p.time_ns`);
  const expected = expectedMetricPoints(c);
  soft.equal(out.rows.length, expected.length,
    `metric points stored for ${c.service}: ${JSON.stringify(out.objects.map((r) => [r.metric_name, r.attributes, r.time_ns]))}`);

  const seriesIds = new Map();  // metric + attributes -> series_id
  const typeOf = { [DataPointType.GAUGE]: 1, [DataPointType.SUM]: 2, [DataPointType.HISTOGRAM]: 3,
    [DataPointType.EXPONENTIAL_HISTOGRAM]: 4 };
  for (const { scope, metric, dp } of expected) {
    const name = metric.descriptor.name;
    const attrs = expectedJson(dp.attributes);
    const time = String(hrTimeToNs(dp.endTime));
    const what = `${name} ${JSON.stringify(attrs)} @${time}`;
    const rows = out.objects.filter((r) => r.metric_name === name && r.time_ns === time
      && canon(parseStoredObject(r.attributes, what)) === canon(attrs));
    soft.equal(rows.length, 1, `${what}: expected one stored point, found ${rows.length}`);
    if (rows.length === 0) continue;
    const row = rows[0];
    const key = `${name} ${canon(attrs)}`;
    if (seriesIds.has(key)) soft.equal(row.series_id, seriesIds.get(key), `${what}: same series across exports`);
    seriesIds.set(key, row.series_id);

    soft.equal(num(row.metric_type), typeOf[metric.dataPointType], `${what}: metric_type`);
    soft.equal(row.unit, metric.descriptor.unit, `${what}: unit`);
    soft.equal(row.description, metric.descriptor.description, `${what}: description`);
    const temporality = metric.dataPointType === DataPointType.GAUGE ? 0
      : (metric.aggregationTemporality === AggregationTemporality.CUMULATIVE ? 2 : 1);
    soft.equal(num(row.temporality), temporality, `${what}: temporality`);
    soft.equal(boolCell(row.is_monotonic), metric.dataPointType === DataPointType.SUM && metric.isMonotonic,
      `${what}: is_monotonic`);
    soft.equal(row.service_name, c.service, `${what}: service_name`);
    soft.deepEqual(parseStoredObject(row.resource_attributes, what), expectedJson(c.resource.attributes),
      `${what}: resource_attributes`);
    soft.equal(row.scope_name, scope.name, `${what}: scope_name`);
    soft.equal(row.scope_version, scope.version, `${what}: scope_version`);
    soft.equal(row.start_time_ns, String(hrTimeToNs(dp.startTime)), `${what}: start_time_ns`);

    switch (metric.dataPointType) {
      case DataPointType.GAUGE:
      case DataPointType.SUM:
        // An int point's number is int_value alone; value is NULL (docs/STORAGE.md, schema 5).
        if (metric.descriptor.valueType === ValueType.INT) {
          soft.equal(row.int_value, String(dp.value), `${what}: int_value`);
          soft.equal(row.value, null, `${what}: value of an int point`);
        } else {
          soft.equal(num(row.value), dp.value, `${what}: value`);
          soft.equal(row.int_value, null, `${what}: int_value of a double point`);
        }
        break;
      case DataPointType.HISTOGRAM:
        soft.equal(num(row.count), dp.value.count, `${what}: count`);
        soft.equal(num(row.sum), dp.value.sum, `${what}: sum`);
        soft.equal(num(row.min), dp.value.min, `${what}: min`);
        soft.equal(num(row.max), dp.value.max, `${what}: max`);
        soft.deepEqual(parseStored(row.bucket_counts, `${what} bucket_counts`), dp.value.buckets.counts,
          `${what}: bucket_counts`);
        soft.deepEqual(parseStored(row.explicit_bounds, `${what} explicit_bounds`), dp.value.buckets.boundaries,
          `${what}: explicit_bounds`);
        break;
      case DataPointType.EXPONENTIAL_HISTOGRAM: {
        soft.equal(num(row.count), dp.value.count, `${what}: count`);
        soft.equal(num(row.sum), dp.value.sum, `${what}: sum`);
        soft.equal(num(row.min), dp.value.min, `${what}: min`);
        soft.equal(num(row.max), dp.value.max, `${what}: max`);
        const eh = parseStored(row.exp_histogram, `${what} exp_histogram`);
        soft.equal(eh.scale, dp.value.scale, `${what}: scale`);
        soft.equal(eh.zero_count, dp.value.zeroCount, `${what}: zero_count`);
        soft.equal(eh.positive.offset, dp.value.positive.offset, `${what}: positive.offset`);
        soft.deepEqual(eh.positive.bucket_counts, dp.value.positive.bucketCounts, `${what}: positive buckets`);
        soft.equal(eh.negative?.offset ?? 0, dp.value.negative.offset, `${what}: negative.offset`);
        soft.deepEqual(eh.negative?.bucket_counts ?? [], dp.value.negative.bucketCounts, `${what}: negative buckets`);
        break;
      }
      default:
        assert.fail(`unexpected data point type ${metric.dataPointType}`);
    }
  }

  // Hand-written expectations on the last (shutdown) export.
  const last = (name, attrs) => {
    const rows = out.objects.filter((r) => r.metric_name === name
      && canon(parseStoredObject(r.attributes, name)) === canon(attrs));
    assert.ok(rows.length >= 1, `${name} ${JSON.stringify(attrs)} stored`);
    return rows[rows.length - 1];
  };
  const a = last('it.requests', { route: '/a' });
  soft.equal(a.metric_type, '2');
  soft.equal(a.temporality, '2');
  soft.equal(boolCell(a.is_monotonic), true);
  soft.equal(a.value, null, 'it.requests is an int counter: its number is int_value alone');
  soft.equal(a.int_value, '7');
  soft.equal(last('it.requests', { route: '/b', ok: true }).int_value, '10');
  const q = last('it.queue.depth', { queue: 'q1' });
  soft.equal(boolCell(q.is_monotonic), false);
  soft.equal(q.temporality, '2');
  soft.equal(num(q.value), 7.25);
  const h = last('it.latency', { route: '/a' });
  soft.equal(h.metric_type, '3');
  soft.equal(h.temporality, '2');
  soft.deepEqual(JSON.parse(h.bucket_counts), [1, 2, 1, 1]);
  soft.deepEqual(JSON.parse(h.explicit_bounds), [10, 50, 100]);
  soft.equal(num(h.count), 5);
  soft.equal(num(h.sum), 275);
  soft.equal(num(h.min), 5);
  soft.equal(num(h.max), 150);
  const g = last('it.temperature', { sensor: 's1' });
  soft.equal(g.metric_type, '1');
  soft.equal(num(g.value), 21.5);
  soft.equal(num(last('it.temperature', { sensor: 's2' }).value), -3);
  const e = last('it.exp_latency', { route: '/exp' });
  soft.equal(e.metric_type, '4');
  soft.equal(num(e.count), 8);
  soft.equal(num(e.sum), 1023.5);
  soft.equal(JSON.parse(e.exp_histogram).zero_count, 1);
  soft.done('checkMetrics ' + c.service);
}

// ------------------------------------------------------------- the suite --

for (const engine of ENGINES) {
  describe(`OpenTelemetry JS SDK -> sightline (${engine})`, { timeout: 120_000 }, () => {
    let server;
    const cases = {};

    before(async () => { server = await startServer({ engine }); });
    after(async () => { await server?.cleanup(); });

    for (const protocol of PROTOCOLS) {
      const port = protocol === 'grpc' ? 'OTLP/gRPC port'
        : usesApiPort(engine, protocol) ? 'API port /api/otel' : 'OTLP port';
      it(`exports traces, logs and metrics as ${protocol} + gzip on the ${port}`, { timeout: 60_000 }, async () => {
        cases[protocol] = await exportAll(server, engine, protocol);
      });
    }

    it('counts what it stored in deep health', async () => {
      const health = await server.deepHealth();
      assert.equal(health.status, 'ok');
      assert.equal(health.storage, engine);
      const done = PROTOCOLS.map((p) => cases[p]);
      assert.ok(done.every(Boolean), 'all exports ran');
      assert.equal(health.rows.spans, done.reduce((n, c) => n + c.spans.length, 0), 'rows.spans');
      assert.equal(health.rows.logs, done.reduce((n, c) => n + c.logRecords.length, 0), 'rows.logs');
      assert.equal(health.rows.metric_points, done.reduce((n, c) => n + expectedMetricPoints(c).length, 0),
        'rows.metric_points');
    });

    it('stops cleanly on SIGTERM (exit 0)', async () => {
      await server.stop();
    });

    for (const protocol of PROTOCOLS) {
      it(`stored spans match the SDK (${protocol})`, async () => {
        assert.ok(cases[protocol], 'export ran');
        await checkSpans(server, cases[protocol]);
      });
      it(`stored logs match the SDK (${protocol})`, async () => {
        assert.ok(cases[protocol], 'export ran');
        await checkLogs(server, cases[protocol]);
      });
      it(`stored metrics match the SDK (${protocol})`, async () => {
        assert.ok(cases[protocol], 'export ran');
        await checkMetrics(server, cases[protocol]);
      });
    }
  });
}
