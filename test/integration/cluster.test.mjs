// The scale-out layout on loopback: a two-shard ClickHouse cluster (its own
// ZooKeeper, replicated tables under Distributed ones; lib/clickhouse.mjs),
// one PostgreSQL for the relational state (lib/postgres.mjs), and two
// stateless Sightline nodes, each reaching the cluster through a shard of its
// own (`--storage clickhouse --clickhouse-cluster ... --state postgres://...`).
//
// The official OpenTelemetry JS SDK writes traces, logs and metrics through
// both nodes; every dashboard call on either node must see everything both
// received, equal to the ground truth the test keeps. Then, under a steady
// stream of raw OTLP exports: one node is killed with SIGKILL mid-ingest and
// every export it acknowledged must be stored; one ClickHouse shard is stopped
// mid-ingest, and meanwhile the nodes answer 503 with Retry-After (never a 2xx
// for rows that were not stored, never a crash); once the shard is back,
// ingest resumes and nothing acknowledged is missing.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { diag, DiagLogLevel, SpanKind, SpanStatusCode, trace, ROOT_CONTEXT } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { LoggerProvider, BatchLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-proto';

import { TOKEN, request, sleep, startServer } from './lib/server.mjs';
import { startPostgres } from './lib/postgres.mjs';
import { CLUSTER, startClickHouseCluster } from './lib/clickhouse.mjs';
import { encodeTraceRequestProto, makeRunTag, makeSpanBatch } from './lib/otlp.mjs';
import { apiOk } from './lib/api.mjs';

const DATABASE = 'sightline_it';
const TRACES_PER_NODE = 12;
const LOGS_PER_NODE = 30;

const diagProblems = [];
diag.setLogger({
  error: (...a) => diagProblems.push(`error: ${a.join(' ')}`),
  warn: (...a) => diagProblems.push(`warn: ${a.join(' ')}`),
  info: () => {}, debug: () => {}, verbose: () => {},
}, DiagLogLevel.WARN);

//! Records the ExportResult of every export.
function capture(exporter) {
  const results = [];
  const orig = exporter.export.bind(exporter);
  exporter.export = (items, done) => orig(items, (r) => { results.push(r); done(r); });
  return results;
}

function assertExported(results, what) {
  assert.ok(results.length > 0, `${what}: never exported`);
  results.forEach((r, i) => assert.equal(r.code, 0, `${what}: export #${i} failed: ${r.error?.stack ?? r.error}`));
}

