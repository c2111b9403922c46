// The query API (/api/v1/, docs/API.md "Query API") end to end, for each
// storage engine: a seeded, known dataset of spans, logs and metrics goes in
// through OTLP/HTTP; every call's answer is checked against the same answer
// computed independently here from the generated data. Bad parameters must be
// 400s, credentials are enforced, and both engines must answer alike.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { ENGINES, TOKEN, startServer } from './lib/server.mjs';
import { encodeLogsJson, encodeMetricsProto, encodeTracesProto } from './lib/otlp.mjs';
import { api, apiOk, login, postOtlp } from './lib/api.mjs';

const PASSWORD = 'it-admin-pw-7c3e';
const SEED = 0x51d7e1;

// ------------------------------------------------------------ time layout --
// All queries use an explicit range of 40 whole minutes that contains every
// generated item: [FROM, TO) with FROM on a minute boundary, data in
// [now - 30 min, now - 2 min].
const NOW_MS = Date.now();
const FROM = Math.floor(NOW_MS / 60_000) * 60_000 - 35 * 60_000;
const TO = FROM + 40 * 60_000;
const RANGE = { from: FROM, to: TO };
const DATA_START_MS = NOW_MS - 30 * 60_000;
const DATA_LEN_MS = 28 * 60_000;
// A narrower window (10 minutes) for range-filtering checks.
const WIN = { from: FROM + 12 * 60_000, to: FROM + 22 * 60_000 };
// Metric points are aligned to FROM so that bucket membership is known.
const METRIC_T0_MS = FROM + 5 * 60_000;

const NS = 1_000_000n;
const msToNs = (ms) => BigInt(ms) * NS;

// ------------------------------------------------------------------ PRNG --

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

function makeRng(seed) {
  const rand = mulberry32(seed);
  const rng = {
    rand,
    int: (n) => Math.floor(rand() * n),                  // 0..n-1
    range: (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1)),
    pick: (arr) => arr[Math.floor(rand() * arr.length)],
    chance: (p) => rand() < p,
    weighted: (pairs) => {                                // [[value, weight], ...]
      const total = pairs.reduce((s, [, w]) => s + w, 0);
      let r = rand() * total;
      for (const [v, w] of pairs) {
        if ((r -= w) < 0) return v;
      }
      return pairs[pairs.length - 1][0];
    },
    normal: () => {
      const u = Math.max(rand(), 1e-12);
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
    },
    hex: (bytes) => {
      let s = '';
      for (let i = 0; i < bytes; i++) s += rng.int(256).toString(16).padStart(2, '0');
      return s;
    },
  };
  return rng;
}

// --------------------------------------------------------------- dataset --

const SERVICES = ['checkout', 'catalog', 'billing-worker'];
const RESOURCE = (service) => ({ 'service.name': service, 'service.version': '1.4.2', 'deployment.environment': 'it' });
const SCOPE = (service) => ({ name: `it/${service}`, version: '0.9.0' });

// Entry endpoints: some named by http.route (span name differs), some by span name only.
const ENDPOINTS = [
  { service: 'checkout', name: 'GET', route: '/api/cart/{id}', kind: 2, weight: 30, method: 'GET', medianMs: 18, sigma: 0.6, errP: 0.06 },
  { service: 'checkout', name: 'POST /api/checkout', route: '/api/checkout', kind: 2, weight: 16, method: 'POST', medianMs: 140, sigma: 0.5, errP: 0.12 },
  { service: 'catalog', name: 'GET /api/products', route: '/api/products', kind: 2, weight: 20, method: 'GET', medianMs: 35, sigma: 0.7, errP: 0.08 },
  { service: 'catalog', name: 'ListCategories', route: null, kind: 2, weight: 11, medianMs: 9, sigma: 0.4, errP: 0.03 },
  { service: 'billing-worker', name: "process 'invoice'", route: null, kind: 5, weight: 14, medianMs: 220, sigma: 0.8, errP: 0.15 },
  { service: 'billing-worker', name: 'cron reconcile', route: null, kind: 1, weight: 5, medianMs: 4000, sigma: 0.4, errP: 0.2, long: true },
];
const CATALOG_PRODUCTS = ENDPOINTS[2];

const EXCEPTIONS = {
  checkout: [[['ValueError', 'invalid cart id'], 3], [['ValueError', 'quantity must be positive'], 2], [['TimeoutError', 'upstream timed out after 5s'], 1]],
  catalog: [[['TimeoutError', 'upstream timed out after 5s'], 1]],
  'billing-worker': [[['DbError', 'deadlock detected'], 2], [['PanicError', null], 1]],
};

const WORDS = ['Payment', 'declined', 'CACHE', 'miss', 'Timeout', 'TIMEOUT', 'timeout', 'user', 'Login', 'ok', 'retry',
  'Disk', 'FULL', 'disk', 'full', 'connection', 'reset', 'cpu', 'at', '50%', '500', 'load', 'user_id', 'user-id', 'userXid',
  'missing', 'Order', 'shipped', 'queue', 'drained'];
const SEVERITIES = [[[1, 'TRACE'], 5], [[5, 'DEBUG'], 15], [[9, 'INFO'], 45], [[10, 'INFO2'], 5], [[13, 'WARN'], 15],
  [[17, 'ERROR'], 10], [[21, 'FATAL'], 3], [[24, 'FATAL4'], 2]];
const LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'];
const levelOf = (sev) => LEVELS[Math.floor((sev - 1) / 4)];

