// The overview's services over time (services/series) and the Logs page's
// total and facets (logs/facets), end to end for each engine: spans and log
// records are sent by the official OpenTelemetry JS SDK (OTLP/HTTP protobuf),
// and every answer is checked against ground truth computed here from what was
// sent.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { trace, ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { SeverityNumber } from '@opentelemetry/api-logs';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { LoggerProvider, BatchLogRecordProcessor } from '@opentelemetry/sdk-logs';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { OTLPLogExporter } from '@opentelemetry/exporter-logs-otlp-proto';

import { ENGINES, TOKEN, startServer } from './lib/server.mjs';
import { api, apiOk } from './lib/api.mjs';

// 20 whole minutes ending 5 minutes ago; one-minute buckets.
const STEP = 60_000;
const FROM = Math.floor(Date.now() / STEP) * STEP - 25 * STEP;
const TO = FROM + 20 * STEP;
const RANGE = { from: FROM, to: TO };

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(0x0e1f);
const int = (n) => Math.floor(rand() * n);

//! Exact percentile with linear interpolation between closest ranks (docs/API.md).
function percentile(values, p) {
  const s = [...values].sort((a, b) => a - b);
  const pos = p * (s.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, s.length - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

// ---------------------------------------------------------------- spans --
// Three services with different volumes; entry (SERVER) spans with a known
// duration in whole ms, some with error status, each with an INTERNAL child
// that the overview must not count. A few spans fall outside the range.
const SERVICES = [
  { name: 'ov-web', n: 120 },
  { name: 'ov-api', n: 70 },
  { name: 'ov-db', n: 25 },
];

function planSpans() {
  const entries = [];
  for (const svc of SERVICES) {
    for (let i = 0; i < svc.n; i++) {
      // Leave minutes 7 and 8 empty for every service: gaps, not zeros.
      let minute = int(20);
      if (minute === 7 || minute === 8) minute = 9;
      const start = FROM + minute * STEP + int(STEP - 5_000);
      entries.push({ service: svc.name, start, dur: 1 + int(900), error: rand() < 0.15 });
    }
    // Outside the range: before FROM and at TO.
    entries.push({ service: svc.name, start: FROM - 30_000, dur: 5, error: false, outside: true });
    entries.push({ service: svc.name, start: TO + 1_000, dur: 5, error: false, outside: true });
  }
  return entries;
}

async function sendSpans(server, entries) {
  for (const svc of SERVICES) {
    const exporter = new OTLPTraceExporter({ url: `${server.otlpUrl}/v1/traces`, headers: { Authorization: `Bearer ${TOKEN}` } });
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': svc.name }),
      spanProcessors: [new BatchSpanProcessor(exporter, { maxExportBatchSize: 512, scheduledDelayMillis: 60_000 })],
    });
    const tracer = provider.getTracer('overview-it');
    // Times as Dates: the SDK reads a number below the process's start as a
    // performance.now() offset.
    for (const e of entries.filter((x) => x.service === svc.name)) {
      const span = tracer.startSpan('GET /thing', { kind: SpanKind.SERVER, startTime: new Date(e.start), root: true });
      const child = tracer.startSpan('work', { kind: SpanKind.INTERNAL, startTime: new Date(e.start) }, trace.setSpan(ROOT_CONTEXT, span));
      child.end(new Date(e.start + 1));
      if (e.error) span.setStatus({ code: SpanStatusCode.ERROR, message: 'boom' });
      span.end(new Date(e.start + e.dur));
    }
    await provider.forceFlush();
    await provider.shutdown();
  }
}

//! services/series as it should be: per service, per one-minute bucket.
function expectedSeries(entries) {
  const out = new Map();
  for (const svc of SERVICES) {
    const rows = Array.from({ length: 20 }, () => []);
    for (const e of entries) {
      if (e.service !== svc.name || e.start < FROM || e.start >= TO) continue;
      rows[Math.floor((e.start - FROM) / STEP)].push(e);
    }
    out.set(svc.name, {
      requests: rows.map((r) => r.length),
      errors: rows.map((r) => r.filter((e) => e.error).length),
      p95: rows.map((r) => (r.length ? percentile(r.map((e) => e.dur), 0.95) : null)),
    });
  }
  return out;
}

// ----------------------------------------------------------------- logs --
const LOG_SERVICES = ['lg-checkout', 'lg-cart', 'lg-auth'];
const LEVELS = [
  [SeverityNumber.DEBUG, 'DEBUG'],
  [SeverityNumber.INFO, 'INFO'],
  [SeverityNumber.INFO2, 'INFO'],
  [SeverityNumber.WARN, 'WARN'],
  [SeverityNumber.ERROR, 'ERROR'],
  [SeverityNumber.FATAL, 'FATAL'],
];
const LEVEL_OF = (n) => (n >= 21 ? 'FATAL' : n >= 17 ? 'ERROR' : n >= 13 ? 'WARN' : n >= 9 ? 'INFO' : n >= 5 ? 'DEBUG' : n >= 1 ? 'TRACE' : 'UNSPECIFIED');