//! Writes traces (a server span and two children each, one child in a
//! second service), logs (half of them in a trace) and a counter through
//! `node` with the SDK; returns the ground truth.
async function writeWithSdk(node, name) {
  const headers = { Authorization: `Bearer ${TOKEN}` };
  const resource = resourceFromAttributes({ 'service.name': `api-${name}`, 'it.node': name });
  const traceResults = [];
  const spanExporter = new OTLPTraceExporter({ url: `${node.otlpUrl}/v1/traces`, headers });
  traceResults.push(capture(spanExporter));
  const tracerProvider = new BasicTracerProvider({
    resource, spanProcessors: [new BatchSpanProcessor(spanExporter, { maxExportBatchSize: 16 })],
  });
  const dbResource = resourceFromAttributes({ 'service.name': `db-${name}` });
  const dbExporter = new OTLPTraceExporter({ url: `${node.otlpUrl}/v1/traces`, headers });
  traceResults.push(capture(dbExporter));
  const dbProvider = new BasicTracerProvider({ resource: dbResource, spanProcessors: [new BatchSpanProcessor(dbExporter)] });
  const logExporter = new OTLPLogExporter({ url: `${node.otlpUrl}/v1/logs`, headers });
  const logResults = capture(logExporter);
  const loggerProvider = new LoggerProvider({ resource, processors: [new BatchLogRecordProcessor({ exporter: logExporter })] });
  const metricExporter = new OTLPMetricExporter({ url: `${node.otlpUrl}/v1/metrics`, headers });
  const metricResults = capture(metricExporter);
  const reader = new PeriodicExportingMetricReader({ exporter: metricExporter, exportIntervalMillis: 3_600_000 });
  const meterProvider = new MeterProvider({ resource, readers: [reader] });

  const truth = { traces: new Map(), logs: new Set(), counter: `it.cluster.requests.${name}`, total: 0 };
  const tracer = tracerProvider.getTracer('cluster-it');
  const dbTracer = dbProvider.getTracer('cluster-it');
  const logger = loggerProvider.getLogger('cluster-it');
  const counter = meterProvider.getMeter('cluster-it').createCounter(truth.counter);
  for (let t = 0; t < TRACES_PER_NODE; t++) {
    const root = tracer.startSpan(`GET /items/${t % 3}`, {
      kind: SpanKind.SERVER, attributes: { 'http.route': `/items/${t % 3}`, 'http.request.method': 'GET' },
    });
    if (t % 4 === 0) root.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
    const ctx = trace.setSpan(ROOT_CONTEXT, root);
    tracer.startSpan('render', {}, ctx).end();
    dbTracer.startSpan('SELECT items', { kind: SpanKind.SERVER }, ctx).end();
    root.end();
    truth.traces.set(root.spanContext().traceId, 3);
    counter.add(t + 1, { route: `/items/${t % 3}` });
    truth.total += t + 1;
  }
  for (let i = 0; i < LOGS_PER_NODE; i++) {
    const body = `log ${name} #${i}`;
    const context = i % 2 === 0 ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, tracer.startSpan('job'));
    logger.emit({ body, severityNumber: SeverityNumber.INFO + (i % 3) * 4, context, attributes: { i } });
    truth.logs.add(body);
  }
  await tracerProvider.forceFlush();
  await dbProvider.forceFlush();
  await loggerProvider.forceFlush();
  await meterProvider.forceFlush();
  for (const r of traceResults) assertExported(r, `${name} traces`);
  assertExported(logResults, `${name} logs`);
  assertExported(metricResults, `${name} metrics`);
  await Promise.all([tracerProvider.shutdown(), dbProvider.shutdown(), loggerProvider.shutdown(), meterProvider.shutdown()]);
  return truth;
}

//! Every log body on `node` (newest first, following the cursor).
async function allLogBodies(node) {
  const bodies = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const r = await apiOk(node, 'logs', { limit: 17, cursor });
    bodies.push(...r.logs.map((l) => l.body));
    if (!r.next_cursor) return bodies;
    cursor = r.next_cursor;
  }
  throw new Error('more than 100 log pages');
}

//! Every trace of the last hour on `node`: trace id -> span count.
async function allTraces(node, params = {}) {
  const out = new Map();
  for (let offset = 0; offset < 100_000; offset += 500) {
    const r = await apiOk(node, 'traces', { ...params, limit: 500, offset });
    for (const t of r.traces) out.set(t.trace_id, t.span_count);
    if (!r.has_more) return out;
  }
  throw new Error('too many traces');
}

//! A raw OTLP span export of `n` spans (one trace per 8) through `node`:
//! {status, retryAfter, traceIds}.
async function exportSpans(node, runTag, requestNo, n, service) {
  const batch = makeSpanBatch(runTag, requestNo, n, { service });
  const body = encodeTraceRequestProto(batch);
  const traceIds = [...new Set(batch.spans.map((s) => s.traceId))];
  try {
    const res = await request(`${node.otlpUrl}/v1/traces`, {
      method: 'POST', body, timeoutMs: 20_000,
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/x-protobuf', 'Content-Length': body.length },
    });
    return { status: res.status, retryAfter: res.headers['retry-after'], traceIds, n };
  } catch (err) {
    return { status: 0, error: err.message, traceIds, n };  // the node is gone (killed) or hung up
  }
}