function generateDataset(seed) {
  const rng = makeRng(seed);
  const spans = [];
  const traceIds = new Set();
  const spanIds = new Set();
  const newTraceId = () => { let id; do id = rng.hex(16); while (traceIds.has(id)); traceIds.add(id); return id; };
  const newSpanId = () => { let id; do id = rng.hex(8); while (spanIds.has(id) || id === '0000000000000000'); spanIds.add(id); return id; };
  const durFor = (ep) => Math.max(50_000, Math.round(ep.medianMs * 1e6 * Math.exp(ep.sigma * rng.normal())));
  const roots = [];

  const entryAttrs = (ep, error) => {
    const a = {};
    if (ep.route) {
      a['http.route'] = ep.route;
      a['http.request.method'] = ep.method;
      a['http.response.status_code'] = error ? 500 : 200;
    }
    if (ep.kind === 5) {
      a['messaging.system'] = 'kafka';
      a['messaging.destination.name'] = 'invoices';
    }
    a['customer.tier'] = rng.weighted([['free', 6], ['pro', 3], ['enterprise', 1]]);
    if (rng.chance(0.3)) a.retry = rng.chance(0.5);
    if (rng.chance(0.2)) a['sample.ratio'] = 0.25;
    return a;
  };
  const exceptionEvents = (service, start, dur) => {
    const [type, message] = rng.weighted(EXCEPTIONS[service]);
    const attrs = { 'exception.type': type };
    if (message !== null) attrs['exception.message'] = message;
    attrs['exception.stacktrace'] = `${type}: at handler (app.js:${rng.range(10, 99)})`;
    const t = start + BigInt(Math.floor(dur / 2));
    const exc = { time: t, name: 'exception', attributes: attrs };
    const variant = rng.int(4);
    if (variant === 2) return [{ time: start + 1000n, name: 'retry', attributes: { attempt: 1 } }, exc];
    if (variant === 3) {
      return [exc, { time: t + 10n, name: 'exception', attributes: { 'exception.type': 'WrappedError', 'exception.message': 'outer' } }];
    }
    return [exc];
  };
  const makeSpan = (f) => {
    const s = {
      traceId: f.traceId, spanId: newSpanId(), parentSpanId: f.parentSpanId ?? '', service: f.service, name: f.name,
      kind: f.kind, start: f.start, durNs: f.durNs, end: f.start + BigInt(f.durNs),
      statusCode: f.statusCode ?? 0, statusMessage: f.statusMessage ?? '', attributes: f.attributes ?? {},
      events: f.events ?? [], links: f.links ?? [], traceState: f.traceState ?? '',
    };
    spans.push(s);
    return s;
  };
  const statusFor = (errP) => {
    if (rng.chance(errP)) return { statusCode: 2, statusMessage: rng.pick(['internal error', 'upstream failure']) };
    return { statusCode: rng.chance(0.5) ? 1 : 0, statusMessage: '' };
  };
  const entrySpan = (ep, traceId, parentSpanId, start, durNs) => {
    const st = statusFor(ep.errP);
    const error = st.statusCode === 2;
    let events = [];
    if (error && rng.chance(0.4)) events = exceptionEvents(ep.service, start, durNs);
    else if (!error && rng.chance(0.05)) events = [{ time: start + 5000n, name: 'cache miss', attributes: { 'cache.key': `k${rng.int(100)}` } }];
    let links = [];
    if (ep.kind === 5 && roots.length > 0 && rng.chance(0.2)) {
      const target = rng.pick(roots);
      links = [{ traceId: target.traceId, spanId: target.spanId, traceState: rng.chance(0.5) ? 'vendor=x' : '', attributes: { 'link.kind': 'follows_from' } }];
    }
    return makeSpan({
      traceId, parentSpanId, service: ep.service, name: ep.name, kind: ep.kind, start, durNs,
      ...st, attributes: entryAttrs(ep, error), events, links,
      traceState: rng.chance(0.05) ? 'congo=t61rcWkgMzE' : '',
    });
  };

  const N_TRACES = 2600;
  for (let i = 0; i < N_TRACES; i++) {
    const ep = rng.weighted(ENDPOINTS.map((e) => [e, e.weight]));
    const traceId = newTraceId();
    const start = msToNs(DATA_START_MS) + BigInt(Math.floor(rng.rand() * DATA_LEN_MS * 1e6));
    let durNs = durFor(ep);
    // A checkout request that calls catalog: CLIENT child -> catalog SERVER span (an entry span with a parent).
    let nested = null;
    if (ep.service === 'checkout' && rng.chance(0.3)) {
      const offset = rng.range(100_000, 2_000_000);
      const catDur = durFor(CATALOG_PRODUCTS);
      durNs = Math.max(durNs, offset + catDur + 3_000_000);
      nested = { offset, catDur };
    }
    const root = entrySpan(ep, traceId, '', start, durNs);
    roots.push(root);
    if (nested) {
      const client = makeSpan({
        traceId, parentSpanId: root.spanId, service: 'checkout', name: 'GET catalog /api/products', kind: 3,
        start: start + BigInt(nested.offset), durNs: nested.catDur + 2_000_000,
        attributes: { 'http.request.method': 'GET', 'server.address': 'catalog' },
      });
      entrySpan(CATALOG_PRODUCTS, traceId, client.spanId, client.start + 500_000n, nested.catDur);
    }
    if (ep.long) {
      // Long traces: children spread over several seconds (late spans in old traces).
      const n = rng.range(3, 6);
      for (let k = 0; k < n; k++) {
        const cStart = start + BigInt(Math.floor((durNs * k) / n));
        const cDur = Math.max(1000, Math.floor((durNs / n) * 0.8));
        const st = rng.chance(0.1) ? { statusCode: 2, statusMessage: 'batch failed' } : { statusCode: 0, statusMessage: '' };
        makeSpan({
          traceId, parentSpanId: root.spanId, service: ep.service, name: 'reconcile batch', kind: 1, start: cStart, durNs: cDur,
          ...st, attributes: { 'batch.id': k, 'customer.tier': 'enterprise' },
          events: st.statusCode === 2 && rng.chance(0.5) ? exceptionEvents('billing-worker', cStart, cDur) : [],
        });
      }
    } else {
      const n = rng.int(4);
      for (let k = 0; k < n; k++) {
        const offset = Math.floor(rng.rand() * durNs * 0.5);
        const cDur = Math.max(1000, Math.floor(rng.rand() * (durNs - offset) * 0.9));
        const kind = rng.pick([1, 3]);
        const attrs = {};
        let name;
        if (kind === 3) {
          name = rng.pick(['SELECT orders', 'redis GET', 'GET /internal/lookup']);
          if (name === 'SELECT orders') attrs['db.system'] = 'postgresql';
          else if (name === 'redis GET') attrs['db.system'] = 'redis';
          else attrs['http.route'] = '/internal/lookup';  // a route on a non-entry span: never an endpoint
        } else {
          name = rng.pick(['render', 'validate', 'GET']);   // 'GET' like the cart entry spans, but INTERNAL
        }
        if (rng.chance(0.3)) attrs['customer.tier'] = 'enterprise';
        const st = rng.chance(0.05) ? { statusCode: 2, statusMessage: 'child failed' } : { statusCode: 0, statusMessage: '' };
        let events = [];
        if (st.statusCode === 2 && kind === 3 && ep.service === 'checkout') {
          events = [{ time: start + BigInt(offset) + 10n, name: 'exception', attributes: { 'exception.type': 'ConnectionError', 'exception.message': 'connection reset by peer' } }];
        }
        makeSpan({
          traceId, parentSpanId: root.spanId, service: ep.service, name, kind,
          start: start + BigInt(offset), durNs: cDur, ...st, attributes: attrs, events,
        });
      }
    }
  }

  // ---- logs
  const logs = [];
  const addLog = (f) => {
    const sev = f.sev ?? rng.weighted(SEVERITIES);
    const nWords = rng.range(3, 6);
    const words = [];
    for (let k = 0; k < nWords; k++) words.push(rng.pick(WORDS));
    const attributes = { seq: logs.length, 'log.source': rng.pick(['app', 'audit', 'gc']), 'user.id': `u${rng.int(25)}` };
    if (rng.chance(0.2)) attributes.attempt = rng.range(1, 3);
    logs.push({
      seq: logs.length, time: f.time, service: f.service, severityNumber: sev[0], severityText: sev[1],
      body: words.join(' '), attributes, traceId: f.traceId ?? '', spanId: f.spanId ?? '',
    });
  };
  for (let i = 0; i < 2400; i++) {
    const tie = i % 8 === 7;  // same timestamp as the previous record: exercises the cursor's tie-break
    const time = tie ? logs[logs.length - 1].time : msToNs(DATA_START_MS) + BigInt(Math.floor(rng.rand() * DATA_LEN_MS * 1e6));
    addLog({ time, service: rng.pick(SERVICES) });
  }
  for (const root of roots) {
    if (!rng.chance(0.2)) continue;
    const n = rng.range(1, 2);
    for (let k = 0; k < n; k++) {
      const time = root.start + BigInt(Math.floor(rng.rand() * root.durNs));
      addLog({ time, service: root.service, traceId: root.traceId, spanId: root.spanId,
        sev: root.statusCode === 2 && k === 0 ? [17, 'ERROR'] : undefined });
    }
  }

  // Non-ASCII bodies: "case-insensitive" must hold beyond ASCII too.
  for (const [k, body] of ['Zahlung: ÄRGER über die Straße', 'ärger im Lager', 'Ärger ok'].entries()) {
    logs.push({
      seq: logs.length, time: msToNs(DATA_START_MS + 100_000 * (k + 1)) + 123n, service: 'checkout', severityNumber: 9,
      severityText: 'INFO', body, attributes: { seq: logs.length, 'log.source': 'app', 'user.id': 'u1' }, traceId: '', spanId: '',
    });
  }

  // Log-based exception events (exception.* attributes on a record, with an
  // event name): their messages carry ids, so they group only by the
  // normalised message (docs/API.md, Exceptions). Half are in a trace.
  for (let k = 0; k < 6; k++) {
    const root = roots[k * 5];
    const inTrace = k % 2 === 0;
    const card = (0x1a2b3c4d5e6fn + BigInt(k * 977)).toString(16);
    logs.push({
      seq: logs.length,
      time: inTrace ? root.start + BigInt(k) : msToNs(DATA_START_MS + 200_000 + 7_000 * k) + 9n,
      service: 'checkout', severityNumber: 17, severityText: 'ERROR', body: 'payment declined', eventName: 'payment.declined',
      attributes: { seq: logs.length, 'log.source': 'app', 'user.id': 'u2', 'exception.type': 'PaymentDeclined',
        'exception.message': `payment ${4000 + k * 13} declined for card ${card}` },
      traceId: inTrace ? root.traceId : '', spanId: inTrace ? root.spanId : '',
    });
  }

  // ---- metrics (each series: {name, type, temporality, monotonic, service, labels, unit, description, points})
  const series = [];
  const t = (offsetMs) => msToNs(METRIC_T0_MS + offsetMs);
  const gauge = { name: 'queue.depth', type: 'gauge', unit: '{items}', description: 'Items waiting in a queue' };
  for (const [service, queue, asInt, count] of [['billing-worker', 'invoices', false, 84], ['billing-worker', 'emails', true, 84], ['checkout', 'invoices', false, 40]]) {
    const points = [];
    for (let k = 0; k < count; k++) {
      const value = asInt ? rng.int(50) : Math.round(rng.rand() * 10000) / 100;
      points.push({ time: t(3_000 + 20_000 * k), value, asInt, attributes: { queue } });
    }
    series.push({ ...gauge, temporality: 0, monotonic: false, service, labels: { queue }, points });
  }
  const counter = { name: 'http.server.requests', type: 'sum', unit: '{request}', description: 'Requests served' };
  {
    // 12.5/s, a point every 15 s: 187.5 per point.
    const points = [];
    for (let k = 0; k < 112; k++) points.push({ time: t(7_000 + 15_000 * k), start: t(-8_000), value: 187.5 * (k + 1), attributes: { route: '/api/checkout' } });
    series.push({ ...counter, temporality: 2, monotonic: true, service: 'checkout', labels: { route: '/api/checkout' }, points, slope: 12.5 });
    // 4/s as integers, reset to zero at point 56 (the first point of a minute bucket).
    const points2 = [];
    for (let k = 0; k < 112; k++) {
      const v = k < 56 ? 60 * (k + 1) : 60 * (k - 56 + 1);
      points2.push({ time: t(7_000 + 15_000 * k), start: k < 56 ? t(-8_000) : t(7_000 + 15_000 * 55), value: v, asInt: true, attributes: { route: '/api/cart/{id}' } });
    }
    series.push({ ...counter, temporality: 2, monotonic: true, service: 'checkout', labels: { route: '/api/cart/{id}' }, points: points2, slope: 4 });
  }
  {
    const points = [];
    for (let k = 0; k < 56; k++) points.push({ time: t(12_000 + 30_000 * k), start: t(12_000 + 30_000 * (k - 1)), value: rng.range(1, 20), asInt: true, attributes: {} });
    series.push({ name: 'jobs.processed', type: 'sum', unit: '{job}', description: 'Jobs processed', temporality: 1, monotonic: true, service: 'billing-worker', labels: {}, points });
  }
  const HB = [5, 10, 25, 50, 100, 250, 500, 1000];
  for (const [route, median] of [['/api/checkout', 140], ['/api/cart/{id}', 18]]) {
    const points = [];
    for (let k = 0; k < 56; k++) {
      const n = rng.range(5, 40);
      const counts = new Array(HB.length + 1).fill(0);
      let sum = 0; let min = Infinity; let max = -Infinity;
      for (let j = 0; j < n; j++) {
        const v = median * Math.exp(0.9 * rng.normal());
        sum += v; min = Math.min(min, v); max = Math.max(max, v);
        let b = HB.findIndex((x) => v <= x);
        if (b < 0) b = HB.length;
        counts[b]++;
      }
      points.push({ time: t(11_000 + 30_000 * k), start: t(11_000 + 30_000 * (k - 1)), count: n, sum, min, max, bucketCounts: counts, bounds: HB, attributes: { route } });
    }
    series.push({ name: 'http.server.duration', type: 'histogram', unit: 'ms', description: 'Request duration', temporality: 1, monotonic: false, service: 'checkout', labels: { route }, points });
  }
  {
    const RB = [1, 2, 5, 10, 20, 50];
    const cum = new Array(RB.length + 1).fill(0);
    const points = [];
    for (let k = 0; k < 56; k++) {
      const n = rng.range(3, 30);
      for (let j = 0; j < n; j++) {
        const v = 6 * Math.exp(0.8 * rng.normal());
        let b = RB.findIndex((x) => v <= x);
        if (b < 0) b = RB.length;
        cum[b]++;
      }
      points.push({ time: t(19_000 + 30_000 * k), start: t(-11_000), count: cum.reduce((a, b) => a + b, 0), bucketCounts: [...cum], bounds: RB, attributes: { rpc: 'GetPrice' } });
    }
    series.push({ name: 'rpc.client.duration', type: 'histogram', unit: 'ms', description: 'RPC duration', temporality: 2, monotonic: false, service: 'catalog', labels: { rpc: 'GetPrice' }, points });
  }
  {
    // Exponential histograms as the SDK records them: value v > 0 falls in
    // bucket ceil(log2(v) * 2^scale) - 1; a few exact zeros. The delta series
    // changes scale from point to point; the cumulative one keeps every value
    // and lowers its scale half-way, re-bucketing all it holds.
    const bucketsOf = (values, scale) => {
      const counts = new Map();
      let zeroCount = 0;
      for (const v of values) {
        if (v === 0) { zeroCount++; continue; }
        const i = Math.ceil(Math.log2(v) * 2 ** scale) - 1;
        counts.set(i, (counts.get(i) ?? 0) + 1);
      }
      const idx = [...counts.keys()];
      const offset = idx.length ? Math.min(...idx) : 0;
      const bucketCounts = idx.length ? Array.from({ length: Math.max(...idx) - offset + 1 }, (_, k) => counts.get(offset + k) ?? 0) : [];
      return { zeroCount, positive: { offset, bucketCounts } };
    };
    const draw = (median) => (rng.int(10) === 0 ? 0 : median * Math.exp(0.7 * rng.normal()));
    const exp = { name: 'rpc.server.latency', type: 'exponential_histogram', unit: 'ms', description: 'RPC server latency', monotonic: false, service: 'catalog' };
    const delta = [];
    for (let k = 0; k < 56; k++) {
      const values = Array.from({ length: rng.range(5, 40) }, () => draw(30));
      const scale = [3, 2, 1][k % 3];
      delta.push({ time: t(13_000 + 30_000 * k), start: t(13_000 + 30_000 * (k - 1)), count: values.length, scale, ...bucketsOf(values, scale), attributes: { method: 'Get' } });
    }
    series.push({ ...exp, temporality: 1, labels: { method: 'Get' }, points: delta });
    const all = [];
    const cumulative = [];
    for (let k = 0; k < 56; k++) {
      for (let j = rng.range(3, 30); j > 0; j--) all.push(draw(8));
      const scale = k < 28 ? 4 : 2;
      cumulative.push({ time: t(17_000 + 30_000 * k), start: t(-13_000), count: all.length, scale, ...bucketsOf(all, scale), attributes: { method: 'List' } });
    }
    series.push({ ...exp, temporality: 2, labels: { method: 'List' }, points: cumulative });
  }

  return { spans, roots, logs, series };
}

const DATA = generateDataset(SEED);
const SPANS_BY_TRACE = new Map();
for (const s of DATA.spans) {
  if (!SPANS_BY_TRACE.has(s.traceId)) SPANS_BY_TRACE.set(s.traceId, []);
  SPANS_BY_TRACE.get(s.traceId).push(s);
}