function planLogs() {
  const out = [];
  for (let i = 0; i < 400; i++) {
    const [sev, text] = LEVELS[int(LEVELS.length)];
    const attributes = {};
    if (rand() < 0.7) attributes['http.method'] = ['GET', 'POST', 'PUT'][int(3)];
    if (rand() < 0.5) attributes.region = ['eu', 'us', 'ap', 'sa', 'af', 'me', 'oc'][int(7)];
    if (rand() < 0.3) attributes.retry = rand() < 0.5;
    if (rand() < 0.2) attributes.attempt = int(4);
    if (rand() < 0.1) attributes.tags = ['a', 'b'];  // arrays are not faceted
    out.push({
      service: LOG_SERVICES[Math.min(int(4), 2)],  // lg-auth twice as often
      time: FROM + 60_000 + i * 2_500 + int(2_000),
      sev,
      text,
      body: `event ${int(30)}`,
      attributes,
    });
  }
  out.push({ service: 'lg-cart', time: FROM - 10_000, sev: 9, text: 'INFO', body: 'too early', attributes: { region: 'eu' } });
  return out;
}

async function sendLogs(server, records) {
  for (const svc of LOG_SERVICES) {
    const exporter = new OTLPLogExporter({ url: `${server.otlpUrl}/v1/logs`, headers: { Authorization: `Bearer ${TOKEN}` } });
    const provider = new LoggerProvider({
      resource: resourceFromAttributes({ 'service.name': svc }),
      processors: [new BatchLogRecordProcessor({ exporter, maxExportBatchSize: 512, scheduledDelayMillis: 60_000 })],
    });
    const logger = provider.getLogger('logs-it');
    for (const r of records.filter((x) => x.service === svc)) {
      logger.emit({ timestamp: new Date(r.time), severityNumber: r.sev, severityText: r.text, body: r.body, attributes: r.attributes });
    }
    await provider.forceFlush();
    await provider.shutdown();
  }
}

//! Sorted like the API: count descending, then value ascending (bytes).
function top(map, n) {
  return [...map.entries()]
    .sort((a, b) => (b[1] - a[1]) || (Buffer.compare(Buffer.from(a[0]), Buffer.from(b[0]))))
    .slice(0, n)
    .map(([value, count]) => ({ value, count }));
}

//! logs/facets as it should be for the records matching `match`, newest `sample`.
function expectedFacets(records, match, sample = 1000) {
  const hit = records.filter((r) => r.time >= FROM && r.time < TO && match(r));
  const levels = new Map();
  const services = new Map();
  for (const r of hit) {
    levels.set(LEVEL_OF(r.sev), (levels.get(LEVEL_OF(r.sev)) ?? 0) + 1);
    services.set(r.service, (services.get(r.service) ?? 0) + 1);
  }
  // Times are distinct here, so "newest first" needs no tie rule.
  const sampled = [...hit].sort((a, b) => b.time - a.time).slice(0, sample);
  const keys = new Map();
  const values = new Map();
  for (const r of sampled) {
    for (const [k, v] of Object.entries(r.attributes)) {
      if (Array.isArray(v)) continue;
      const text = String(v);
      keys.set(k, (keys.get(k) ?? 0) + 1);
      if (!values.has(k)) values.set(k, new Map());
      values.get(k).set(text, (values.get(k).get(text) ?? 0) + 1);
    }
  }
  const order = ['FATAL', 'ERROR', 'WARN', 'INFO', 'DEBUG', 'TRACE', 'UNSPECIFIED'];
  const mins = { FATAL: 21, ERROR: 17, WARN: 13, INFO: 9, DEBUG: 5, TRACE: 1, UNSPECIFIED: 0 };
  return {
    total: hit.length,
    levels: order.filter((l) => levels.has(l)).map((l) => ({ severity: l, severity_min: mins[l], count: levels.get(l) })),
    services: top(services, 10),
    sampled: sampled.length,
    keys: top(keys, 8).map(({ value: key, count }) => ({
      key,
      count,
      values: top(values.get(key), 5),
      values_truncated: values.get(key).size > 5,
    })),
  };
}

function checkFacets(got, want, what) {
  assert.equal(got.total, want.total, `${what}: total`);
  assert.deepEqual(got.levels, want.levels, `${what}: levels`);
  assert.deepEqual(got.services, want.services, `${what}: services`);
  assert.equal(got.services_truncated, false, `${what}: services_truncated`);
  assert.equal(got.services_other, 0, `${what}: services_other`);
  assert.equal(got.attributes.sampled, want.sampled, `${what}: sampled`);
  assert.equal(got.attributes.exact, want.sampled === want.total, `${what}: exact`);
  assert.deepEqual(
    got.attributes.keys.map(({ key, count, values, values_truncated }) => ({ key, count, values, values_truncated })),
    want.keys,
    `${what}: attribute keys`,
  );
}

