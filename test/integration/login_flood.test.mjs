// Logins cannot starve ingest: while many connections flood POST /api/v1/login
// with wrong passwords, an OTLP exporter of the official OTel JS SDK keeps
// exporting spans, and its export latency stays within a stated bound of what
// it was before the flood. First with the login throttle off (every attempt
// is hashed: the hashing thread runs flat out, which on the network threads
// stalled ingest), then with the defaults (the flood is answered 429 with
// Retry-After after a few hashes). Also, end to end: an ingest token gets 403
// on the API while a read token reads, and a restart with a new admin
// password ends the sessions of the old one. Auth does not depend on the
// telemetry engine, so one engine is enough.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { Worker } from 'node:worker_threads';

import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';

import { ENGINES, TOKEN, sleep, startServer } from './lib/server.mjs';
import { api, login } from './lib/api.mjs';

const PASSWORD = 'login-flood-admin-password';
const FLOOD_CONNECTIONS = 16;
const BASELINE_MS = 2_000;
const FLOOD_MS = 5_000;
// The bound: under the flood the exporter's p95 stays under four times its
// p95 before the flood plus 750 ms, no export takes over 3 s and none fails.
// With the hashes on the network threads (before LoginService), 16
// connections of wrong passwords queued 100k-iteration PBKDF2 runs in front
// of every export: p95 4.5 s, max 6.7 s, half the exports failed
// (docs/SECURITY.md). The slack is for this shared 2-core box, where a
// commit's fsync now and then takes a second while other builds run.
const P95_FACTOR = 4;
const P95_SLACK_MS = 750;
const MAX_MS = 3_000;

// The flood runs in a worker thread so that its event loop does not delay the
// exporter's callbacks (which would be counted as server latency). Each of its
// connections sends an attempt every 5 ms at most: up to 3,200 a second, a
// hundred times what one thread hashes, while leaving some of this 2-core
// box to the server (the flood client shares the machine it measures).
const FLOOD_WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const http = require('node:http');
const { port, connections, password } = workerData;
const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
const body = JSON.stringify({ username: 'admin', password });
const counts = {};
const retryAfter = {};  // value -> count
let stop = false;
parentPort.on('message', () => { stop = true; });
function once() {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/api/v1/login', method: 'POST', agent,
      headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => {
        counts[res.statusCode] = (counts[res.statusCode] || 0) + 1;
        if (res.statusCode === 429) retryAfter[res.headers['retry-after']] = (retryAfter[res.headers['retry-after']] || 0) + 1;
        resolve();
      });
    });
    req.on('error', () => { counts.error = (counts.error || 0) + 1; resolve(); });
    req.end(body);
  });
}
const pause = () => new Promise((resolve) => setTimeout(resolve, 5));
async function loop() { while (!stop) { await once(); await pause(); } }
Promise.all(Array.from({ length: connections }, loop)).then(() => {
  agent.destroy();
  parentPort.postMessage({ counts, retryAfter });
});
`;

//! Starts the flood; returns a function that stops it and resolves {counts, retryAfter}: answers by
//! status, and the 429s by their Retry-After value.
function startFlood(server) {
  const worker = new Worker(FLOOD_WORKER, {
    eval: true,
    workerData: { port: server.apiPort, connections: FLOOD_CONNECTIONS, password: 'a-wrong-password' },
  });
  const done = new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  return async () => {
    worker.postMessage('stop');
    const result = await done;
    await worker.terminate();
    return result;
  };
}

//! An SDK tracer whose exporter records how long each export took and its result.
function timedExporter(server) {
  const exporter = new OTLPTraceExporter({
    url: `${server.otlpUrl}/v1/traces`,
    headers: { Authorization: `Bearer ${TOKEN}` },
    timeoutMillis: 10_000,
    // A stall shows as latency, not as exports the SDK refused to start (its default limit is 30 pending).
    concurrencyLimit: 1_000,
  });
  const samples = [];
  const orig = exporter.export.bind(exporter);
  exporter.export = (spans, done) => {
    const started = performance.now();
    orig(spans, (result) => {
      samples.push({ ms: performance.now() - started, ok: result.code === 0, error: result.error?.message });  // 0: SUCCESS
      done(result);
    });
  };
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': 'login-flood' }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  return { tracer: provider.getTracer('login-flood'), samples, provider };
}

//! Ends one span every 25 ms for `ms`, each exported on its own; resolves the samples of that period.
async function exportFor(timed, ms) {
  const first = timed.samples.length;
  const until = performance.now() + ms;
  while (performance.now() < until) {
    timed.tracer.startSpan('GET /flood', { kind: SpanKind.SERVER }, ROOT_CONTEXT).end();
    await sleep(25);
  }
  await timed.provider.forceFlush();
  return timed.samples.slice(first);
}

function summary(samples) {
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const at = (q) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))];
  const errors = samples.filter((s) => !s.ok).map((s) => `${s.error} after ${s.ms.toFixed(0)} ms`);
  return { n: ms.length, p50: at(0.5), p95: at(0.95), max: ms[ms.length - 1], failed: errors.length, errors };
}

function fmt(s) {
  return `n=${s.n} p50=${s.p50.toFixed(1)} ms p95=${s.p95.toFixed(1)} ms max=${s.max.toFixed(1)} ms failed=${s.failed}`;
}

function assertWithinBound(base, flood, what) {
  const bound = P95_FACTOR * base.p95 + P95_SLACK_MS;
  console.log(`# ${what}: before ${fmt(base)}; under the flood ${fmt(flood)}; p95 bound ${bound.toFixed(1)} ms`);
  assert.equal(flood.failed, 0, `${what}: exports failed under the flood: ${flood.errors.slice(0, 3).join('; ')}`);
  assert.ok(flood.n >= 20, `${what}: only ${flood.n} exports finished under the flood`);
  assert.ok(flood.p95 <= bound, `${what}: p95 ${flood.p95.toFixed(1)} ms over the bound ${bound.toFixed(1)} ms`);
  assert.ok(flood.max <= MAX_MS, `${what}: an export took ${flood.max.toFixed(1)} ms`);
}

