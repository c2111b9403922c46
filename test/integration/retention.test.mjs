// Retention on a running server, for each engine: spans older than their
// retention are deleted in whole hours by the maintenance pass, newer ones
// stay, and the space of deleted rows is reused: over rounds of fill (spans
// three hours old), expire (`sightline project retention ... 1h` while
// the server runs) and refill, the database file stays at about the size of
// the first fill. The per-project override is also what /api/v1/projects
// shows.
//
// SIGHTLINE_IT_RETENTION_REQUESTS scales the fill (default 64 requests of
// 1,000 spans a round); the figures in docs/BENCHMARKS.md come from this test
// at a larger scale. Below about 50k spans a round DuckDB's fixed cost per
// table (a few 256 KiB blocks each, which a delete's checkpoint rewrites)
// outweighs what expiry frees, and the live bytes need not fall.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';

import { BIN, ENGINES, HEX, TOKEN, request, sleep, startServer } from './lib/server.mjs';
import { encodeTraceRequestProto, gzip, makeRunTag, makeSpanBatch } from './lib/otlp.mjs';
import { apiOk } from './lib/api.mjs';

const ROUNDS = 4;
const REQUESTS = Number(process.env.SIGHTLINE_IT_RETENTION_REQUESTS || 64);
const SPANS_PER_REQUEST = 1000;
const FRESH_SPANS = 200;
const HOUR_NS = 3_600_000_000_000n;
const WAIT_MS = 60_000;

function cli(...args) {
  return new Promise((resolve) => {
    execFile(BIN, args, { timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr });
    });
  });
}

async function send(server, agent, batch) {
  const body = gzip(encodeTraceRequestProto(batch));
  const res = await request(`${server.otlpUrl}/v1/traces`, {
    method: 'POST', body, agent, timeoutMs: 60_000,
    headers: {
      Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/x-protobuf',
      'Content-Encoding': 'gzip', 'Content-Length': body.length,
    },
  });
  assert.equal(res.status, 200, `export: HTTP ${res.status} ${res.body.toString().slice(0, 300)}`);
}

