// A burst of fat OTLP/JSON requests against small admission limits: the server
// sheds load with 503 + Retry-After instead of growing without bound, and
// every span it acknowledged is stored (and none it refused).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';

import { HEX, TOKEN, request, startServer } from './lib/server.mjs';
import { encodeTraceRequestJson, makeRunTag, makeSpanBatch } from './lib/otlp.mjs';

const REQUESTS = 300;
const CONCURRENCY = 64;
const SPANS_PER_REQUEST = 1000;       // ~300 KiB of JSON per request
const RSS_BUDGET = 1 << 30;           // 1 GiB
const BURST_DEADLINE_MS = 90_000;

describe('overload: admission control under a burst (duckdb)', { timeout: 180_000 }, () => {
  let server;
  const runTag = makeRunTag();
  const accepted = new Map();  // request number -> span ids
  const statuses = new Map();  // status -> count
  const otherErrors = [];
  let rejected = 0;
  let peakRss = 0;

  before(async () => {
    server = await startServer({
      engine: 'duckdb',
      args: ['--max-inflight-bytes', String(4 << 20), '--max-inflight-requests', '4'],
    });
  });
  after(async () => { await server?.cleanup(); });

  it(`sheds a burst of ${REQUESTS} x ${SPANS_PER_REQUEST} spans, ${CONCURRENCY} concurrent, with 503 + Retry-After`, async (t) => {
    const url = `${server.otlpUrl}/v1/traces`;
    const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const rssTimer = setInterval(() => { peakRss = Math.max(peakRss, server.rssBytes() ?? 0); }, 25);
    const started = Date.now();
    let next = 0;
    let bodyBytes = 0;
    const worker = async () => {
      while (next < REQUESTS && Date.now() - started < BURST_DEADLINE_MS) {
        const n = next++;
        const batch = makeSpanBatch(runTag, n, SPANS_PER_REQUEST, { service: 'it-overload' });
        const body = encodeTraceRequestJson(batch);
        bodyBytes = Math.max(bodyBytes, body.length);
        let res;
        try {
          res = await request(url, {
            method: 'POST', body, agent, timeoutMs: 60_000,
            headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', 'Content-Length': body.length },
          });
        } catch (err) {
          otherErrors.push(`request ${n}: ${err.code ?? ''} ${err.message}`);
          continue;
        }
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        if (res.status === 200) {
          accepted.set(n, batch.spanIds);
        } else if (res.status === 503) {
          rejected++;
          const retryAfter = res.headers['retry-after'];
          if (!retryAfter || !(/^\d+$/.test(retryAfter) || !Number.isNaN(Date.parse(retryAfter)))) {
            otherErrors.push(`request ${n}: 503 without a valid Retry-After (${retryAfter})`);
          }
        } else {
          otherErrors.push(`request ${n}: HTTP ${res.status} ${res.body.toString().slice(0, 200)}`);
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    } finally {
      clearInterval(rssTimer);
      agent.destroy();
    }
    const elapsed = Date.now() - started;
    const summary = `${elapsed} ms, body ${(bodyBytes / 1024).toFixed(0)} KiB, statuses ${JSON.stringify(Object.fromEntries(statuses))}, `
      + `peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB`;
    t.diagnostic(summary);
    assert.equal(next, REQUESTS, `burst did not finish within ${BURST_DEADLINE_MS} ms (${summary})`);
    assert.deepEqual(otherErrors.slice(0, 20), [], `only 200 and 503 are acceptable (${summary})`);
    assert.ok(rejected > 0, `expected some 503s under the small limits (${summary})`);
    assert.ok(accepted.size > 0, `expected some requests to be accepted (${summary})`);
    assert.ok(peakRss > 0, 'RSS was sampled');
    assert.ok(peakRss < RSS_BUDGET, `peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB over the 1 GiB budget`);
  });

  it('recovers: accepts a request after the burst and reports the rejections', async () => {
    const batch = makeSpanBatch(runTag, REQUESTS, 10, { service: 'it-overload' });
    const res = await request(`${server.otlpUrl}/v1/traces`, {
      method: 'POST', body: encodeTraceRequestJson(batch),
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
    });
    assert.equal(res.status, 200, `after the burst: ${res.status} ${res.body}`);
    accepted.set(REQUESTS, batch.spanIds);
    const health = await server.deepHealth();
    assert.ok(health.gate.rejections >= rejected,
      `gate.rejections ${health.gate.rejections} < ${rejected} 503s seen by the client`);
    const acceptedSpans = [...accepted.values()].reduce((n, ids) => n + ids.length, 0);
    assert.equal(health.rows.spans, acceptedSpans, 'deep health counts exactly the acknowledged spans');
  });

  it('stores every acknowledged span and nothing it refused', async () => {
    await server.stop();
    const out = await server.sql(`SELECT ${HEX.span_id} FROM spans`);
    const stored = out.rows.map((r) => r[0]);
    const storedSet = new Set(stored);
    const acceptedIds = [...accepted.values()].flat();
    assert.equal(storedSet.size, stored.length, 'no span stored twice');
    const missing = acceptedIds.filter((id) => !storedSet.has(id));
    assert.deepEqual(missing.slice(0, 10), [], `${missing.length} acknowledged spans missing`);
    assert.equal(stored.length, acceptedIds.length, 'spans from refused requests were stored');
    // Spot checks, including the first and last span of an accepted request.
    const [someReq, ids] = [...accepted.entries()][Math.floor(accepted.size / 2)];
    for (const id of [ids[0], ids[ids.length - 1]]) {
      assert.ok(storedSet.has(id), `span ${id} of request ${someReq}`);
    }
    const rows = await server.sql(
      `SELECT name, service_name, http_route FROM spans WHERE ${HEX.span_id} = '${ids[0]}'`);
    assert.deepEqual(rows.rows, [['GET /api/items/{id}', 'it-overload', '/api/items/{id}']]);
  });
});