// ---------------------------------------------------------- expectations --

const endpointOf = (s) => s.attributes['http.route'] || s.name;
const isEntry = (s) => s.kind === 2 || s.kind === 5 || s.parentSpanId === '';
const inRange = (ns, r) => ns >= msToNs(r.from) && ns < msToNs(r.to);
const firstException = (s) => s.events.find((e) => e.name === 'exception');

//! numpy's default percentile (linear interpolation between closest ranks).
function percentile(sorted, q) {
  if (sorted.length === 0) return null;
  const pos = q * (sorted.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, sorted.length - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

function spanStats(spans) {
  const durs = spans.map((s) => s.durNs).sort((a, b) => a - b);
  const errors = spans.filter((s) => s.statusCode === 2).length;
  return {
    count: spans.length, errors, error_rate: spans.length ? errors / spans.length : 0,
    p50_ms: percentile(durs, 0.5) / 1e6, p95_ms: percentile(durs, 0.95) / 1e6, p99_ms: percentile(durs, 0.99) / 1e6,
  };
}

function groupBy(items, keyFn) {
  const m = new Map();
  for (const it of items) {
    const k = keyFn(it);
    if (!m.has(k)) m.set(k, []);
    m.get(k).push(it);
  }
  return m;
}

function expectedServices(r) {
  const entries = DATA.spans.filter((s) => isEntry(s) && inRange(s.start, r));
  const out = [];
  for (const [service, spans] of groupBy(entries, (s) => s.service)) {
    const st = spanStats(spans);
    out.push({ service, requests: st.count, errors: st.errors, error_rate: st.error_rate,
      rate_per_s: st.count / ((r.to - r.from) / 1000), p50_ms: st.p50_ms, p95_ms: st.p95_ms, p99_ms: st.p99_ms });
  }
  out.sort((a, b) => b.requests - a.requests);
  return out;
}

function endpointGroups(r, service) {
  const entries = DATA.spans.filter((s) => isEntry(s) && inRange(s.start, r) && (!service || s.service === service));
  const out = [];
  for (const [, spans] of groupBy(entries, (s) => `${s.service}\u0000${endpointOf(s)}`)) {
    out.push({ service: spans[0].service, endpoint: endpointOf(spans[0]), ...spanStats(spans), spans });
  }
  return out;
}

const strCmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

function expectedEndpoints(r, { service, sort = 'count', order } = {}) {
  order ??= sort === 'endpoint' ? 'asc' : 'desc';
  const key = { count: 'count', error_rate: 'error_rate', p50: 'p50_ms', p95: 'p95_ms', p99: 'p99_ms' }[sort];
  const groups = endpointGroups(r, service);
  const dir = order === 'asc' ? 1 : -1;
  groups.sort((a, b) => {
    if (sort === 'endpoint') return dir * (strCmp(a.endpoint, b.endpoint) || strCmp(a.service, b.service));
    return dir * (a[key] - b[key]) || strCmp(a.service, b.service) || strCmp(a.endpoint, b.endpoint);
  });
  return groups.map(({ spans, ...g }) => g);
}

// Series answer on a grid of multiples of the step: the range is widened to
// whole buckets (from floored, to ceiled) before anything is read (docs/API.md).
const alignToStep = (r, step) => ({ from: Math.floor(r.from / step) * step, to: Math.ceil(r.to / step) * step });
function bucketsFor(r, step) {
  const n = Math.ceil((r.to - r.from) / step);
  return Array.from({ length: n }, (_, i) => r.from + i * step);
}
const bucketOf = (ns, r, step) => Number((ns - msToNs(r.from)) / msToNs(step));

function expectedEndpointSeries(asked, { service, metric = 'p95', top = 10, step }) {
  const r = alignToStep(asked, step);
  const groups = endpointGroups(r, service);
  groups.sort((a, b) => b.count - a.count || strCmp(a.service, b.service) || strCmp(a.endpoint, b.endpoint));
  const named = groups.slice(0, top);
  const rest = groups.slice(top);
  const n = Math.ceil((r.to - r.from) / step);
  const seriesOf = (name, spans) => {
    const byBucket = groupBy(spans, (s) => bucketOf(s.start, r, step));
    const values = [];
    for (let b = 0; b < n; b++) {
      const ss = byBucket.get(b) ?? [];
      if (metric === 'count') values.push(ss.length);
      else if (ss.length === 0) values.push(null);
      else values.push(spanStats(ss)[`${metric}_ms`]);
    }
    return { name, values };
  };
  const series = named.map((g) => seriesOf(`${g.service} ${g.endpoint}`, g.spans));
  if (rest.length) series.push(seriesOf('other', rest.flatMap((g) => g.spans)));
  return { step_ms: step, buckets: bucketsFor(r, step), series };
}

function traceSummary(traceId) {
  const spans = SPANS_BY_TRACE.get(traceId);
  let first = spans[0];
  let end = spans[0].end;
  for (const s of spans) {
    if (s.start < first.start) first = s;
    if (s.end > end) end = s.end;
  }
  return {
    trace_id: traceId, service: first.service, name: first.name, start_ms: Number(first.start) / 1e6,
    duration_ms: Number(end - first.start) / 1e6, span_count: spans.length, error: spans.some((s) => s.statusCode === 2),
    startNs: first.start,
  };
}

const attrText = (v) => (v === undefined ? undefined : String(v));

// An `attr` condition as docs/API.md ("Attribute filters") defines it: the
// first =, !=, > or < is the operator, a bare key means "has the key";
// != needs the key, > and < a number.
function attrCondition(a) {
  const m = /=|!=|>|</.exec(a);
  if (!m) return [a, (v) => v !== undefined && v !== null];
  const arg = a.slice(m.index + m[0].length);
  const scalar = (v) => v !== undefined && v !== null && typeof v !== 'object';
  const pred = {
    '=': (v) => scalar(v) && attrText(v) === arg,
    '!=': (v) => scalar(v) && attrText(v) !== arg,
    '>': (v) => typeof v === 'number' && v > Number(arg),
    '<': (v) => typeof v === 'number' && v < Number(arg),
  }[m[0]];
  return [a.slice(0, m.index), pred];
}

function expectedTraces(r, f) {
  const attrs = [].concat(f.attr ?? []).map(attrCondition);
  const code = { error: 2, ok: 1, unset: 0 }[f.status];
  const match = (s) => inRange(s.start, r)
    && (!f.service || s.service === f.service)
    && (!f.endpoint || endpointOf(s) === f.endpoint)
    && (f.status === undefined || s.statusCode === code)
    && (f.min_duration_ms === undefined || s.durNs >= f.min_duration_ms * 1e6)
    && (f.max_duration_ms === undefined || s.durNs <= f.max_duration_ms * 1e6)
    && attrs.every(([k, pred]) => pred(s.attributes[k]));
  const ids = new Set(DATA.spans.filter(match).map((s) => s.traceId));
  // Sorted by the trace's spans in the range: the earliest start, or the
  // latest end minus it; ties by trace id (32 hex digits sort as unsigned).
  const inRangeSpans = new Map();
  for (const s of DATA.spans) {
    if (!ids.has(s.traceId) || !inRange(s.start, r)) continue;
    const t = inRangeSpans.get(s.traceId) ?? { start: s.start, end: s.end };
    if (s.start < t.start) t.start = s.start;
    if (s.end > t.end) t.end = s.end;
    inRangeSpans.set(s.traceId, t);
  }
  const key = (id) => {
    const t = inRangeSpans.get(id);
    return f.sort === 'duration' ? t.end - t.start : t.start;
  };
  const desc = f.order !== 'asc';
  const all = [...ids].sort((a, b) => {
    const ka = key(a), kb = key(b);
    if (ka !== kb) return (ka < kb) === desc ? 1 : -1;
    return a < b ? -1 : a > b ? 1 : 0;
  }).map(traceSummary);
  const offset = f.offset ?? 0;
  return { total: all.length, traces: all.slice(offset, offset + (f.limit ?? 50)) };
}

// The exception group's message, written again from the rules in docs/API.md
// ("Exceptions"), independently of the server's C++.
function normalizeMessage(m) {
  const alnum = (c) => c !== undefined && /[A-Za-z0-9]/.test(c);
  const digit = (c) => c !== undefined && /[0-9]/.test(c);
  let out = '';
  let i = 0;
  while (i < m.length) {
    if (!alnum(m[i])) {
      out += m[i++];
      continue;
    }
    if (/^[0-9a-fA-F]{8}(-[0-9a-fA-F]{4}){3}-[0-9a-fA-F]{12}(?![A-Za-z0-9])/.test(m.slice(i))) {
      out += '<uuid>';
      i += 36;
      continue;
    }
    let end = i;
    while (alnum(m[end])) end++;
    const tok = m.slice(i, end);
    if (/^0[xX][0-9a-fA-F]+$/.test(tok) || (tok.length >= 8 && /^[0-9a-fA-F]+$/.test(tok) && /[0-9]/.test(tok) && /[a-fA-F]/.test(tok))) {
      out += '<hex>';
      i = end;
      continue;
    }
    const start = i;
    while (i < end) {
      if (!digit(m[i])) {
        out += m[i++];
        continue;
      }
      const leading = i === start;
      while (i < end && digit(m[i])) i++;
      if (leading && i === end && m[i] === '.' && digit(m[i + 1])) {
        i++;
        while (digit(m[i])) i++;
        end = i;
      }
      out += '<n>';
    }
  }
  return out;
}

//! Every exception occurrence: a span's first exception event, or a log
//! record with exception.* attributes.
function exceptionOccurrences() {
  const out = [];
  for (const s of DATA.spans) {
    const e = firstException(s);
    if (!e) continue;
    out.push({ type: e.attributes['exception.type'] ?? '', message: e.attributes['exception.message'] ?? '', time: s.start,
      service: s.service, traceId: s.traceId, spanId: s.spanId, name: s.name, durNs: s.durNs, source: 'span' });
  }
  for (const l of DATA.logs) {
    const type = l.attributes['exception.type'] ?? '';
    const message = l.attributes['exception.message'] ?? '';
    if (!type && !message) continue;
    out.push({ type, message, time: l.time, service: l.service, traceId: l.traceId, spanId: l.spanId,
      name: l.eventName ?? '', durNs: 0, source: 'log' });
  }
  return out.filter((o) => o.type || o.message);
}

function expectedException(r, service) {
  const out = new Map();
  for (const o of exceptionOccurrences()) {
    if (!inRange(o.time, r) || (service && o.service !== service)) continue;
    const message = normalizeMessage(o.message);
    const k = JSON.stringify([o.type, message, o.service]);
    if (!out.has(k)) out.set(k, { type: o.type, message, service: o.service, count: 0, logCount: 0, first: o.time, last: o.time, traces: new Set() });
    const g = out.get(k);
    g.count++;
    if (o.source === 'log') g.logCount++;
    if (o.time < g.first) g.first = o.time;
    if (o.time > g.last) g.last = o.time;
    if (o.traceId) g.traces.add(o.traceId);
  }
  return [...out.values()].sort((a, b) => b.count - a.count);
}

// SQLite's LIKE folds only ASCII letters (docs/API.md); DuckDB's ILIKE folds Unicode.
let currentEngine = 'duckdb';
const asciiLower = (s) => s.replace(/[A-Z]/g, (c) => c.toLowerCase());
const foldCase = (s) => (currentEngine === 'sqlite' ? asciiLower(s) : s.toLowerCase());

function expectedLogs(r, f = {}) {
  const attrs = [].concat(f.attr ?? []).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]);
  const q = f.q === undefined ? undefined : foldCase(f.q);
  const tid = f.trace_id?.toLowerCase();
  return DATA.logs.filter((l) => inRange(l.time, r)
    && (!f.severity_min || l.severityNumber >= f.severity_min)
    && (!f.service || l.service === f.service)
    && (!q || foldCase(l.body).includes(q))
    && (!tid || l.traceId === tid)
    && attrs.every(([k, v]) => attrText(l.attributes[k]) === v))
    .sort((a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : 0));
}