//! Polls the deep health until `pred(health)` holds; returns that health.
async function waitHealth(server, pred, what) {
  const deadline = Date.now() + WAIT_MS;
  let last;
  while (Date.now() < deadline) {
    last = await server.deepHealth();
    if (pred(last)) return last;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}; last health: ${JSON.stringify(last)}\n${server.logTail()}`);
}

const mib = (b) => (b / (1 << 20)).toFixed(1);

for (const engine of ENGINES) {
  describe(`retention and space reuse (${engine})`, { timeout: 240_000 }, () => {
    let server;
    const runTag = makeRunTag();
    const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });

    before(async () => {
      server = await startServer({
        engine,
        args: [
          '--maintenance-interval-ms', '200',
          // Small enough that the spans reach the database file, not only the WAL.
          '--duckdb-checkpoint-threshold', '4MB',
          '--min-free-disk-bytes', '0',
        ],
      });
    });
    after(async () => {
      agent.destroy();
      await server?.cleanup();
    });

    it('deletes expired hours, keeps the rest, and reuses the space over fill/expire/refill rounds', async () => {
      const now = BigInt(Date.now()) * 1_000_000n;
      const fresh = makeSpanBatch(runTag, 0, FRESH_SPANS, { service: 'it-fresh', baseNs: now });
      await send(server, agent, fresh);

      const rows = [];
      let requestNo = 1;
      for (let round = 0; round < ROUNDS; round++) {
        // Fill: spans three hours old, kept while the project's retention is the server's (forever).
        const oldBase = now - 3n * HOUR_NS;
        for (let i = 0; i < REQUESTS; i += 2) {
          await Promise.all([0, 1].map((k) => send(server, agent,
            makeSpanBatch(runTag, requestNo + k, SPANS_PER_REQUEST, { service: 'it-old', baseNs: oldBase }))));
          requestNo += 2;
        }
        const want = FRESH_SPANS + REQUESTS * SPANS_PER_REQUEST;
        // A maintenance pass after the fill, so the sizes are read after its checkpoint.
        const passes = (await server.deepHealth()).maintenance.passes;
        const filled = await waitHealth(server, (h) => h.rows.spans === want && h.maintenance.passes >= passes + 2,
          `round ${round}: ${want} spans stored`);

        // Expire: one hour for this project's spans, set while the server runs.
        let out = await cli('project', 'retention', '--project', 'default', '--signal', 'spans', '1h',
          '--data', server.dataDir);
        assert.equal(out.code, 0, out.stderr);
        const projects = await apiOk(server, 'projects');
        assert.deepEqual(projects.projects[0].retention.spans, { seconds: 3600, source: 'project' });
        assert.deepEqual(projects.projects[0].retention.logs, { seconds: null, source: 'server' });
        const expired = await waitHealth(server, (h) => h.rows.spans === FRESH_SPANS,
          `round ${round}: the old spans deleted`);
        const after = await waitHealth(server, (h) => h.maintenance.passes >= expired.maintenance.passes + 2,
          'a pass after the delete');
        out = await cli('project', 'retention', '--project', 'default', '--signal', 'spans', 'default',
          '--data', server.dataDir);
        assert.equal(out.code, 0, out.stderr);
        assert.ok(after.maintenance.retention_deleted.spans >= (round + 1) * REQUESTS * SPANS_PER_REQUEST);
        rows.push({
          round,
          filled: filled.database_bytes + filled.wal_bytes,
          expired: after.database_bytes + after.wal_bytes,
          live: after.maintenance.live_bytes,
          liveFilled: filled.maintenance.live_bytes,
        });
      }
      const m = (await server.deepHealth()).maintenance;
      console.log(`# ${engine}: ${REQUESTS * SPANS_PER_REQUEST} spans a round; bytes on disk (database + WAL); `
        + `longest delete ${m.longest_delete_seconds.toFixed(3)} s, longest reclaim ${m.longest_reclaim_seconds.toFixed(3)} s`);
      for (const r of rows) {
        console.log(`#   round ${r.round}: filled ${mib(r.filled)} MiB, after expiry ${mib(r.expired)} MiB `
          + `(live ${mib(r.live)} MiB)`);
      }
      // The first fill sets the size; every later one reuses the freed space.
      // Without reuse round r would hold r + 1 fills; the WAL's size at the
      // moment of the sample varies by a few MiB, hence the margin.
      const first = rows[0].filled;
      for (const r of rows.slice(1)) {
        assert.ok(r.filled <= first * 1.5 + (2 << 20),
          `round ${r.round} filled ${r.filled} bytes, the first ${first}: the freed space was not reused`);
      }
      // Expiry frees space for reuse: the live bytes fall (at this small a
      // scale a fixed overhead of metadata and resource rows remains).
      for (const r of rows) {
        assert.ok(r.live < r.liveFilled, `round ${r.round}: live bytes ${r.liveFilled} after the fill, ${r.live} after expiry`);
      }

      // The fresh spans are all there, through the API and in the tables.
      const search = await apiOk(server, 'traces', { service: 'it-fresh', limit: 500 });
      assert.equal(search.traces.length, FRESH_SPANS / 8, JSON.stringify(search).slice(0, 300));
      await server.stop();
      const stored = await server.sql(`SELECT service_name, COUNT(*) AS n FROM spans GROUP BY 1 ORDER BY 1`);
      assert.deepEqual(stored.objects, [{ service_name: 'it-fresh', n: String(FRESH_SPANS) }]);
      const ids = await server.sql(`SELECT ${HEX.span_id} AS id FROM spans`);
      assert.deepEqual(new Set(ids.objects.map((o) => o.id)), new Set(fresh.spanIds));
    });
  });
}
