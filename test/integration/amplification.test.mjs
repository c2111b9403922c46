// Work is bounded by what the client sent (issue #10, part 1; docs/SECURITY.md
// "Ingest"). The request of the issue — a 64 KiB service.name over thousands
// of empty items, a few hundred bytes gzipped — once grew the server by half
// a gigabyte and wrote 125 MB of WAL. Here it is sent ten times per signal on
// a real DuckDB server, and the server's RSS growth and the growth of its data
// directory must stay under the documented bound: decoding holds at most
// --max-decode-amplification (16) times a request's decompressed size plus
// 4 MiB, and the engine writes a small multiple of what decoding built. Then
// the metrics variant of the same bomb: one resource at the attribute limits
// (128 x 4 KiB) over thousands of new series, each of which once wrote the
// whole resource again.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

import { TOKEN, request, startServer } from './lib/server.mjs';

const SERVICE = 's'.repeat(64 << 10);
const RESOURCE = { attributes: [{ key: 'service.name', value: { stringValue: SERVICE } }] };
const NOW_NS = BigInt(Date.now()) * 1_000_000n;
const ROUNDS = 10;
const MiB = 1 << 20;

const hex = (n, width) => n.toString(16).padStart(width, '0');

const BOMBS = {
  logs: (n) => ({ resourceLogs: [{ resource: RESOURCE, scopeLogs: [{ logRecords: Array.from({ length: n }, () => ({})) }] }] }),
  traces: (n) => ({
    resourceSpans: [{
      resource: RESOURCE,
      scopeSpans: [{
        spans: Array.from({ length: n }, (_, i) => ({
          traceId: hex(i + 1, 32), spanId: hex(i + 1, 16), name: 'x',
          startTimeUnixNano: String(NOW_NS), endTimeUnixNano: String(NOW_NS + 1000n),
        })),
      }],
    }],
  }),
  metrics: (n) => ({
    resourceMetrics: [{
      resource: RESOURCE,
      scopeMetrics: [{
        metrics: [{
          name: 'm',
          gauge: {
            dataPoints: Array.from({ length: n }, (_, i) => ({
              // 200 series of 10 or 100 points each.
              asInt: '1', timeUnixNano: String(NOW_NS + BigInt(i)),
              attributes: [{ key: 'i', value: { intValue: String(i % 200) } }],
            })),
          },
        }],
      }],
    }],
  }),
};

// One resource of 128 attributes of 4 KiB (the decode limits: nothing is cut)
// and `n` gauge metrics of one point each, every one a new series. `round`
// makes the resource and the metric names new in every request.
const BIG_RESOURCE_SERIES = (n, round) => ({
  resourceMetrics: [{
    resource: {
      attributes: [
        { key: 'service.name', value: { stringValue: 'big-resource' } },
        { key: 'round', value: { intValue: String(round) } },
        ...Array.from({ length: 126 }, (_, k) => ({
          key: `attr.${k}`, value: { stringValue: String.fromCharCode(97 + (k % 26)).repeat(4096) },
        })),
      ],
    },
    scopeMetrics: [{
      metrics: Array.from({ length: n }, (_, i) => ({
        name: `r${round}.m${i}`,
        gauge: { dataPoints: [{ asInt: '1', timeUnixNano: String(NOW_NS + BigInt(i)) }] },
      })),
    }],
  }],
});

function dirBytes(dir) {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? dirBytes(p) : fs.statSync(p).size;
  }
  return total;
}

