// The service map (/api/v1/service_map, docs/API.md) end to end, for each
// storage engine: three services instrumented with the official OpenTelemetry
// JS SDK call each other (gateway -> orders -> payments, and gateway ->
// payments directly on some requests); the edges' counts, errors and
// percentiles and the nodes' numbers are checked against values computed here
// from the spans the test made. The server runs with --max-service-map-edges 2
// so the cap and its `truncated` flag are checked too.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { trace, ROOT_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';

import { ENGINES, TOKEN, startServer } from './lib/server.mjs';
import { api, apiOk } from './lib/api.mjs';

const TRACES = 40;
const NOW_MS = Date.now();
const FROM = Math.floor(NOW_MS / 60_000) * 60_000 - 20 * 60_000;
const TO = FROM + 30 * 60_000;
const T0_MS = FROM + 5 * 60_000; // first trace; one trace every 10 s
const SECONDS = (TO - FROM) / 1000;

//! Linear interpolation between closest ranks (the API's convention).
function percentile(values, q) {
  const s = [...values].sort((a, b) => a - b);
  const pos = q * (s.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, s.length - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

function close(actual, expected, what) {
  assert.ok(
    typeof actual === 'number' && Math.abs(actual - expected) <= 1e-6 * Math.max(1, Math.abs(expected)),
    `${what}: got ${actual}, want ${expected}`,
  );
}

//! HrTime of a time in ms since the epoch (whole or fractional ms).
const hr = (ms) => [Math.floor(ms / 1000), Math.round((ms % 1000) * 1e6)];

// What each request does, by index: durations in whole ms, errors.
function plan(i) {
  return {
    start: T0_MS + i * 10_000,
    orders: 20 + ((i * 7) % 31),
    ordersError: i % 8 === 0,
    payments: 5 + ((i * 13) % 17),
    paymentsError: i % 5 === 0,
    direct: i % 4 === 0, // gateway also calls payments itself
    direct_ms: 3 + ((i * 5) % 11),
  };
}

//! The edges and nodes the map must show, from the plan.
function expected() {
  const edges = new Map();
  const nodes = new Map();
  const add = (m, key, ms, error) => {
    const e = m.get(key) ?? { durations: [], errors: 0 };
    e.durations.push(ms);
    if (error) e.errors++;
    m.set(key, e);
  };
  for (let i = 0; i < TRACES; i++) {
    const p = plan(i);
    const gatewayMs = p.orders + 10 + (p.direct ? p.direct_ms + 2 : 0);
    add(nodes, 'gateway', gatewayMs, false);
    add(nodes, 'orders', p.orders, p.ordersError);
    add(nodes, 'payments', p.payments, p.paymentsError);
    add(edges, 'gateway>orders', p.orders, p.ordersError);
    add(edges, 'orders>payments', p.payments, p.paymentsError);
    if (p.direct) {
      add(nodes, 'payments', p.direct_ms, false);
      add(edges, 'gateway>payments', p.direct_ms, false);
    }
  }
  return { edges, nodes };
}

async function send(server) {
  const providers = [];
  const tracers = {};
  for (const service of ['gateway', 'orders', 'payments']) {
    const exporter = new OTLPTraceExporter({
      url: `${server.otlpUrl}/v1/traces`,
      headers: { Authorization: `Bearer ${TOKEN}` },
      timeoutMillis: 10_000,
    });
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': service }),
      spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 60_000, maxExportBatchSize: 1000 })],
    });
    providers.push(provider);
    tracers[service] = provider.getTracer('service-map-it');
  }
  const child = (tracer, name, kind, parent, startMs, endMs, error) => {
    const s = tracer.startSpan(name, { kind, startTime: hr(startMs) }, trace.setSpan(ROOT_CONTEXT, parent));
    if (error) s.setStatus({ code: SpanStatusCode.ERROR, message: 'failed' });
    s.end(hr(endMs));
    return s;
  };
  for (let i = 0; i < TRACES; i++) {
    const p = plan(i);
    const t = p.start;
    const root = tracers.gateway.startSpan('GET /checkout', { kind: SpanKind.SERVER, startTime: hr(t) }, ROOT_CONTEXT);
    // A same-service child: no edge.
    child(tracers.gateway, 'render', SpanKind.INTERNAL, root, t + 0.5, t + 1, false);
    const call = tracers.gateway.startSpan('POST orders', { kind: SpanKind.CLIENT, startTime: hr(t + 1) },
      trace.setSpan(ROOT_CONTEXT, root));
    const orders = tracers.orders.startSpan('POST /orders', { kind: SpanKind.SERVER, startTime: hr(t + 2) },
      trace.setSpan(ROOT_CONTEXT, call));
    const pay = child(tracers.orders, 'POST payments', SpanKind.CLIENT, orders, t + 3, t + 3 + p.payments + 1, false);
    child(tracers.payments, 'POST /pay', SpanKind.SERVER, pay, t + 3.5, t + 3.5 + p.payments, p.paymentsError);
    if (p.ordersError) orders.setStatus({ code: SpanStatusCode.ERROR, message: 'failed' });
    orders.end(hr(t + 2 + p.orders));
    call.end(hr(t + 2 + p.orders + 1));
    let end = t + p.orders + 10;
    if (p.direct) {
      const d0 = t + 2 + p.orders + 2;
      const direct = child(tracers.gateway, 'GET payments', SpanKind.CLIENT, root, d0, d0 + p.direct_ms + 1, false);
      child(tracers.payments, 'GET /limits', SpanKind.SERVER, direct, d0 + 0.5, d0 + 0.5 + p.direct_ms, false);
      end += p.direct_ms + 2;
    }
    root.end(hr(end));
  }
  for (const provider of providers) {
    await provider.forceFlush();
    await provider.shutdown();
  }
}