function logJson(l) {
  return {
    time_ns: String(l.time), time_ms: Number(l.time) / 1e6, severity_number: l.severityNumber, severity_text: l.severityText,
    body: l.body, service: l.service, trace_id: l.traceId, span_id: l.spanId, attributes: l.attributes,
    event_name: l.eventName ?? '',
  };
}

function expectedVolume(asked, f, step) {
  const r = alignToStep(asked, step);
  const n = Math.ceil((r.to - r.from) / step);
  const byLevel = new Map();
  for (const l of expectedLogs(r, f)) {
    const lvl = levelOf(l.severityNumber);
    if (!byLevel.has(lvl)) byLevel.set(lvl, new Array(n).fill(0));
    byLevel.get(lvl)[bucketOf(l.time, r, step)]++;
  }
  return { step_ms: step, buckets: bucketsFor(r, step),
    series: LEVELS.filter((l) => byLevel.has(l)).map((severity) => ({ severity, values: byLevel.get(severity) })) };
}

// Quantile from explicit-bucket counts, as the server's HistogramQuantile:
// linear inside the bucket holding the rank; the first bucket starts at
// min(0, first bound); the overflow bucket answers the last bound.
function histogramQuantile(bounds, counts, q) {
  const total = counts.reduce((a, b) => a + b, 0);
  if (total <= 0) return null;
  const rank = q * total;
  let cum = 0;
  for (let i = 0; i < counts.length; i++) {
    if (cum + counts[i] >= rank && counts[i] > 0) {
      if (i === bounds.length) return bounds[bounds.length - 1];
      const lo = i === 0 ? Math.min(0, bounds[0]) : bounds[i - 1];
      const hi = bounds[i];
      return lo + ((hi - lo) * (rank - cum)) / counts[i];
    }
    cum += counts[i];
  }
  return bounds[bounds.length - 1];
}

const labelOf = (s, k) => (k === 'service.name' ? s.service : (s.labels[k] ?? ''));

// Exponential histograms per bucket: each point as a map from bucket index to
// count at the smallest scale any point of the group's buckets uses (index i
// at scale s is index floor(i / 2^(s - t)) at scale t); delta points add up,
// a cumulative point is its difference with the series' previous bucket's
// newest (a drop anywhere is a reset). Then the rank's bucket, interpolated.
function expectedExpQuantiles(seriesList, r, step, q) {
  const perBucket = new Map();  // bucket -> [{series, point}]
  for (const s of seriesList) {
    for (const p of s.points) {
      if (!inRange(p.time, r)) continue;
      const b = bucketOf(p.time, r, step);
      if (!perBucket.has(b)) perBucket.set(b, []);
      perBucket.get(b).push({ s, p });
    }
  }
  const asMap = (p, scale) => {
    const m = new Map([['zero', p.zeroCount]]);
    p.positive.bucketCounts.forEach((c, k) => {
      const i = Math.floor((p.positive.offset + k) / 2 ** (p.scale - scale));
      m.set(i, (m.get(i) ?? 0) + c);
    });
    return m;
  };
  // The scale a bucket's points merge at: the smallest of them and of each
  // cumulative series' previous newest point.
  const out = new Map();
  const prevOf = new Map();  // series -> newest point of its previous bucket
  const buckets = [...perBucket.keys()].sort((x, y) => x - y);
  for (const b of buckets) {
    const entries = perBucket.get(b);
    const dists = [];
    for (const s of seriesList) {
      const pts = entries.filter((e) => e.s === s).map((e) => e.p).sort((x, y) => (x.time < y.time ? -1 : 1));
      if (!pts.length) continue;
      if (s.temporality === 1) {
        dists.push({ scale: Math.min(...pts.map((p) => p.scale)), pts, sign: [] });
      } else {
        const last = pts[pts.length - 1];
        const prev = prevOf.get(s);
        prevOf.set(s, last);
        dists.push({ scale: prev ? Math.min(last.scale, prev.scale) : last.scale, pts: [last], prev });
      }
    }
    const scale = Math.min(...dists.map((d) => d.scale));
    const total = new Map();
    for (const d of dists) {
      const m = new Map();
      for (const p of d.pts) for (const [k, c] of asMap(p, d.scale)) m.set(k, (m.get(k) ?? 0) + c);
      if (d.prev) {
        const diff = new Map(m);
        for (const [k, c] of asMap(d.prev, d.scale)) diff.set(k, (diff.get(k) ?? 0) - c);
        if (![...diff.values()].some((c) => c < 0)) for (const [k, c] of diff) m.set(k, c);
      }
      // Down to the group's scale.
      for (const [k, c] of m) {
        const key = k === 'zero' ? 'zero' : Math.floor(k / 2 ** (d.scale - scale));
        total.set(key, (total.get(key) ?? 0) + c);
      }
    }
    const n = [...total.values()].reduce((a, c) => a + c, 0);
    if (n <= 0) continue;
    const rank = q * n;
    let cum = total.get('zero') ?? 0;
    if (cum > 0 && cum >= rank) { out.set(b, 0); continue; }
    const base = 2 ** (2 ** -scale);
    for (const k of [...total.keys()].filter((x) => x !== 'zero').sort((x, y) => x - y)) {
      const c = total.get(k);
      if (c > 0 && cum + c >= rank) {
        const lo = base ** k;
        const hi = base ** (k + 1);
        out.set(b, lo + ((hi - lo) * (rank - cum)) / c);
        break;
      }
      cum += c;
    }
  }
  return out;
}

function expectedMetricSeries(asked, { name, agg = 'avg', group_by, filter, step }) {
  const r = alignToStep(asked, step);
  const groupKeys = group_by ? group_by.split(',').filter(Boolean) : [];
  const filters = [].concat(filter ?? []).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]);
  const quantile = agg.startsWith('p');
  const q = { p50: 0.5, p95: 0.95, p99: 0.99 }[agg];
  const n = Math.ceil((r.to - r.from) / step);
  const chosen = DATA.series.filter((s) => s.name === name
    && filters.every(([k, v]) => labelOf(s, k) === v)
    && (quantile ? s.type.endsWith('histogram') : agg === 'rate' ? (s.type === 'sum' && s.monotonic) : !s.type.endsWith('histogram')));
  const groups = new Map();
  for (const s of chosen) {
    const key = JSON.stringify(groupKeys.map((k) => labelOf(s, k)));
    if (!groups.has(key)) groups.set(key, { labels: Object.fromEntries(groupKeys.map((k) => [k, labelOf(s, k)])), series: [] });
    groups.get(key).series.push(s);
  }
  const out = [];
  for (const g of groups.values()) {
    const values = new Array(n).fill(null);
    if (agg === 'last') {
      // The newest point of each series in each bucket, added up per group.
      for (const s of g.series) {
        const newest = new Map();  // bucket -> point
        for (const p of s.points) {
          if (!inRange(p.time, r)) continue;
          const b = bucketOf(p.time, r, step);
          if (!newest.has(b) || p.time > newest.get(b).time) newest.set(b, p);
        }
        for (const [b, p] of newest) values[b] = (values[b] ?? 0) + p.value;
      }
    } else if (!quantile && agg !== 'rate') {
      const acc = Array.from({ length: n }, () => []);
      for (const s of g.series) for (const p of s.points) if (inRange(p.time, r)) acc[bucketOf(p.time, r, step)].push(p.value);
      acc.forEach((vs, b) => {
        if (!vs.length) return;
        const sum = vs.reduce((a, x) => a + x, 0);
        values[b] = agg === 'sum' ? sum : agg === 'avg' ? sum / vs.length : agg === 'min' ? Math.min(...vs) : Math.max(...vs);
      });
    } else if (agg === 'rate') {
      for (const s of g.series) {
        const perBucket = new Map();  // bucket -> {last, lastTime, sum}
        for (const p of s.points) {
          if (!inRange(p.time, r)) continue;
          const b = bucketOf(p.time, r, step);
          const e = perBucket.get(b) ?? { last: null, lastTime: -1n, sum: 0 };
          if (p.time > e.lastTime) { e.last = p.value; e.lastTime = p.time; }
          e.sum += p.value;
          perBucket.set(b, e);
        }
        let prev = null;
        let prevBucket = 0;
        for (const b of [...perBucket.keys()].sort((x, y) => x - y)) {
          const e = perBucket.get(b);
          let inc;
          let buckets = 1;  // an increase across empty buckets is spread over them
          if (s.temporality === 1) inc = e.sum;
          else {
            if (prev === null) { prev = e.last; prevBucket = b; continue; }  // no baseline for the first bucket
            inc = e.last >= prev ? e.last - prev : e.last;    // a drop is a counter reset
            buckets = Math.max(1, b - prevBucket);
            prev = e.last;
            prevBucket = b;
          }
          values[b] = (values[b] ?? 0) + inc / ((step / 1000) * buckets);
        }
      }
    } else {
      const merged = new Map();  // bucket -> {bounds, counts}
      for (const s of g.series.filter((x) => x.type === 'histogram')) {
        const perBucket = new Map();
        for (const p of s.points) {
          if (!inRange(p.time, r)) continue;
          const b = bucketOf(p.time, r, step);
          if (!perBucket.has(b)) perBucket.set(b, []);
          perBucket.get(b).push(p);
        }
        let prevLast = null;
        for (const b of [...perBucket.keys()].sort((x, y) => x - y)) {
          const pts = perBucket.get(b).sort((x, y) => (x.time < y.time ? -1 : 1));
          let dist;
          if (s.temporality === 1) {
            dist = pts[0].bucketCounts.map((_, i) => pts.reduce((a, p) => a + p.bucketCounts[i], 0));
          } else {
            const last = pts[pts.length - 1].bucketCounts;
            const reset = prevLast && last.some((c, i) => c < prevLast[i]);
            dist = prevLast && !reset ? last.map((c, i) => c - prevLast[i]) : [...last];
            prevLast = last;
          }
          const m = merged.get(b);
          if (!m) merged.set(b, { bounds: pts[0].bounds, counts: dist });
          else dist.forEach((c, i) => { m.counts[i] += c; });
        }
      }
      for (const [b, m] of merged) values[b] = histogramQuantile(m.bounds, m.counts, q);
      for (const [b, v] of expectedExpQuantiles(g.series.filter((s) => s.type === 'exponential_histogram'), r, step, q)) values[b] = v;
    }
    out.push({ labels: g.labels, values });
  }
  return { name, agg, step_ms: step, buckets: bucketsFor(r, step), series: out };
}

// -------------------------------------------------------------- checking --

function close(actual, expected, rel, what) {
  if (expected === null || expected === undefined) {
    assert.equal(actual, null, `${what}: expected null, got ${actual}`);
    return;
  }
  assert.equal(typeof actual, 'number', `${what}: expected a number (${expected}), got ${JSON.stringify(actual)}`);
  const tol = Math.max(Math.abs(expected) * rel, 1e-12);
  assert.ok(Math.abs(actual - expected) <= tol, `${what}: expected ${expected}, got ${actual} (diff ${actual - expected})`);
}

const closeMs = (actual, expected, what) => {
  assert.equal(typeof actual, 'number', `${what}: not a number: ${JSON.stringify(actual)}`);
  assert.ok(Math.abs(actual - expected) <= 1e-3, `${what}: expected ${expected}, got ${actual}`);
};