for (const engine of ENGINES) {
  describe(`overview series and log facets (${engine})`, { timeout: 180_000 }, () => {
    let server;
    const spans = planSpans();
    const logs = planLogs();

    before(async () => {
      server = await startServer({ engine });
      await sendSpans(server, spans);
      await sendLogs(server, logs);
    });
    after(async () => { await server?.cleanup(); });

    it('services/series: requests, errors and P95 per service and minute, as sent', async () => {
      const got = await apiOk(server, 'services/series', { ...RANGE, step_ms: STEP });
      assert.equal(got.step_ms, STEP);
      assert.deepEqual(got.buckets, Array.from({ length: 20 }, (_, i) => FROM + i * STEP));
      assert.equal(got.services_total, 3);
      assert.equal(got.truncated, false);
      assert.deepEqual(got.series.map((s) => s.service), ['ov-web', 'ov-api', 'ov-db']);
      const want = expectedSeries(spans);
      for (const s of got.series) {
        const w = want.get(s.service);
        assert.deepEqual(s.requests, w.requests, `${s.service} requests`);
        assert.deepEqual(s.errors, w.errors, `${s.service} errors`);
        assert.equal(s.p95_ms.length, 20);
        s.p95_ms.forEach((v, i) => {
          if (w.p95[i] === null) assert.equal(v, null, `${s.service} p95 bucket ${i} is a gap`);
          else assert.ok(Math.abs(v - w.p95[i]) < 1e-6, `${s.service} p95 bucket ${i}: ${v} vs ${w.p95[i]}`);
        });
        assert.equal(s.p95_ms[7], null, 'an empty minute is a gap in P95');
        assert.equal(s.requests[7], 0, 'and a true 0 in requests');
      }
      // The same totals as the services table.
      const table = await apiOk(server, 'services', RANGE);
      for (const row of table.services) {
        const s = got.series.find((x) => x.service === row.service);
        assert.equal(s.requests.reduce((a, b) => a + b, 0), row.requests, `${row.service}: series sum = table`);
        assert.equal(s.errors.reduce((a, b) => a + b, 0), row.errors);
      }
    });

    it('services/series: top caps the services drawn and says so; bad parameters are 400', async () => {
      const got = await apiOk(server, 'services/series', { ...RANGE, step_ms: STEP, top: 2 });
      assert.deepEqual(got.series.map((s) => s.service), ['ov-web', 'ov-api']);
      assert.equal(got.truncated, true);
      assert.equal(got.services_total, 3);
      const one = await apiOk(server, 'services/series', { ...RANGE, step_ms: STEP, service: 'ov-db' });
      assert.deepEqual(one.series.map((s) => s.service), ['ov-db']);
      assert.deepEqual(one.series[0].requests, expectedSeries(spans).get('ov-db').requests);
      for (const bad of [{ top: 0 }, { top: 51 }, { top: 'x' }, { step_ms: 0 }]) {
        const r = await api(server, 'services/series', { ...RANGE, ...bad });
        assert.equal(r.status, 400, `${JSON.stringify(bad)} -> ${r.status} ${r.text}`);
      }
    });

    it('logs/facets: exact total, levels, services and attribute values, as sent', async () => {
      checkFacets(await apiOk(server, 'logs/facets', RANGE), expectedFacets(logs, () => true), 'all');
      // The total is the number of records the logs call pages through.
      let n = 0;
      let cursor;
      do {
        const page = await apiOk(server, 'logs', { ...RANGE, limit: 1000, ...(cursor ? { cursor } : {}) });
        n += page.logs.length;
        cursor = page.next_cursor;
      } while (cursor);
      assert.equal(n, expectedFacets(logs, () => true).total);
    });

    it('logs/facets: follows the filter (service, severity, attribute)', async () => {
      checkFacets(await apiOk(server, 'logs/facets', { ...RANGE, service: 'lg-cart' }),
        expectedFacets(logs, (r) => r.service === 'lg-cart'), 'service');
      checkFacets(await apiOk(server, 'logs/facets', { ...RANGE, severity_min: 13 }),
        expectedFacets(logs, (r) => r.sev >= 13), 'severity_min 13');
      checkFacets(await apiOk(server, 'logs/facets', { ...RANGE, attr: 'region=eu' }),
        expectedFacets(logs, (r) => r.attributes.region === 'eu'), 'attr region=eu');
      checkFacets(await apiOk(server, 'logs/facets', { ...RANGE, attr: 'retry=true', q: 'event 1' }),
        expectedFacets(logs, (r) => r.attributes.retry === true && r.body.includes('event 1')), 'attr and text');
    });

    it('logs/facets: attributes over a bounded sample, flagged; bad samples are 400', async () => {
      const got = await apiOk(server, 'logs/facets', { ...RANGE, sample: 50 });
      const want = expectedFacets(logs, () => true, 50);
      assert.equal(want.sampled, 50);
      checkFacets(got, want, 'sample 50');
      assert.equal(got.attributes.exact, false);
      for (const sample of [0, 10_001, 'x']) {
        const r = await api(server, 'logs/facets', { ...RANGE, sample });
        assert.equal(r.status, 400, `sample=${sample} -> ${r.status}`);
        assert.match(r.json?.error ?? r.text, /sample/);
      }
    });
  });
}