describe('a request costs at most a bounded multiple of its size (duckdb)', { timeout: 300_000 }, () => {
  let server;
  before(async () => { server = await startServer({ engine: 'duckdb' }); });
  after(async () => { await server?.cleanup(); });

  // [signal, items, status]: 20,000 empty records (3 bytes each in JSON)
  // would build ~7 MB of rows from 125 KB: past the budget, refused whole.
  const CASES = [['logs', 2000, 200], ['traces', 2000, 200], ['metrics', 2000, 200], ['traces', 20000, 200],
    ['metrics', 20000, 200], ['logs', 20000, 413]];
  for (const [signal, items, status] of CASES) {
    it(`${signal}: a 64 KiB service.name over ${items} items, ${ROUNDS} times -> ${status}`, async () => {
      const json = Buffer.from(JSON.stringify(BOMBS[signal](items)));
      const body = zlib.gzipSync(json, { level: 9 });
      const diskBefore = dirBytes(server.dataDir);
      // The largest growth of RSS during one request over the RSS before it:
      // what one request made the server hold (the engine's buffers of rows
      // written before it are already in its start).
      let roundStart = server.rssBytes();
      let peakRss = roundStart;
      let rssGrowth = 0;
      const sampler = setInterval(() => { peakRss = Math.max(peakRss, server.rssBytes() ?? 0); }, 5);
      try {
        for (let round = 0; round < ROUNDS; round++) {
          roundStart = server.rssBytes();
          peakRss = roundStart;
          const res = await request(`${server.otlpUrl}/v1/${signal}`, {
            method: 'POST',
            body,
            timeoutMs: 60_000,
            headers: {
              Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', 'Content-Encoding': 'gzip',
              'Content-Length': body.length,
            },
          });
          peakRss = Math.max(peakRss, server.rssBytes() ?? 0);
          rssGrowth = Math.max(rssGrowth, peakRss - roundStart);
          const text = res.body.toString();
          assert.equal(res.status, status, `${signal} round ${round}: ${text.slice(0, 300)}`);
          if (status === 413) {
            assert.match(JSON.parse(text).message, /smaller requests/);
            continue;
          }
          // Nothing rejected; the cut service names are reported.
          const partial = JSON.parse(text).partialSuccess;
          assert.ok(partial, `the cut is reported: ${text}`);
          assert.equal(Object.entries(partial).find(([k]) => k.startsWith('rejected'))[1], '0');
          assert.match(partial.errorMessage, /service name cut to 256 bytes \(--max-service-name-bytes\)/);
        }
      } finally {
        clearInterval(sampler);
      }
      const diskGrowth = dirBytes(server.dataDir) - diskBefore;
      // Decoding's own bound, plus what the engine keeps of one request's rows
      // (DuckDB buffers them until a checkpoint): 32 MiB at most.
      const decodeBound = 16 * json.length + 4 * MiB;
      console.log(`# ${signal} x${items}: ${body.length} B gzipped, ${json.length} B decompressed; ` +
        `peak RSS growth in one request +${(rssGrowth / MiB).toFixed(1)} MiB, disk +${(diskGrowth / MiB).toFixed(1)} MiB over ${ROUNDS} requests`);
      assert.ok(rssGrowth < decodeBound + 32 * MiB,
        `RSS grew ${(rssGrowth / MiB).toFixed(1)} MiB in one request (bound ${((decodeBound + 32 * MiB) / MiB).toFixed(1)} MiB)`);
      // Each row carries at most 256 bytes of service name: the WAL stays a
      // small multiple of the decompressed bytes (it was 125 MB per request).
      assert.ok(diskGrowth < ROUNDS * (8 * json.length) + 16 * MiB,
        `data grew ${(diskGrowth / MiB).toFixed(1)} MiB for ${ROUNDS} x ${json.length} decompressed bytes`);
    });
  }

  it('every item was stored', async () => {
    const h = await server.deepHealth();
    assert.equal(h.rows.logs, ROUNDS * 2000);
    assert.equal(h.rows.spans, ROUNDS * 22000);
    assert.equal(h.rows.metric_points, ROUNDS * 22000);
  });

  // Stored per series, each request below would write 5,000 x 512 KiB = 2.6 GB;
  // the resource is stored once (metric_resources), so the data directory
  // grows by a small multiple of the request, as for the other signals.
  const SERIES = 5000;
  it(`metrics: a 512 KiB resource over ${SERIES} new series, ${ROUNDS} times -> 200`, async () => {
    const before = await server.deepHealth();
    const diskBefore = dirBytes(server.dataDir);
    let rssGrowth = 0;
    let largest = 0;
    let gzipped = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const json = Buffer.from(JSON.stringify(BIG_RESOURCE_SERIES(SERIES, round)));
      const body = zlib.gzipSync(json, { level: 9 });
      largest = Math.max(largest, json.length);
      gzipped = body.length;
      const roundStart = server.rssBytes();
      let peakRss = roundStart;
      const sampler = setInterval(() => { peakRss = Math.max(peakRss, server.rssBytes() ?? 0); }, 5);
      let res;
      try {
        res = await request(`${server.otlpUrl}/v1/metrics`, {
          method: 'POST',
          body,
          timeoutMs: 60_000,
          headers: {
            Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', 'Content-Encoding': 'gzip',
            'Content-Length': body.length,
          },
        });
      } finally {
        clearInterval(sampler);
      }
      peakRss = Math.max(peakRss, server.rssBytes() ?? 0);
      rssGrowth = Math.max(rssGrowth, peakRss - roundStart);
      const text = res.body.toString();
      assert.equal(res.status, 200, `round ${round}: ${text.slice(0, 300)}`);
      const partial = JSON.parse(text).partialSuccess;
      assert.ok(!partial || Object.entries(partial).every(([k, v]) => !k.startsWith('rejected') || v === '0'),
        `nothing rejected: ${text}`);
    }
    const diskGrowth = dirBytes(server.dataDir) - diskBefore;
    const after = await server.deepHealth();
    assert.equal(after.metric_series - before.metric_series, ROUNDS * SERIES);
    assert.equal(after.rows.metric_points - before.rows.metric_points, ROUNDS * SERIES);
    const decodeBound = 16 * largest + 4 * MiB;
    console.log(`# metrics, 512 KiB resource x ${SERIES} series: ${gzipped} B gzipped, ${largest} B decompressed; ` +
      `peak RSS growth in one request +${(rssGrowth / MiB).toFixed(1)} MiB, disk +${(diskGrowth / MiB).toFixed(1)} MiB over ${ROUNDS} requests`);
    assert.ok(rssGrowth < decodeBound + 32 * MiB,
      `RSS grew ${(rssGrowth / MiB).toFixed(1)} MiB in one request (bound ${((decodeBound + 32 * MiB) / MiB).toFixed(1)} MiB)`);
    assert.ok(diskGrowth < ROUNDS * (8 * largest) + 16 * MiB,
      `data grew ${(diskGrowth / MiB).toFixed(1)} MiB for ${ROUNDS} x ${largest} decompressed bytes`);
  });
});