//! Compares an object field by field: numbers within `rel`, everything else exactly.
function matchObject(actual, expected, rel, what) {
  assert.ok(actual && typeof actual === 'object', `${what}: not an object: ${JSON.stringify(actual)}`);
  for (const [k, v] of Object.entries(expected)) {
    assert.ok(k in actual, `${what}: field '${k}' missing in ${JSON.stringify(actual)}`);
    if (typeof v === 'number') close(actual[k], v, rel, `${what}.${k}`);
    else assert.deepEqual(actual[k], v, `${what}.${k}`);
  }
}

function checkValues(actual, expected, rel, what) {
  assert.equal(actual.length, expected.length, `${what}: ${actual.length} values, expected ${expected.length}`);
  expected.forEach((v, i) => close(actual[i], v, rel, `${what}[${i}]`));
}

function assertError(res, status, what) {
  assert.equal(res.status, status, `${what}: expected ${status}, got ${res.status}: ${res.text.slice(0, 300)}`);
  assert.ok(res.json && typeof res.json.error === 'string' && res.json.error.length > 0,
    `${what}: body should be {"error": "..."}, got ${res.text.slice(0, 300)}`);
}

//! Runs every case and fails once at the end with all the failures, so that one
//! wrong answer does not hide the others.
async function eachCase(cases, fn) {
  const failures = [];
  for (const c of cases) {
    try {
      await fn(c);
    } catch (err) {
      failures.push(err.message);
    }
  }
  if (failures.length) assert.fail(`${failures.length} of ${cases.length} cases failed:\n\n${failures.join('\n\n')}`);
}

const pretty = (p) => new URLSearchParams(Object.entries(p).flatMap(([k, v]) => [].concat(v).map((x) => [k, String(x)]))).toString();

// -------------------------------------------------------------- ingesting --

async function ingest(server) {
  // Spans: protobuf, ~600 spans per request, each request carrying all three services.
  const chunk = 600;
  for (let i = 0; i < DATA.spans.length; i += chunk) {
    const part = DATA.spans.slice(i, i + chunk);
    const rs = [...groupBy(part, (s) => s.service)].map(([service, spans]) => ({ resource: RESOURCE(service), scope: SCOPE(service), spans }));
    await postOtlp(server, 'traces', encodeTracesProto(rs));
  }
  // Logs: OTLP/JSON, 500 per request.
  for (let i = 0; i < DATA.logs.length; i += 500) {
    const part = DATA.logs.slice(i, i + 500);
    const rl = [...groupBy(part, (l) => l.service)].map(([service, logs]) => ({ resource: RESOURCE(service), scope: SCOPE(service), logs }));
    await postOtlp(server, 'logs', encodeLogsJson(rl), { json: true });
  }
  // Metrics: protobuf, one request per service, in two halves (series repeat across requests).
  for (const half of [0, 1]) {
    const rm = SERVICES.map((service) => ({
      resource: RESOURCE(service), scope: SCOPE(service),
      metrics: DATA.series.filter((s) => s.service === service).map((s) => {
        const pts = s.points.filter((_, i) => (i < s.points.length / 2) === (half === 0));
        const m = { name: s.name, description: s.description, unit: s.unit };
        if (s.type === 'gauge') m.gauge = { points: pts };
        else if (s.type === 'sum') m.sum = { points: pts, temporality: s.temporality, monotonic: s.monotonic };
        else if (s.type === 'exponential_histogram') m.exponentialHistogram = { points: pts, temporality: s.temporality };
        else m.histogram = { points: pts, temporality: s.temporality };
        return m;
      }),
    })).filter((x) => x.metrics.length);
    await postOtlp(server, 'metrics', encodeMetricsProto(rm));
  }
}

// The fixtures must not produce ties where the contract leaves the order open.
function checkFixture() {
  const svc = expectedServices(RANGE).map((s) => s.requests);
  assert.equal(new Set(svc).size, svc.length, 'seed gives two services the same request count');
  const groups = endpointGroups(RANGE);
  assert.equal(groups.length, 6, 'six endpoints');
  for (const k of ['count', 'error_rate', 'p50_ms', 'p95_ms', 'p99_ms']) {
    assert.equal(new Set(groups.map((g) => g[k])).size, groups.length, `seed gives two endpoints the same ${k}`);
  }
  const exc = expectedException(RANGE);
  assert.ok(exc.length >= 6, `enough exception groups (${exc.length})`);
}

// ---------------------------------------------------------------- the suite --

const snapshots = new Map();  // engine -> {call: json}