for (const engine of ENGINES) {
  describe(`service map (${engine})`, { timeout: 120_000 }, () => {
    let server;
    const range = { from: FROM, to: TO };
    const want = expected();

    before(async () => {
      server = await startServer({ engine, args: ['--max-service-map-edges', '2'] });
      await send(server);
      const spans = TRACES * 6 + (TRACES / 4) * 2;
      for (let i = 0; i < 100; i++) {
        const h = await server.deepHealth();
        if (h.rows.spans >= spans) break;
        await new Promise((r) => setTimeout(r, 100));
      }
    });
    after(async () => { await server?.cleanup(); });

    const checkEdge = (got, key) => {
      const [from, to] = key.split('>');
      const w = want.edges.get(key);
      assert.ok(got, `edge ${key} is missing`);
      assert.equal(got.from, from);
      assert.equal(got.to, to);
      assert.equal(got.count, w.durations.length, `${key} count`);
      assert.equal(got.errors, w.errors, `${key} errors`);
      close(got.rate_per_s, w.durations.length / SECONDS, `${key} rate_per_s`);
      close(got.error_rate, w.errors / w.durations.length, `${key} error_rate`);
      close(got.p50_ms, percentile(w.durations, 0.5), `${key} p50_ms`);
      close(got.p95_ms, percentile(w.durations, 0.95), `${key} p95_ms`);
    };
    const checkNode = (got, service) => {
      const w = want.nodes.get(service);
      assert.ok(got, `node ${service} is missing`);
      assert.equal(got.count, w.durations.length, `${service} count`);
      assert.equal(got.errors, w.errors, `${service} errors`);
      close(got.rate_per_s, w.durations.length / SECONDS, `${service} rate_per_s`);
      close(got.error_rate, w.errors / w.durations.length, `${service} error_rate`);
      close(got.p95_ms, percentile(w.durations, 0.95), `${service} p95_ms`);
    };

    it('draws the busiest edges up to the cap, says it truncated, and every service', async () => {
      const got = await apiOk(server, 'service_map', range);
      assert.deepEqual(got.nodes.map((n) => n.service), ['gateway', 'orders', 'payments']);
      for (const n of got.nodes) checkNode(n, n.service);
      // Three edges, the cap is 2: the two with 40 calls (ties by caller), not gateway -> payments (10).
      assert.equal(got.truncated, true);
      assert.deepEqual(got.edges.map((e) => `${e.from}>${e.to}`), ['gateway>orders', 'orders>payments']);
      for (const e of got.edges) checkEdge(e, `${e.from}>${e.to}`);
    });

    it('focuses on one service: its callers and callees only', async () => {
      const got = await apiOk(server, 'service_map', { ...range, service: 'payments' });
      assert.equal(got.truncated, false);
      assert.deepEqual(got.edges.map((e) => `${e.from}>${e.to}`), ['orders>payments', 'gateway>payments']);
      for (const e of got.edges) checkEdge(e, `${e.from}>${e.to}`);
      assert.deepEqual(got.nodes.map((n) => n.service), ['gateway', 'orders', 'payments']);
      const orders = await apiOk(server, 'service_map', { ...range, service: 'gateway' });
      assert.deepEqual(orders.edges.map((e) => `${e.from}>${e.to}`), ['gateway>orders', 'gateway>payments']);
      assert.deepEqual(orders.nodes.map((n) => n.service), ['gateway', 'orders', 'payments']);
    });

    it('a range without calls has no edges', async () => {
      const got = await apiOk(server, 'service_map', { from: FROM, to: T0_MS - 60_000 });
      assert.deepEqual(got, { nodes: [], edges: [], truncated: false, parent_margin_ms: 300_000 });
    });

    it('refuses bad parameters with 400 and a message', async () => {
      for (const params of [{ from: TO, to: FROM }, { from: 'yesterday', to: TO }]) {
        const res = await api(server, 'service_map', params);
        assert.equal(res.status, 400, JSON.stringify(params));
        assert.match(res.json?.error ?? '', /from|to/);
      }
    });
  });
}