describe('two Sightline nodes on a two-shard ClickHouse cluster and one PostgreSQL', () => {
  let ch, pg, state, a, b;
  const truth = {};
  const runTag = makeRunTag();
  let requestNo = 0;

  async function startNode(shard) {
    return startServer({
      engine: 'clickhouse',
      state,
      args: ['--clickhouse-url', ch.urls()[shard], '--clickhouse-database', DATABASE, '--clickhouse-cluster', CLUSTER,
        '--clickhouse-replicated'],
      readyTimeoutMs: 60_000,
    });
  }

  before(async () => {
    [ch, pg] = await Promise.all([startClickHouseCluster(), startPostgres()]);
    state = await pg.createDatabase('sightline');
    a = await startNode(0);  // creates the tables ON CLUSTER
    b = await startNode(1);
  });

  after(async () => {
    for (const s of [a, b]) {
      if (!s) continue;
      if (s.alive()) await s.stop().catch(() => {});
      await s.cleanup();
    }
    if (ch) await ch.stop();
    if (pg) await pg.stop();
  });

  it('keeps each table on both shards, under a Distributed table of the name the reader uses', async () => {
    for (const shard of ch.shards) {
      const engines = await shard.query(`SELECT name, engine FROM system.tables WHERE database = '${DATABASE}' ORDER BY name`);
      assert.match(engines, /^spans\tDistributed$/m);
      assert.match(engines, /^spans_local\tReplicatedMergeTree$/m);
      assert.match(engines, /^span_resources_local\tReplicatedReplacingMergeTree$/m);
    }
  });

  it('the SDK writes through both nodes; every dashboard call on either node sees everything', async () => {
    [truth.a, truth.b] = await Promise.all([writeWithSdk(a, 'a'), writeWithSdk(b, 'b')]);
    assert.deepEqual(diagProblems, []);
    const traces = new Map([...truth.a.traces, ...truth.b.traces]);
    const logs = [...truth.a.logs, ...truth.b.logs].sort();
    // The rows are spread over both shards (a trace's spans on one).
    const perShard = await Promise.all(ch.shards.map((s) => s.query(`SELECT count() FROM ${DATABASE}.spans_local`)));
    assert.ok(perShard.every((n) => Number(n) > 0), `spans per shard: ${perShard}`);
    assert.equal(perShard.reduce((x, n) => x + Number(n), 0), traces.size * 3);
    for (const shard of ch.shards) {
      const split = await shard.query(`SELECT count() FROM (SELECT trace_id_low FROM ${DATABASE}.spans_local GROUP BY trace_id_low HAVING count() != 3)`);
      assert.equal(split.trim(), '0', 'a trace is split over the shards');
    }
    // Deep health is the cluster's, read from the servers: the same rows on
    // either node, whichever received them.
    for (const node of [a, b]) {
      const who = node === a ? 'node a' : 'node b';
      const health = await request(`${node.apiUrl}/api/health/deep`);
      assert.equal(health.status, 200, `${who}: ${health.body}`);
      const h = JSON.parse(health.body.toString());
      assert.equal(h.status, 'ok');
      assert.equal(h.engine.reachable, true, `${who}: ${JSON.stringify(h.engine)}`);
      assert.equal(h.rows.spans, traces.size * 3, `${who}: deep health spans`);
      assert.equal(h.rows.logs, logs.length, `${who}: deep health logs`);
      assert.ok(h.engine.active_parts >= 2 * 3, `${who}: parts on both shards: ${JSON.stringify(h.engine)}`);
    }
    for (const node of [a, b]) {
      const who = node === a ? 'node a' : 'node b';
      assert.deepEqual(await allTraces(node), traces, `${who}: traces`);
      const errors = await allTraces(node, { status: 'error' });
      assert.equal(errors.size, 2 * Math.ceil(TRACES_PER_NODE / 4), `${who}: error traces`);
      for (const id of [...truth.a.traces.keys()].slice(0, 2).concat([...truth.b.traces.keys()].slice(0, 2))) {
        const t = await apiOk(node, `traces/${id}`);
        assert.equal(t.spans.length, 3, `${who}: spans of ${id}`);
        assert.deepEqual(new Set(t.spans.map((s) => s.service)).size, 2);
      }
      assert.deepEqual((await allLogBodies(node)).sort(), logs, `${who}: logs`);
      const facets = await apiOk(node, 'logs/facets');
      assert.equal(facets.total, logs.length, `${who}: log facets`);
      const services = await apiOk(node, 'services');
      const requests = Object.fromEntries(services.services.map((s) => [s.service, s.requests]));
      for (const n of ['a', 'b']) {
        assert.equal(requests[`api-${n}`], TRACES_PER_NODE, `${who}: requests of api-${n}`);
        assert.equal(requests[`db-${n}`], TRACES_PER_NODE, `${who}: requests of db-${n}`);
      }
      const map = await apiOk(node, 'service_map');
      for (const n of ['a', 'b']) {
        const edge = map.edges.find((e) => e.from === `api-${n}` && e.to === `db-${n}`);
        assert.equal(edge?.count, TRACES_PER_NODE, `${who}: service map edge of ${n}`);
      }
      const metrics = (await apiOk(node, 'metrics')).metrics.map((m) => m.name);
      for (const n of ['a', 'b']) {
        const name = truth[n].counter;
        assert.ok(metrics.includes(name), `${who}: metric ${name} in ${metrics}`);
        // A cumulative counter per route: the running total of each, added up.
        const series = await apiOk(node, 'metrics/series', { name, agg: 'last', group_by: 'route' });
        assert.equal(series.series.length, 3, `${who}: series of ${name}`);
        const sum = series.series.map((s) => s.values.filter((v) => v !== null).at(-1)).reduce((x, v) => x + v, 0);
        assert.equal(sum, truth[n].total, `${who}: total of ${name}`);
      }
    }
  });

  it('a node killed with SIGKILL mid-ingest loses nothing it acknowledged', async () => {
    const acked = [];
    let stop = false;
    const load = (async () => {
      while (!stop) {
        const r = await exportSpans(b, runTag, ++requestNo, 64, 'it-kill');
        if (r.status === 200) acked.push(r);
        else if (!b.alive()) break;
      }
    })();
    const deadline = Date.now() + 20_000;
    while (acked.length < 5 && Date.now() < deadline) await sleep(20);
    await b.kill9();
    stop = true;
    await load;
    assert.ok(acked.length >= 5, `only ${acked.length} exports acknowledged before the kill`);
    const stored = await allTraces(a, { service: 'it-kill' });
    for (const r of acked) for (const id of r.traceIds) assert.ok(stored.has(id), `acknowledged trace ${id} is missing`);
    b = await b.restart({ readyTimeoutMs: 60_000 });
  });

  it('a stopped shard gets 503 with Retry-After; back, ingest resumes and nothing acknowledged is lost', async () => {
    const acked = [];
    const refused = [];
    let stop = false;
    const load = (async () => {
      let i = 0;
      while (!stop) {
        const node = i++ % 2 === 0 ? a : b;
        const r = await exportSpans(node, runTag, ++requestNo, 32, 'it-shard');
        if (r.status === 200) acked.push(r);
        else refused.push(r);
        if (r.status !== 200) await sleep(50);
      }
    })();
    const deadline = Date.now() + 20_000;
    while (acked.length < 4 && Date.now() < deadline) await sleep(20);
    const shard = ch.shards[1];
    await shard.stop();
    const refusedBefore = refused.length;
    const ackedWhileDown = acked.length;
    const downUntil = Date.now() + 15_000;
    while (refused.length < refusedBefore + 6 && Date.now() < downUntil) await sleep(50);
    assert.equal(acked.length, ackedWhileDown, 'an export was acknowledged while a shard was down');
    // Deep health says so on both nodes, rather than counting one shard.
    for (const node of [a, b]) {
      const health = await request(`${node.apiUrl}/api/health/deep`);
      assert.equal(health.status, 503, `deep health while a shard was down: ${health.status}`);
      const h = JSON.parse(health.body.toString());
      assert.equal(h.status, 'degraded');
      assert.equal(h.engine.reachable, false);
      assert.ok(h.engine.error.length > 0);
    }
    await shard.start();
    const resumeDeadline = Date.now() + 60_000;
    while (acked.length < ackedWhileDown + 4 && Date.now() < resumeDeadline) await sleep(50);
    stop = true;
    await load;
    assert.ok(a.alive() && b.alive(), 'a node crashed');
    const whileDown = refused.slice(refusedBefore);
    assert.ok(whileDown.length >= 6, `only ${whileDown.length} refusals while the shard was down`);
    for (const r of whileDown) {
      assert.equal(r.status, 503, `while a shard was down: ${r.status} ${r.error ?? ''}`);
      assert.match(String(r.retryAfter), /^\d+$/, 'a 503 without Retry-After');
    }
    assert.ok(acked.length >= ackedWhileDown + 4, `ingest did not resume: ${acked.length - ackedWhileDown} acknowledged after`);
    for (const node of [a, b]) {
      const stored = await allTraces(node, { service: 'it-shard' });
      for (const r of acked) for (const id of r.traceIds) assert.ok(stored.has(id), `acknowledged trace ${id} is missing`);
    }
  });
});