for (const engine of ENGINES) {
  describe(`query API (${engine})`, { timeout: 240_000 }, () => {
    let server;
    const snap = {};
    snapshots.set(engine, snap);
    const get = (path, params = {}, opts) => apiOk(server, path, params, opts);

    before(async () => {
      checkFixture();
      currentEngine = engine;
      server = await startServer({ engine, args: ['--admin-password', PASSWORD] });
      await ingest(server);
    });
    after(async () => { await server?.cleanup(); });

    it('stored the whole dataset', async () => {
      const h = await server.deepHealth();
      assert.equal(h.rows.spans, DATA.spans.length);
      assert.equal(h.rows.logs, DATA.logs.length);
      assert.equal(h.rows.metric_points, DATA.series.reduce((a, s) => a + s.points.length, 0));
    });

    it('services: requests, errors, error_rate, rate_per_s, p50/p95/p99 over entry spans', async () => {
      for (const r of [RANGE, WIN]) {
        const got = await get('services', r);
        const exp = expectedServices(r);
        assert.deepEqual(got.services.map((s) => s.service), exp.map((s) => s.service), 'services, by requests desc');
        exp.forEach((e, i) => matchObject(got.services[i], e, 1e-6, `services[${e.service}] ${pretty(r)}`));
        if (r === RANGE) snap.services = got;
      }
      // Default range is the last hour, which holds every span.
      const dflt = await get('services');
      const exp = expectedServices(RANGE);
      assert.deepEqual(dflt.services.map((s) => [s.service, s.requests, s.errors]), exp.map((s) => [s.service, s.requests, s.errors]));
      dflt.services.forEach((s, i) => close(s.rate_per_s, exp[i].requests / 3600, 1e-3, `default range rate_per_s ${s.service}`));
    });

    it('endpoints: every field, each sort key and order', async () => {
      const sorts = ['count', 'error_rate', 'p50', 'p95', 'p99', 'endpoint'].flatMap((sort) => [[sort, 'asc'], [sort, 'desc']]);
      await eachCase(sorts, async ([sort, order]) => {
        {
          const params = { ...RANGE, sort, order };
          const got = await get('endpoints', params);
          const exp = expectedEndpoints(RANGE, { sort, order });
          assert.equal(got.total, exp.length, `total (${pretty(params)})`);
          assert.deepEqual(got.endpoints.map((e) => `${e.service} ${e.endpoint}`), exp.map((e) => `${e.service} ${e.endpoint}`),
            `order of endpoints for ${pretty(params)}`);
          exp.forEach((e, i) => matchObject(got.endpoints[i], e, 1e-6, `endpoints[${i}] ${pretty(params)}`));
          if (sort === 'p95' && order === 'desc') snap.endpoints = got;
        }
      });
      // Entry spans only: no child span name or route shows up as an endpoint.
      const all = await get('endpoints', { ...RANGE, limit: 1000 });
      for (const e of all.endpoints) {
        assert.ok(!['/internal/lookup', 'render', 'validate', 'SELECT orders', 'redis GET', 'reconcile batch',
          'GET catalog /api/products', 'GET'].includes(e.endpoint), `non-entry endpoint listed: ${e.endpoint}`);
      }
    });

    it('endpoints: limit/offset pagination, total, service filter, range', async () => {
      const exp = expectedEndpoints(RANGE, { sort: 'p95', order: 'desc' });
      const pages = [];
      for (let offset = 0; offset < 8; offset += 2) {
        const got = await get('endpoints', { ...RANGE, sort: 'p95', order: 'desc', limit: 2, offset });
        assert.equal(got.total, exp.length, `total at offset ${offset}`);
        assert.ok(got.endpoints.length <= 2);
        pages.push(...got.endpoints);
      }
      assert.deepEqual(pages.map((e) => e.endpoint), exp.map((e) => e.endpoint), 'pages concatenated = the full list');
      const past = await get('endpoints', { ...RANGE, limit: 5, offset: 100 });
      assert.equal(past.total, exp.length);
      assert.deepEqual(past.endpoints, []);
      // Default limit is 50: all six.
      assert.equal((await get('endpoints', RANGE)).endpoints.length, 6);

      for (const service of SERVICES) {
        const got = await get('endpoints', { ...RANGE, service, sort: 'count', order: 'desc' });
        const e = expectedEndpoints(RANGE, { service, sort: 'count', order: 'desc' });
        assert.equal(got.total, e.length, `total for service=${service}`);
        e.forEach((x, i) => matchObject(got.endpoints[i], x, 1e-6, `endpoints service=${service} [${i}]`));
      }
      const none = await get('endpoints', { ...RANGE, service: 'no-such-service' });
      assert.equal(none.total, 0);
      assert.deepEqual(none.endpoints, []);
      const win = await get('endpoints', { ...WIN, sort: 'count', order: 'desc' });
      const ew = expectedEndpoints(WIN, { sort: 'count', order: 'desc' });
      ew.forEach((x, i) => matchObject(win.endpoints[i], x, 1e-6, `endpoints in window [${i}]`));
    });

    it('endpoints/series: top N + other, count sums, percentiles per bucket, buckets and step', async () => {
      const cases = [
        { metric: 'count', top: 3, step_ms: 60_000 },
        { metric: 'p95', top: 3, step_ms: 120_000 },
        { metric: 'p50', top: 10, step_ms: 420_000 },  // 40 min / 7 min: 6 buckets, the last one partial
        { metric: 'p99', top: 1, service: 'catalog', step_ms: 300_000 },
        { metric: 'count' },                             // auto step: 40 min / 60 -> 60 s
        {},                                              // metric p95, top 10 by default
      ];
      for (const c of cases) {
        const params = { ...RANGE, ...c };
        const got = await get('endpoints/series', params);
        const step = c.step_ms ?? 60_000;
        const exp = expectedEndpointSeries(RANGE, { service: c.service, metric: c.metric ?? 'p95', top: c.top ?? 10, step });
        assert.equal(got.step_ms, exp.step_ms, `step_ms (${pretty(params)})`);
        assert.deepEqual(got.buckets, exp.buckets, `buckets (${pretty(params)})`);
        assert.deepEqual(got.series.map((s) => s.name), exp.series.map((s) => s.name), `series names (${pretty(params)})`);
        exp.series.forEach((s, i) => checkValues(got.series[i].values, s.values, 1e-6, `${pretty(params)} series '${s.name}'`));
        if ((c.metric ?? 'p95') === 'count') {
          // The count series add up to the endpoint totals.
          const groups = endpointGroups(RANGE, c.service);
          const total = groups.reduce((a, g) => a + g.count, 0);
          const sum = got.series.reduce((a, s) => a + s.values.reduce((x, y) => x + y, 0), 0);
          assert.equal(sum, total, 'count series sum to the number of entry spans');
          for (const g of groups) {
            const s = got.series.find((x) => x.name === `${g.service} ${g.endpoint}`);
            if (s) assert.equal(s.values.reduce((x, y) => x + y, 0), g.count, `count series of ${s.name}`);
          }
        }
        if (c.metric === 'p95' && c.top === 3) snap.endpointSeries = got;
      }
    });

    it('traces: each filter and operator, limit, offset, newest first or by duration, summaries', async () => {
      const cases = [
        { limit: 20 },
        {},                                                   // default limit 50
        { service: 'catalog', limit: 60 },                    // matches checkout traces that call catalog too
        { endpoint: '/api/products', limit: 40 },
        { endpoint: "process 'invoice'", limit: 40 },         // endpoint by span name
        { endpoint: '/internal/lookup', limit: 25 },          // a route on a CLIENT span
        { status: 'error', limit: 100 },
        { status: 'ok', limit: 30 },
        { status: 'unset', limit: 30 },
        { min_duration_ms: 500, limit: 100 },
        { max_duration_ms: 2.5, limit: 100 },
        { min_duration_ms: 20, max_duration_ms: 40.5, limit: 100 },
        { attr: 'customer.tier=enterprise', limit: 100 },
        { attr: 'http.response.status_code=500', limit: 100 },
        { attr: ['customer.tier=pro', 'http.request.method=POST'], limit: 100 },
        { attr: 'retry=true', limit: 100 },
        { service: 'checkout', status: 'error', attr: 'customer.tier=free', limit: 100 },
        { service: 'billing-worker', endpoint: 'cron reconcile', limit: 500 },
        { endpoint: 'no such endpoint' },
        { attr: 'customer.tier!=free', limit: 100 },
        { attr: 'http.response.status_code>499', limit: 100 },
        { attr: ['http.response.status_code<500', 'customer.tier'], limit: 100 },
        { attr: 'retry', limit: 100 },
        { sort: 'duration', limit: 30 },
        { sort: 'duration', order: 'asc', limit: 30, offset: 10 },
        { sort: 'duration', service: 'checkout', limit: 20, offset: 5 },
        { limit: 25, offset: 25 },
      ];
      await eachCase(cases.flatMap((c) => [[c, RANGE], [c, WIN]]), async ([c, r]) => {
        const params = { ...r, ...c };
        const got = await get('traces', params);
        const exp = expectedTraces(r, c);
        const matching = new Map(expectedTraces(r, { ...c, limit: Infinity, offset: 0 }).traces.map((t) => [t.trace_id, t]));
        assert.ok(exp.total > 0 || c.endpoint === 'no such endpoint', `fixture has matches for ${pretty(c)}`);
        assert.equal(got.traces.length, exp.traces.length, `number of traces for ${pretty(params)} (${exp.total} match)`);
        assert.equal(got.has_more, exp.total > (c.offset ?? 0) + (c.limit ?? 50), `has_more for ${pretty(params)}`);
        got.traces.forEach((g, i) => {
          const e = matching.get(g.trace_id);
          const what = `traces ${pretty(params)} [${i}] ${g.trace_id}`;
          assert.ok(e, `${what}: no span of this trace matches the filters`);
          assert.equal(g.service, e.service, `${what}.service`);
          assert.equal(g.name, e.name, `${what}.name`);
          closeMs(g.start_ms, e.start_ms, `${what}.start_ms`);
          close(g.duration_ms, e.duration_ms, 1e-9, `${what}.duration_ms`);
          assert.equal(g.span_count, e.span_count, `${what}.span_count`);
          assert.equal(g.error, e.error, `${what}.error`);
        });
        for (let i = 1; i < got.traces.length && !c.sort; i++) {
          const [a, b] = [got.traces[i - 1], got.traces[i]];
          assert.ok(a.start_ms >= b.start_ms, `traces ${pretty(params)}: not newest first: [${i - 1}] ${a.trace_id} `
            + `starts at ${a.start_ms} (${a.service} '${a.name}', ${a.duration_ms} ms), before [${i}] ${b.trace_id} at ${b.start_ms}`);
        }
        assert.deepEqual(got.traces.map((t) => t.trace_id), exp.traces.map((t) => t.trace_id),
          `trace ids: ${exp.traces.length} of ${exp.total} matching traces, in the order asked (newest first by default), for ${pretty(params)}`);
        if (c.status === 'error' && r === RANGE) snap.traces = got;
      });
    });

    it('traces/{id}: every span, parent ids, attributes, events, links, logs; 404 and 400', async () => {
      // Traces with the most features: nested services, exceptions, links, long traces, logs.
      const pick = [];
      const withLogs = new Set(DATA.logs.filter((l) => l.traceId).map((l) => l.traceId));
      const want = [
        (sp) => sp.some((s) => s.service === 'catalog') && sp.some((s) => s.service === 'checkout'),
        (sp) => sp.some((s) => s.events.length > 1),
        (sp) => sp.some((s) => s.links.length > 0),
        (sp) => sp.some((s) => s.name === 'cron reconcile'),
        (sp) => withLogs.has(sp[0].traceId) && sp.some((s) => s.traceState),
      ];
      for (const w of want) {
        const id = [...SPANS_BY_TRACE.entries()].find(([tid, sp]) => w(sp) && !pick.includes(tid))?.[0];
        assert.ok(id, 'fixture has a trace of each kind');
        pick.push(id);
      }
      pick.push(DATA.logs.find((l) => l.traceId).traceId);
      for (const id of pick) {
        const got = await get(`traces/${id}`, {}, { exact: true });
        const spans = [...SPANS_BY_TRACE.get(id)].sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : strCmp(a.spanId, b.spanId)));
        assert.equal(got.trace_id, id);
        assert.equal(got.spans.length, spans.length, `span count of ${id}`);
        spans.forEach((s, i) => {
          const g = got.spans[i];
          const what = `trace ${id} span[${i}] ${s.spanId}`;
          assert.equal(g.span_id, s.spanId, `${what}: spans by start time`);
          assert.equal(g.parent_span_id, s.parentSpanId, `${what}.parent_span_id`);
          assert.equal(g.service, s.service, `${what}.service`);
          assert.equal(g.name, s.name, `${what}.name`);
          assert.equal(g.kind, s.kind, `${what}.kind`);
          assert.equal(g.start_time_ns, String(s.start), `${what}.start_time_ns`);
          assert.equal(g.end_time_ns, String(s.end), `${what}.end_time_ns`);
          close(g.duration_ms, s.durNs / 1e6, 1e-12, `${what}.duration_ms`);
          assert.equal(g.status_code, s.statusCode, `${what}.status_code`);
          assert.equal(g.status_message, s.statusMessage, `${what}.status_message`);
          assert.deepEqual(g.attributes, s.attributes, `${what}.attributes`);
          assert.deepEqual(g.resource_attributes, RESOURCE(s.service), `${what}.resource_attributes`);
          assert.deepEqual(g.events, s.events.map((e) => ({
            time_unix_nano: String(e.time), name: e.name, attributes: e.attributes, dropped_attributes_count: 0,
          })), `${what}.events`);
          assert.deepEqual(g.links, s.links.map((l) => ({
            trace_id: l.traceId, span_id: l.spanId, trace_state: l.traceState, attributes: l.attributes,
            dropped_attributes_count: 0, flags: 0,
          })), `${what}.links`);
          assert.equal(g.scope_name, SCOPE(s.service).name, `${what}.scope_name`);
        });
        const logs = DATA.logs.filter((l) => l.traceId === id).sort((a, b) => (a.time < b.time ? -1 : a.time > b.time ? 1 : 0));
        assert.deepEqual(got.logs.map((l) => l.attributes.seq), logs.map((l) => l.seq), `logs of trace ${id}, oldest first`);
        logs.forEach((l, i) => {
          const { time_ms: tms, ...rest } = logJson(l);
          const g = got.logs[i];
          closeMs(g.time_ms, tms, `trace ${id} log[${i}].time_ms`);
          for (const [k, v] of Object.entries(rest)) assert.deepEqual(g[k], v, `trace ${id} log[${i}].${k}`);
        });
        if (id === pick[0]) snap.traceDetail = got;
      }
      // Unknown id: 404. Malformed ids: 400.
      assertError(await api(server, `traces/${'ab'.repeat(16)}`), 404, 'unknown trace id');
      for (const bad of ['xyz', 'ab'.repeat(15), 'g'.repeat(32), `${'ab'.repeat(16)}00`]) {
        assertError(await api(server, `traces/${bad}`), 400, `malformed trace id '${bad}'`);
      }
    });

    it('exceptions: groups, counts, first/last seen, sample trace; exceptions/spans', async () => {
      for (const service of [undefined, 'checkout', 'billing-worker']) {
        const params = { ...RANGE, ...(service ? { service } : {}) };
        const got = await get('exceptions', params);
        const exp = expectedException(RANGE, service);
        assert.equal(got.exceptions.length, exp.length, `number of groups (${pretty(params)})`);
        for (let i = 1; i < got.exceptions.length; i++) {
          assert.ok(got.exceptions[i - 1].count >= got.exceptions[i].count, 'by count desc');
        }
        for (const e of exp) {
          const g = got.exceptions.find((x) => x.type === e.type && x.message === e.message && x.service === e.service);
          const what = `exception group ${e.type}/${e.message}/${e.service}`;
          assert.ok(g, `${what} missing`);
          assert.equal(g.count, e.count, `${what}.count`);
          assert.equal(g.log_count, e.logCount, `${what}.log_count`);
          closeMs(g.first_seen_ms, Number(e.first) / 1e6, `${what}.first_seen_ms`);
          closeMs(g.last_seen_ms, Number(e.last) / 1e6, `${what}.last_seen_ms`);
          if (e.traces.size === 0) assert.equal(g.sample_trace_id, '', `${what}.sample_trace_id: none has a trace`);
          else assert.ok(e.traces.has(g.sample_trace_id), `${what}.sample_trace_id ${g.sample_trace_id} is one of its traces`);
        }
        if (!service) snap.exceptions = got;
      }
      // The second "exception" event of a span never counts; other event names never do.
      const all = await get('exceptions', RANGE);
      assert.ok(!all.exceptions.some((e) => e.type === 'WrappedError'), 'only the first exception event counts');
      // limit: the top groups by count.
      const top2 = await get('exceptions', { ...RANGE, limit: 2 });
      const exp = expectedException(RANGE);
      assert.equal(top2.exceptions.length, 2);
      assert.deepEqual(top2.exceptions.map((e) => e.count), exp.slice(0, 2).map((e) => e.count));

      // The log-based events: one group, though every message differs.
      const declined = all.exceptions.filter((e) => e.type === 'PaymentDeclined');
      assert.deepEqual(declined.map((e) => [e.message, e.count, e.log_count]), [['payment <n> declined for card <hex>', 6, 6]]);

      const spanJson = (s) => ({ trace_id: s.traceId, span_id: s.spanId, service: s.service, name: s.name, source: s.source });
      const newestFirst = (a, b) => (a.time < b.time ? 1 : a.time > b.time ? -1 : (a.source === 'log') - (b.source === 'log'));
      const spanCases = [
        { type: 'ValueError', message: 'invalid cart id' },
        { type: 'ValueError' },
        { type: 'TimeoutError', service: 'catalog' },
        { type: 'PanicError' },
        { type: 'ConnectionError', message: 'connection reset by peer', limit: 3 },
        { message: 'deadlock detected' },                // by message alone
        { type: 'TimeoutError', message: 'upstream timed out after <n>s' },  // a normalised message
        { type: 'PaymentDeclined', message: 'payment <n> declined for card <hex>' },  // log records
      ];
      await eachCase(spanCases, async (c) => {
        const params = { ...RANGE, ...c };
        const got = await get('exceptions/spans', params);
        const expSpans = exceptionOccurrences().filter((o) => inRange(o.time, RANGE)
            && (c.type === undefined || o.type === c.type)
            && (c.message === undefined || normalizeMessage(o.message) === c.message)
            && (!c.service || o.service === c.service)).sort(newestFirst).slice(0, c.limit ?? 50);
        assert.ok(expSpans.length > 0, `fixture has spans for ${pretty(c)}`);
        assert.deepEqual(got.spans.map((s) => s.span_id), expSpans.map((s) => s.spanId), `exceptions/spans ${pretty(params)}: newest first`);
        expSpans.forEach((s, i) => {
          const g = got.spans[i];
          const what = `exceptions/spans ${pretty(params)} [${i}]`;
          assert.deepEqual({ trace_id: g.trace_id, span_id: g.span_id, service: g.service, name: g.name, source: g.source }, spanJson(s), what);
          closeMs(g.start_ms, Number(s.time) / 1e6, `${what}.start_ms`);
          close(g.duration_ms, s.durNs / 1e6, 1e-12, `${what}.duration_ms`);
        });
      });
    });

    it('logs: each filter, newest first, every field, limit', async () => {
      const bySeq = new Map(DATA.logs.map((l) => [l.seq, l]));
      const linked = DATA.logs.find((l) => l.traceId);
      const cases = [
        {},
        { limit: 7 },
        { severity_min: 13 },
        { severity_min: 21, limit: 1000 },
        { service: 'catalog' },
        { q: 'timeout' },
        { q: 'TimeOut', limit: 1000 },
        { q: 'disk full' },
        { q: 'ärger', limit: 1000 },                       // matches Ärger and ÄRGER too
        { q: 'ÄRGER', limit: 1000 },
        { q: '50%', limit: 1000 },
        { q: 'user_id', limit: 1000 },
        { q: '%', limit: 1000 },
        { q: '_', limit: 1000 },
        { trace_id: linked.traceId },
        { trace_id: linked.traceId.toUpperCase() },
        { attr: 'log.source=audit' },
        { attr: ['log.source=gc', 'user.id=u7'], limit: 1000 },
        { attr: 'attempt=2', limit: 1000 },
        { severity_min: 9, service: 'checkout', q: 'ok', attr: 'log.source=app', limit: 1000 },
        { q: 'no such words here' },
      ];
      await eachCase(cases.flatMap((c) => [[c, RANGE], [c, WIN]]), async ([c, r]) => {
        {
          const params = { ...r, ...c };
          const got = await get('logs', params);
          const exp = expectedLogs(r, c);
          const expSet = new Set(exp);
          const limit = c.limit ?? 100;
          const want = exp.slice(0, limit);
          const what = `logs ${pretty(params)}`;
          assert.equal(got.logs.length, want.length, `${what}: count (${exp.length} match)`);
          // Newest first; equal timestamps may come in any order.
          assert.deepEqual(got.logs.map((l) => l.time_ns), want.map((l) => String(l.time)), `${what}: newest first`);
          for (const g of got.logs) {
            const l = bySeq.get(g.attributes?.seq);
            assert.ok(l, `${what}: unknown log ${JSON.stringify(g)}`);
            assert.ok(expSet.has(l), `${what}: log seq ${l.seq} does not match the filters: ${JSON.stringify(g)}`);
            const { time_ms: tms, ...rest } = logJson(l);
            closeMs(g.time_ms, tms, `${what} seq ${l.seq}.time_ms`);
            for (const [k, v] of Object.entries(rest)) assert.deepEqual(g[k], v, `${what} seq ${l.seq}.${k}`);
          }
          assert.equal(new Set(got.logs.map((g) => g.attributes.seq)).size, got.logs.length, `${what}: no duplicates`);
          if (exp.length > limit) assert.equal(typeof got.next_cursor, 'string', `${what}: next_cursor when more remain`);
          else assert.equal(got.next_cursor, null, `${what}: next_cursor null at the end`);
          if (c.severity_min === 13 && r === RANGE) snap.logsWarn = got.logs.map((l) => l.attributes.seq).sort((a, b) => a - b);
        }
      });
      // The escaping matters: '50%' and 'user_id' are literal.
      assert.ok(DATA.logs.some((l) => l.body.includes('500') && !l.body.includes('50%')), 'fixture: bodies with 500 but not 50%');
      assert.ok(DATA.logs.some((l) => /user-id|userXid/.test(l.body) && !l.body.includes('user_id')), 'fixture: user-id/userXid without user_id');
    });

    it('logs: walking next_cursor returns every matching log exactly once', async () => {
      const cases = [
        { limit: 37 },
        { limit: 1000 },
        { limit: 1 , severity_min: 21 },
        { limit: 50, q: 'timeout', service: 'billing-worker' },
        { limit: 13, attr: 'log.source=audit', severity_min: 5 },
      ];
      for (const c of cases) {
        const exp = expectedLogs(RANGE, c);
        const seen = [];
        const times = [];
        let cursor;
        let pages = 0;
        for (;;) {
          const got = await get('logs', { ...RANGE, ...c, cursor });
          pages++;
          assert.ok(got.logs.length <= c.limit);
          for (const g of got.logs) { seen.push(g.attributes.seq); times.push(BigInt(g.time_ns)); }
          if (got.next_cursor === null) break;
          assert.equal(got.logs.length, c.limit, 'a page before the last one is full');
          cursor = got.next_cursor;
          assert.ok(pages <= exp.length + 2, 'cursor walk does not end');
        }
        const what = `cursor walk ${pretty(c)}`;
        assert.equal(new Set(seen).size, seen.length, `${what}: no duplicates`);
        assert.deepEqual([...seen].sort((a, b) => a - b), exp.map((l) => l.seq).sort((a, b) => a - b), `${what}: every matching log`);
        for (let i = 1; i < times.length; i++) assert.ok(times[i - 1] >= times[i], `${what}: newest first across pages`);
        assert.equal(pages, Math.max(1, Math.ceil(exp.length / c.limit)), `${what}: pages`);
      }
    });

    it('logs/volume: per-severity buckets', async () => {
      const cases = [
        { step_ms: 60_000 },
        {},
        { step_ms: 420_000, severity_min: 13 },
        { step_ms: 120_000, service: 'checkout', q: 'timeout' },
        { step_ms: 300_000, attr: 'log.source=gc' },
      ];
      for (const c of cases) {
        const params = { ...RANGE, ...c };
        const got = await get('logs/volume', params);
        const step = c.step_ms ?? 60_000;
        const exp = expectedVolume(RANGE, c, step);
        assert.equal(got.step_ms, step, `step_ms ${pretty(params)}`);
        assert.deepEqual(got.buckets, exp.buckets, `buckets ${pretty(params)}`);
        assert.deepEqual(got.series, exp.series, `series ${pretty(params)}`);
        const total = got.series.reduce((a, s) => a + s.values.reduce((x, y) => x + y, 0), 0);
        assert.equal(total, expectedLogs(RANGE, c).length, 'volume sums to the number of matching logs');
        if (c.step_ms === 60_000) snap.logVolume = got;
      }
    });

    it('metrics: names, types, units, services; labels', async () => {
      const got = await get('metrics', RANGE);
      const byName = groupBy(DATA.series, (s) => s.name);
      const exp = [...byName.keys()].sort().map((name) => {
        const ss = byName.get(name);
        const temporality = { 0: 'unspecified', 1: 'delta', 2: 'cumulative' }[Math.max(...ss.map((s) => s.temporality))];
        return {
          name, type: ss[0].type, unit: ss[0].unit, description: ss[0].description,
          monotonic: ss.some((s) => s.monotonic), temporality,
          services: [...new Set(ss.map((s) => s.service))].sort(),
        };
      });
      assert.deepEqual(got.metrics, exp);
      snap.metrics = got;
      for (const name of byName.keys()) {
        const labels = await get('metrics/labels', { ...RANGE, name });
        const e = {};
        for (const s of byName.get(name)) {
          (e['service.name'] ??= new Set()).add(s.service);
          for (const [k, v] of Object.entries(s.labels)) (e[k] ??= new Set()).add(v);
        }
        const expLabels = Object.fromEntries(Object.entries(e).map(([k, v]) => [k, [...v].sort()]));
        assert.deepEqual(labels.labels, expLabels, `metrics/labels name=${name}`);
        if (name === 'queue.depth') snap.labels = labels;
      }
      assert.deepEqual((await get('metrics/labels', { ...RANGE, name: 'no.such.metric' })).labels, {});
    });

    it('metrics/series: avg/sum/min/max with group_by and filter, rate, histogram percentiles', async () => {
      const cases = [
        { name: 'queue.depth', agg: 'avg', group_by: 'queue', step_ms: 60_000 },
        { name: 'queue.depth', agg: 'sum', step_ms: 120_000 },
        { name: 'queue.depth', agg: 'min', group_by: 'queue', filter: 'service.name=billing-worker', step_ms: 60_000 },
        { name: 'queue.depth', agg: 'max', group_by: 'service.name,queue', step_ms: 300_000 },
        { name: 'queue.depth', agg: 'avg', filter: ['queue=invoices', 'service.name=checkout'], step_ms: 60_000 },
        { name: 'queue.depth' },                                           // avg, auto step
        { name: 'http.server.requests', agg: 'rate', group_by: 'route', step_ms: 60_000 },
        { name: 'http.server.requests', agg: 'rate', step_ms: 120_000 },
        { name: 'http.server.requests', agg: 'last', group_by: 'route', step_ms: 60_000 },
        { name: 'http.server.requests', agg: 'last', step_ms: 120_000 },
        { name: 'queue.depth', agg: 'last', group_by: 'queue', step_ms: 60_000 },
        { name: 'jobs.processed', agg: 'rate', step_ms: 60_000 },
        { name: 'jobs.processed', agg: 'sum', step_ms: 300_000 },
        { name: 'http.server.duration', agg: 'p50', step_ms: 60_000 },
        { name: 'http.server.duration', agg: 'p95', group_by: 'route', step_ms: 120_000 },
        { name: 'http.server.duration', agg: 'p99', filter: 'route=/api/cart/{id}', step_ms: 300_000 },
        { name: 'rpc.client.duration', agg: 'p50', step_ms: 60_000 },
        { name: 'rpc.client.duration', agg: 'p95', step_ms: 180_000 },
        { name: 'rpc.server.latency', agg: 'p50', step_ms: 60_000 },
        { name: 'rpc.server.latency', agg: 'p95', group_by: 'method', step_ms: 120_000 },
        { name: 'rpc.server.latency', agg: 'p99', filter: 'method=List', step_ms: 60_000 },
        { name: 'rpc.server.latency', agg: 'p95', filter: 'method=Get', step_ms: 30_000 },
      ];
      await eachCase(cases, async (c) => {
        const params = { ...RANGE, ...c };
        const got = await get('metrics/series', params);
        const exp = expectedMetricSeries(RANGE, { ...c, step: c.step_ms ?? 60_000 });
        const what = `metrics/series ${pretty(params)}`;
        assert.equal(got.step_ms, exp.step_ms, `${what}: step_ms`);
        assert.deepEqual(got.buckets, exp.buckets, `${what}: buckets`);
        const key = (s) => JSON.stringify(Object.entries(s.labels).sort());
        const gotSeries = [...got.series].sort((a, b) => strCmp(key(a), key(b)));
        const expSeries = [...exp.series].sort((a, b) => strCmp(key(a), key(b)));
        assert.deepEqual(gotSeries.map((s) => s.labels), expSeries.map((s) => s.labels), `${what}: groups`);
        expSeries.forEach((s, i) => checkValues(gotSeries[i].values, s.values, 1e-9, `${what} ${key(s)}`));
        if (c.name === 'rpc.server.latency') {
          for (const s of expSeries) assert.ok(s.values.filter((v) => v !== null).length >= 10, `${what}: exponential buckets answered`);
        }
        if (c.agg === 'p95' && c.group_by) snap.histogram = { ...got, series: gotSeries };
        if (c.agg === 'avg' && c.group_by) snap.gauge = { ...got, series: gotSeries };
      });
      // The rate of each counter is its known slope in every full minute after the first.
      const rate = await get('metrics/series', { ...RANGE, name: 'http.server.requests', agg: 'rate', group_by: 'route', step_ms: 60_000 });
      for (const s of DATA.series.filter((x) => x.name === 'http.server.requests')) {
        const g = rate.series.find((x) => x.labels.route === s.labels.route);
        const buckets = [...new Set(s.points.map((p) => bucketOf(p.time, alignToStep(RANGE, 60_000), 60_000)))].sort((a, b) => a - b);
        assert.equal(g.values[buckets[0]], null, 'no rate in the first bucket (no baseline)');
        for (const b of buckets.slice(1, -1)) close(g.values[b], s.slope, 1e-9, `rate of ${s.labels.route} in bucket ${b}`);
      }
    });

    it('bad parameters are 400 {"error"}, never 500', async () => {
      const bad = [
        ['services', { from: TO, to: FROM }],
        ['services', { from: FROM, to: FROM }],
        ['services', { from: 'yesterday' }],
        ['services', { to: '-5' }],
        ['endpoints', { limit: 'abc' }],
        ['endpoints', { limit: '1.5' }],
        ['endpoints', { limit: 0 }],
        ['endpoints', { limit: 100_000 }],
        ['endpoints', { offset: -1 }],
        ['endpoints', { sort: 'latency' }],
        ['endpoints', { order: 'up' }],
        ['endpoints/series', { metric: 'p42' }],
        ['endpoints/series', { top: 0 }],
        ['endpoints/series', { step_ms: 0 }],
        ['endpoints/series', { ...RANGE, step_ms: 1000 }],    // 2400 buckets
        ['endpoints/series', { step_ms: 'x' }],
        ['traces', { status: 'failed' }],
        ['traces', { limit: 501 }],
        ['traces', { min_duration_ms: 'slow' }],
        ['traces', { max_duration_ms: -1 }],
        ['traces', { attr: 'customer.tier>free' }],  // a bare key is "exists"; > needs a number
        ['traces', { attr: '=free' }],
        ['traces', { sort: 'latency' }],
        ['traces', { sort: 'start', order: 'asc' }],
        ['traces', { offset: -1 }],
        ['traces/durations', { status: 'failed' }],
        ['traces/attributes', { sample: 0 }],
        ['exceptions', { limit: 'ten' }],
        ['exceptions/spans', {}],
        ['exceptions/spans', { type: 'ValueError', limit: 0 }],
        ['logs', { cursor: 'abc' }],
        ['logs', { cursor: '123:x' }],
        ['logs', { cursor: ':' }],
        ['logs', { severity_min: 25 }],
        ['logs', { severity_min: 'warn' }],
        ['logs', { trace_id: 'xyz' }],
        ['logs', { trace_id: 'g'.repeat(32) }],
        ['logs', { attr: 'log.source<' }],
        ['logs', { limit: 1001 }],
        ['logs/volume', { step_ms: -60 }],
        ['logs/volume', { severity_min: 99 }],
        ['metrics/labels', {}],
        ['metrics/series', {}],
        ['metrics/series', { name: 'queue.depth', agg: 'median' }],
        ['metrics/series', { name: 'queue.depth', agg: 'rate' }],
        ['metrics/series', { name: 'queue.depth', agg: 'p95' }],
        ['metrics/series', { name: 'http.server.requests', agg: 'sum' }],  // a cumulative counter: use rate
        ['metrics/series', { name: 'http.server.requests', agg: 'max' }],
        ['metrics/series', { name: 'queue.depth', filter: 'queue' }],
        ['metrics/series', { name: 'queue.depth', step_ms: 'fast' }],
      ];
      for (const [path, params] of bad) {
        const res = await api(server, path, params);
        assertError(res, 400, `GET ${path}?${pretty(params)}`);
      }
      const counterSum = await api(server, 'metrics/series', { ...RANGE, name: 'http.server.requests', agg: 'sum' });
      assert.match(counterSum.json.error, /cumulative counter.*agg=rate/, 'the refusal of a raw sum points to rate');
      assertError(await api(server, '', {}, { raw: '/api/v1/logs?q=%zz' }), 400, 'malformed percent-encoding');
      assertError(await api(server, '', {}, { raw: '/api/v1/logs?q=abc%4' }), 400, 'truncated percent-encoding');
    });

    it('auth: 401 without credentials, login cookie, bearer token, logout; 404s', async () => {
      for (const path of ['services', 'logs', `traces/${DATA.roots[0].traceId}`, 'me', 'projects', 'metrics']) {
        assertError(await api(server, path, RANGE, { token: null }), 401, `GET ${path} without credentials`);
        assertError(await api(server, path, RANGE, { token: 'not-the-token-123' }), 401, `GET ${path} with a wrong token`);
        assertError(await api(server, path, RANGE, { cookie: 'sl_session=0123456789abcdef' }), 401, `GET ${path} with a bogus session`);
      }
      const wrong = await login(server, 'admin', 'not-the-password');
      assertError({ status: wrong.status, json: wrong.json, text: JSON.stringify(wrong.json) }, 401, 'login with a wrong password');
      assert.equal(wrong.cookie, null, 'no session cookie for a failed login');
      const nobody = await login(server, 'nobody', PASSWORD);
      assert.equal(nobody.status, 401, 'login of an unknown user');
      const malformed = await api(server, 'login', {}, { method: 'POST', token: null, body: 'not json' });
      assertError(malformed, 400, 'login with a malformed body');

      const ok = await login(server, 'admin', PASSWORD);
      assert.equal(ok.status, 200);
      assert.deepEqual(ok.json, { username: 'admin' });
      assert.ok(ok.cookie, `Set-Cookie with sl_session: ${ok.setCookie}`);
      assert.match(ok.setCookie, /HttpOnly/i);
      assert.match(ok.setCookie, /SameSite=Strict/i);
      assert.deepEqual(await apiOk(server, 'me', {}, { cookie: ok.cookie }), { username: 'admin' });
      const viaCookie = await apiOk(server, 'services', RANGE, { cookie: ok.cookie });
      const viaToken = await apiOk(server, 'services', RANGE);
      assert.deepEqual(viaCookie, viaToken, 'cookie and bearer token see the same project');
      const projects = await apiOk(server, 'projects', {}, { cookie: ok.cookie });
      assert.ok(projects.projects.some((p) => p.name === 'default' && Number.isInteger(p.id)), JSON.stringify(projects));
      const tokenProjects = await apiOk(server, 'projects');
      assert.deepEqual(tokenProjects.projects.map((p) => p.name), ['default']);
      assert.deepEqual((await apiOk(server, 'services', { ...RANGE, project: 'default' })).services.length, 3);

      // Unknown project and unknown calls: 404.
      assertError(await api(server, 'services', { ...RANGE, project: 'no-such-project' }), 404, 'unknown project (token)');
      // The ingest token every exporter holds cannot read.
      for (const path of ['services', 'projects', `traces/${DATA.roots[0].traceId}`]) {
        assertError(await api(server, path, RANGE, { token: TOKEN }), 403, `GET ${path} with the ingest token`);
      }
      assertError(await api(server, 'services', { ...RANGE, project: 'no-such-project' }, { cookie: ok.cookie }), 404, 'unknown project (session)');
      assertError(await api(server, 'no-such-call', RANGE), 404, 'unknown call');
      assertError(await api(server, `traces/${DATA.roots[0].traceId}/spans`, RANGE), 404, 'unknown nested call');

      // Logout ends the session.
      const out = await api(server, 'logout', {}, { method: 'POST', cookie: ok.cookie });
      assert.equal(out.status, 200);
      assertError(await api(server, 'services', RANGE, { cookie: ok.cookie }), 401, 'the cookie after logout');
    });
  });
}

