// kill -9 in the middle of sustained ingest loses nothing that was
// acknowledged: after a restart on the same data dir, every span of every 2xx
// request is stored, for each engine.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';

import { ENGINES, HEX, TOKEN, request, sleep, startServer } from './lib/server.mjs';
import { encodeTraceRequestProto, gzip, makeRunTag, makeSpanBatch } from './lib/otlp.mjs';

const SENDERS = 6;
const SPANS_PER_REQUEST = 200;
const KILL_AFTER_MS = 4000;        // ingest this long, then kill -9
const MIN_ACKS_BEFORE_KILL = 10;
const AFTER_RESTART_MS = 1500;     // ingest this long after the restart
const PHASE_DEADLINE_MS = 15_000;

/**
 * Runs SENDERS concurrent senders against `server` until stop() says so.
 * Records acknowledged span ids in `acked`; a transport error ends a sender
 * (expected once the server is killed).
 */
function startSenders(server, runTag, state) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: SENDERS });
  const url = `${server.otlpUrl}/v1/traces`;
  let stopping = false;
  const sender = async () => {
    while (!stopping) {
      const n = state.next++;
      const batch = makeSpanBatch(runTag, n, SPANS_PER_REQUEST, { service: 'it-crash' });
      const body = gzip(encodeTraceRequestProto(batch));
      state.sent.set(n, batch.spanIds);
      let res;
      try {
        res = await request(url, {
          method: 'POST', body, agent, timeoutMs: 20_000,
          headers: {
            Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/x-protobuf',
            'Content-Encoding': 'gzip', 'Content-Length': body.length,
          },
        });
      } catch (err) {
        state.transportErrors.push(`request ${n}: ${err.code ?? ''} ${err.message}`);
        return;
      }
      if (res.status === 200) {
        state.acked.set(n, batch.spanIds);
      } else if (res.status === 503) {
        await sleep(50);
      } else {
        state.httpErrors.push(`request ${n}: HTTP ${res.status} ${res.body.toString().slice(0, 200)}`);
        return;
      }
    }
  };
  const done = Promise.all(Array.from({ length: SENDERS }, sender)).finally(() => agent.destroy());
  return { done, stop: () => { stopping = true; } };
}

for (const engine of ENGINES) {
  describe(`kill -9 during ingest (${engine})`, { timeout: 120_000 }, () => {
    let server;
    const runTag = makeRunTag();
    const state = { next: 0, sent: new Map(), acked: new Map(), transportErrors: [], httpErrors: [] };
    let ackedBeforeKill = 0;

    before(async () => { server = await startServer({ engine }); });
    after(async () => { await server?.cleanup(); });

    it('ingests from concurrent senders, then is killed with SIGKILL', async (t) => {
      const senders = startSenders(server, runTag, state);
      const started = Date.now();
      while (Date.now() - started < KILL_AFTER_MS
        || (state.acked.size < MIN_ACKS_BEFORE_KILL && Date.now() - started < PHASE_DEADLINE_MS)) {
        if (state.httpErrors.length || state.transportErrors.length) break;
        await sleep(50);
      }
      const exit = await server.kill9();
      assert.equal(exit.signal, 'SIGKILL', 'the server died by SIGKILL');
      senders.stop();
      await senders.done;
      ackedBeforeKill = state.acked.size;
      t.diagnostic(`${state.next} requests sent, ${ackedBeforeKill} acknowledged before the kill`);
      assert.deepEqual(state.httpErrors, [], 'no HTTP errors besides 503 before the kill');
      assert.ok(ackedBeforeKill >= MIN_ACKS_BEFORE_KILL,
        `only ${ackedBeforeKill} requests acknowledged before the kill; transport errors: ${state.transportErrors.slice(0, 3)}`);
    });

    it('restarts on the same data dir with the acknowledged spans, and ingests again', async () => {
      state.transportErrors.length = 0;
      await server.restart();
      const health = await server.deepHealth();
      const ackedSpans = [...state.acked.values()].reduce((n, ids) => n + ids.length, 0);
      assert.ok(health.rows.spans >= ackedSpans,
        `after restart deep health counts ${health.rows.spans} spans < ${ackedSpans} acknowledged`);
      const senders = startSenders(server, runTag, state);
      await sleep(AFTER_RESTART_MS);
      senders.stop();
      await senders.done;
      assert.deepEqual(state.httpErrors, [], 'no HTTP errors besides 503 after the restart');
      assert.deepEqual(state.transportErrors, [], 'no transport errors after the restart');
      assert.ok(state.acked.size > ackedBeforeKill, 'requests are acknowledged after the restart');
    });

    it('stops cleanly; every acknowledged span is stored, once', async (t) => {
      await server.stop();
      const out = await server.sql(`SELECT ${HEX.span_id} FROM spans`);
      const stored = out.rows.map((r) => r[0]);
      const storedSet = new Set(stored);
      assert.equal(storedSet.size, stored.length, 'no span stored twice');
      const ackedIds = [...state.acked.values()].flat();
      const missing = ackedIds.filter((id) => !storedSet.has(id));
      const lostRequests = [...state.acked.entries()].filter(([, ids]) => ids.some((id) => !storedSet.has(id)))
        .map(([n]) => n);
      assert.deepEqual(missing.slice(0, 10), [],
        `${missing.length} acknowledged spans lost, from requests ${lostRequests.slice(0, 20)}`);
      const sentIds = new Set([...state.sent.values()].flat());
      const unknown = stored.filter((id) => !sentIds.has(id));
      assert.deepEqual(unknown.slice(0, 10), [], 'stored spans that were never sent');
      t.diagnostic(`${ackedIds.length} acknowledged spans, ${stored.length} stored`);
    });
  });
}