describe('a login flood does not starve ingest', () => {
  const servers = [];
  after(async () => {
    for (const s of servers) {
      if (s.alive()) await s.stop();
      await s.cleanup();
    }
  });

  it('with the throttle off, every attempt hashed: the exporter keeps its latency', async () => {
    const server = await startServer({
      engine: ENGINES[0],
      args: ['--admin-password', PASSWORD, '--login-max-failures', '0', '--login-global-failures-per-s', '0'],
    });
    servers.push(server);
    const timed = timedExporter(server);
    await exportFor(timed, 300);  // connection set up, first-request costs
    const base = summary(await exportFor(timed, BASELINE_MS));
    const stop = startFlood(server);
    let flood;
    let result;
    try {
      flood = summary(await exportFor(timed, FLOOD_MS));
    } finally {
      result = await stop();
    }
    console.log(`# flood answers (throttle off): ${JSON.stringify(result)}`);
    assertWithinBound(base, flood, 'throttle off');
    assert.ok((result.counts[401] ?? 0) >= 10, `the flood was hashed: ${JSON.stringify(result.counts)}`);
    assert.equal(result.counts[200] ?? 0, 0);
    // More attempts than one thread can hash: the queue refused the rest at once.
    assert.ok((result.counts[429] ?? 0) > 0, `a full queue answers 429: ${JSON.stringify(result.counts)}`);
    assert.ok(Object.keys(result.retryAfter).every((v) => /^[1-9][0-9]*$/.test(v)), JSON.stringify(result.retryAfter));

    // The right password still logs in once the flood is over.
    const ok = await login(server, 'admin', PASSWORD);
    assert.equal(ok.status, 200, JSON.stringify(ok.json));
  });

  it('with the defaults, the flood gets 429 + Retry-After after a few hashes', async () => {
    const server = await startServer({ engine: ENGINES[0], args: ['--admin-password', PASSWORD] });
    servers.push(server);
    const timed = timedExporter(server);
    await exportFor(timed, 300);
    const base = summary(await exportFor(timed, BASELINE_MS));
    const stop = startFlood(server);
    let flood;
    let result;
    try {
      flood = summary(await exportFor(timed, FLOOD_MS));
    } finally {
      result = await stop();
    }
    console.log(`# flood answers (defaults): ${JSON.stringify(result)}`);
    assertWithinBound(base, flood, 'defaults');
    // One address: at most --login-max-failures (10) wrong passwords are hashed in its window.
    assert.ok((result.counts[401] ?? 0) >= 1 && (result.counts[401] ?? 0) <= 10, JSON.stringify(result.counts));
    assert.ok((result.counts[429] ?? 0) > 100, `the rest is refused: ${JSON.stringify(result.counts)}`);
    const waits = Object.keys(result.retryAfter);
    assert.ok(waits.length > 0 && waits.every((v) => /^[1-9][0-9]*$/.test(v)), JSON.stringify(result.retryAfter));
    // The global bucket runs dry first (a burst of 8, then 1 s waits); after 10
    // failures the address waits for the rest of its 300 s window.
    assert.ok(waits.some((v) => Number(v) > 200 && Number(v) <= 300), JSON.stringify(result.retryAfter));

    // The throttled address is refused even with the right password, without a hash.
    const refused = await login(server, 'admin', PASSWORD);
    assert.equal(refused.status, 429);
  });

  it('an ingest token cannot read, a read token can; a new admin password ends old sessions', async () => {
    const server = await startServer({ engine: ENGINES[0], args: ['--admin-password', PASSWORD] });
    servers.push(server);
    const ingest = await api(server, 'services', {}, { token: TOKEN });
    assert.equal(ingest.status, 403, ingest.text);
    assert.match(ingest.json.error, /read token/);
    assert.equal((await api(server, 'services', {}, { token: server.readToken })).status, 200);

    const session = await login(server, 'admin', PASSWORD);
    assert.equal(session.status, 200);
    await server.stop();
    await server.restart();  // the same password: still logged in
    assert.equal((await api(server, 'me', {}, { cookie: session.cookie })).status, 200);
    await server.stop();
    server.args = [...server.args.slice(0, -1), 'a-new-admin-password'];
    await server.restart();
    assert.equal((await api(server, 'me', {}, { cookie: session.cookie })).status, 401, 'a session of the old password');
    assert.equal((await login(server, 'admin', PASSWORD)).status, 401);
    assert.equal((await login(server, 'admin', 'a-new-admin-password')).status, 200);
  });
});