describe('engines agree', () => {
  it('the same calls give the same answers on duckdb and sqlite', { skip: ENGINES.length < 2 && 'needs both engines' }, () => {
    const [a, b] = [...snapshots.keys()];
    const sa = snapshots.get(a);
    const sb = snapshots.get(b);
    const keys = ['services', 'endpoints', 'endpointSeries', 'traces', 'traceDetail', 'exceptions', 'logsWarn', 'logVolume',
      'metrics', 'labels', 'gauge', 'histogram'];
    const approx = (x, y, path) => {
      if (typeof x === 'number' && typeof y === 'number') {
        assert.ok(Math.abs(x - y) <= Math.max(Math.abs(x), Math.abs(y)) * 1e-9 + 1e-9, `${path}: ${a} ${x} vs ${b} ${y}`);
      } else if (Array.isArray(x)) {
        assert.ok(Array.isArray(y) && x.length === y.length, `${path}: arrays differ: ${JSON.stringify(x).slice(0, 200)} vs ${JSON.stringify(y).slice(0, 200)}`);
        x.forEach((v, i) => approx(v, y[i], `${path}[${i}]`));
      } else if (x && typeof x === 'object') {
        assert.ok(y && typeof y === 'object', `${path}: ${a} has an object, ${b} ${JSON.stringify(y)}`);
        assert.deepEqual(Object.keys(x).sort(), Object.keys(y).sort(), `${path}: keys`);
        for (const k of Object.keys(x)) approx(x[k], y[k], `${path}.${k}`);
      } else {
        assert.deepEqual(x, y, `${path}: ${a} vs ${b}`);
      }
    };
    for (const k of keys) {
      assert.ok(sa[k] !== undefined && sb[k] !== undefined, `snapshot ${k} taken on both engines`);
      approx(sa[k], sb[k], k);
    }
  });
});

describe('query caps from the serve flags', { timeout: 120_000 }, () => {
  let server;
  const traceId = '5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e';
  const t0 = msToNs(Date.now() - 60_000);
  before(async () => {
    server = await startServer({
      engine: ENGINES[0],
      args: ['--max-trace-spans', '2', '--max-query-series', '1', '--max-query-groups', '1'],
    });
    const spans = [0, 1, 2, 3, 4].map((i) => ({
      traceId, spanId: `00000000000000${i + 10}`, parentSpanId: '', name: `GET /e${i}`, kind: 2,
      start: t0 + BigInt(i) * NS, end: t0 + BigInt(i + 1) * NS,
    }));
    await postOtlp(server, 'traces', encodeTracesProto([{ resource: { 'service.name': 'capped' }, spans }]));
    const points = ['a', 'b'].map((host) => ({ time: t0, value: 1, attributes: { host } }));
    await postOtlp(server, 'metrics', encodeMetricsProto([{
      resource: { 'service.name': 'capped' }, metrics: [{ name: 'two.series', gauge: { points } }],
    }]));
  });
  after(async () => { await server?.cleanup(); });

  it('a trace past --max-trace-spans keeps its earliest spans and says so', async () => {
    const got = await apiOk(server, `traces/${traceId}`);
    assert.deepEqual(got.spans.map((s) => s.name), ['GET /e0', 'GET /e1']);
    assert.equal(got.spans_truncated, true);
    assert.equal(got.logs_truncated, false);
  });

  it('answers past a cap are 400s naming the flag', async () => {
    const range = { from: Date.now() - 3_600_000, to: Date.now() + 60_000 };
    const endpoints = await api(server, 'endpoints', range);
    assert.equal(endpoints.status, 400, endpoints.text);
    assert.match(endpoints.json.error, /--max-query-groups/);
    const series = await api(server, 'metrics/series', { ...range, name: 'two.series', agg: 'avg' });
    assert.equal(series.status, 400, series.text);
    assert.match(series.json.error, /--max-query-series/);
    const list = await apiOk(server, 'metrics');
    assert.equal(list.truncated, false);
  });
});
