// Connections (docs/SECURITY.md "Connections"): the cap on open connections
// per listener, the open-file limit raised at start, the accept loop's
// backoff when descriptors run out, the minimum body rate, chunked bodies
// charged as they arrive, and the fair shares of the admission gate between
// projects. Every loop is bounded in count and time; all traffic is loopback.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';

import { BIN, TOKEN, request, sleep, startServer } from './lib/server.mjs';
import { RawConnection, chunk, chunkedPostHead } from './lib/raw_http.mjs';
import { encodeTraceRequestProto, makeRunTag, makeSpanBatch } from './lib/otlp.mjs';

const PROTO = 'application/x-protobuf';
const runTag = makeRunTag();

function postSpans(server, n, { token = TOKEN, spans = 1 } = {}) {
  const body = encodeTraceRequestProto(makeSpanBatch(runTag, n, spans));
  return request(`${server.otlpUrl}/v1/traces`, {
    method: 'POST', body,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': PROTO, 'Content-Length': body.length },
  });
}

async function metricsText(server) {
  const res = await request(`${server.apiUrl}/metrics`);
  assert.equal(res.status, 200);
  return res.body.toString();
}

function metricValue(text, series) {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

function countInLog(server, pattern) {
  const log = fs.readFileSync(server.logPath, 'utf8');
  return log.split('\n').filter((l) => pattern.test(l)).length;
}

//! CPU seconds (user + system) the process has used, from /proc/PID/stat.
function cpuSeconds(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;  // utime, stime in clock ticks (CLK_TCK 100)
}

function mintToken(dataDir, project) {
  return new Promise((resolve, reject) => {
    execFile(BIN, ['token', 'create', '--project', project, '--data', dataDir], { timeout: 30_000 },
      (err, stdout, stderr) => (err ? reject(new Error(`token create: ${stderr}`)) : resolve(stdout.trim())));
  });
}

describe('connections: a cap on open connections per listener', { timeout: 60_000 }, () => {
  const CAP = 16;
  let server;
  before(async () => { server = await startServer({ args: ['--max-connections', String(CAP)] }); });
  after(async () => { await server?.cleanup(); });

  it(`refuses connections past ${CAP} at once, keeps serving the others, and accepts again when they close`, async () => {
    const held = [];
    const extra = [];
    try {
      // Each of the first CAP connections is known to be accepted once it is answered.
      for (let i = 0; i < CAP; i++) {
        const c = await RawConnection.open(server.otlpPort);
        held.push(c);
        const res = await c.request('GET', '/healthz');
        assert.equal(res?.status, 200, `connection ${i} under the cap`);
      }
      for (let i = 0; i < 8; i++) extra.push(await RawConnection.open(server.otlpPort));
      for (const [i, c] of extra.entries()) {
        assert.ok(await c.waitClosed(3000), `connection ${CAP + i} past the cap was closed at once`);
        const text = c.pending().toString();
        assert.ok(text === '' || /^HTTP\/1\.1 503 /.test(text), `past the cap: 503 or a bare close, got ${text.slice(0, 80)}`);
      }
      for (const [i, c] of held.entries()) {
        const res = await c.request('GET', '/healthz');
        assert.equal(res?.status, 200, `held connection ${i} still serves`);
      }
      const apiHealth = await request(`${server.apiUrl}/healthz`);
      assert.equal(apiHealth.status, 200, 'the API port serves /healthz');
      const metrics = await metricsText(server);
      assert.equal(metricValue(metrics, 'sightline_connections_open{listener="otlp"}'), CAP);
      assert.ok(metricValue(metrics, 'sightline_connections_refused_total{listener="otlp"}') >= 8, metrics);
      assert.equal(countInLog(server, /holds its cap of 16 open connections/), 1, 'one log line for the burst');

      for (const c of held.splice(0, 4)) c.destroy();
      const deadline = Date.now() + 5000;
      let res = null;
      while (Date.now() < deadline) {
        const c = await RawConnection.open(server.otlpPort);
        res = await c.request('GET', '/healthz', { timeoutMs: 1000 });
        c.destroy();
        if (res?.status === 200) break;
        await sleep(100);
      }
      assert.equal(res?.status, 200, 'a new connection is served once others closed');
      assert.equal((await postSpans(server, 1)).status, 200, 'and ingest works');
    } finally {
      for (const c of [...held, ...extra]) c.destroy();
    }
  });
});

//! [soft, hard] open-file limits of a process, from /proc/PID/limits.
function openFileLimits(pid) {
  const line = fs.readFileSync(`/proc/${pid}/limits`, 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
  const [soft, hard] = line.slice('Max open files'.length).trim().split(/\s+/);
  return [soft, hard].map((v) => (v === 'unlimited' ? Infinity : Number(v)));
}

describe('connections: the open-file limit is raised at start', { timeout: 60_000 }, () => {
  const SOFT = 200;
  let server;
  before(async () => { server = await startServer({ softUlimitFiles: SOFT }); });
  after(async () => { await server?.cleanup(); });

  it('raises the soft RLIMIT_NOFILE to the hard limit and logs it', async (t) => {
    const [soft, hard] = openFileLimits(server.pid);
    t.diagnostic(`started with soft ${SOFT}; now soft ${soft}, hard ${hard}`);
    assert.ok(hard > SOFT, `the hard limit ${hard} is above the soft limit the test starts with`);
    assert.equal(soft, hard, 'the soft limit was raised to the hard one');
    assert.equal(countInLog(server, new RegExp(`open-file limit: ${hard === Infinity ? '\\d+' : hard}\\b`)), 1);
  });
});

describe('connections: out of descriptors, the accept loop backs off instead of spinning', { timeout: 90_000 }, () => {
  let server;
  before(async () => { server = await startServer({ ulimitFiles: 128 }); });
  after(async () => { await server?.cleanup(); });

  it('uses little CPU while connections wait for descriptors, and recovers when they close', async (t) => {
    const conns = [];
    try {
      for (let i = 0; i < 300; i++) conns.push(await RawConnection.open(server.otlpPort));
      // Let the server take what descriptors it can and hit EMFILE.
      const deadline = Date.now() + 10_000;
      while (countInLog(server, /accept failed on the OTLP port/) === 0 && Date.now() < deadline) await sleep(100);
      assert.equal(countInLog(server, /accept failed on the OTLP port/), 1, `EMFILE logged once\n${server.logTail()}`);
      const before = cpuSeconds(server.pid);
      await sleep(2000);
      const used = cpuSeconds(server.pid) - before;
      t.diagnostic(`server CPU while out of descriptors: ${(used / 2 * 100).toFixed(1)}% of a core`);
      assert.ok(used < 0.5, `the server used ${used.toFixed(2)} s of CPU in 2 s while out of descriptors`);
      assert.equal(countInLog(server, /accept failed on the OTLP port/), 1, 'still one log line, not one per retry');
    } finally {
      for (const c of conns) c.destroy();
    }
    const deadline = Date.now() + 15_000;
    let status = 0;
    while (Date.now() < deadline) {
      try {
        status = (await postSpans(server, 2)).status;
        if (status === 200) break;
      } catch { /* still short of descriptors */ }
      await sleep(200);
    }
    assert.equal(status, 200, 'ingest works again once the connections closed');
    assert.equal((await request(`${server.apiUrl}/healthz`)).status, 200);
    assert.ok(countInLog(server, /the OTLP port accepts connections again/) >= 1, 'recovery is logged');
    assert.ok(server.alive());
  });
});

describe('connections: a minimum body rate', { timeout: 60_000 }, () => {
  const RATE = 2000;     // bytes/s
  const GRACE_MS = 1000;
  let server;
  before(async () => {
    server = await startServer({
      args: ['--min-body-bytes-per-second', String(RATE), '--body-rate-grace-ms', String(GRACE_MS),
        '--body-timeout-ms', '20000'],
    });
  });
  after(async () => { await server?.cleanup(); });

  async function trickle(head, piece, intervalMs) {
    const c = await RawConnection.open(server.otlpPort);
    const started = Date.now();
    await c.write(head);
    const timer = setInterval(() => { c.write(piece); }, intervalMs);
    try {
      const res = await c.readResponse({ timeoutMs: 15_000 });
      return { res, ms: Date.now() - started };
    } finally {
      clearInterval(timer);
      c.destroy();
    }
  }

  it('cuts a chunked body slower than the rate with a retryable 503, long before the body timeout', async (t) => {
    const { res, ms } = await trickle(chunkedPostHead(server.otlpPort, 'traces', TOKEN), chunk(Buffer.alloc(20, 0x61)), 200);
    t.diagnostic(`slow chunked body: ${res?.status} after ${ms} ms`);
    assert.equal(res?.status, 503, `slow chunked body: ${res?.status} ${res?.body}`);
    assert.match(res.headers['retry-after'] ?? '', /^\d+$/, '503 carries Retry-After');
    assert.match(res.body.toString(), /slower than 2000 bytes\/s/);
    assert.ok(ms >= GRACE_MS - 100, `cut after ${ms} ms, before the grace`);
    assert.ok(ms < 6000, `cut after ${ms} ms`);
  });

  it('cuts a declared-length body slower than the rate too', async () => {
    const head = `POST /v1/traces HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\n`
      + `Content-Type: ${PROTO}\r\nContent-Length: 100000\r\n\r\n`;
    const { res, ms } = await trickle(head, Buffer.alloc(20, 0x61), 200);
    assert.equal(res?.status, 503, `slow body: ${res?.status} ${res?.body}`);
    assert.ok(ms < 6000, `cut after ${ms} ms`);
  });

  it('accepts a chunked body that arrives in pieces above the rate', async () => {
    const body = encodeTraceRequestProto(makeSpanBatch(runTag, 100, 200));
    const c = await RawConnection.open(server.otlpPort);
    try {
      await c.write(chunkedPostHead(server.otlpPort, 'traces', TOKEN));
      const pieces = 4;
      const size = Math.ceil(body.length / pieces);
      for (let i = 0; i < pieces; i++) {
        await sleep(400);
        await c.write(chunk(body.subarray(i * size, (i + 1) * size)));
      }
      await c.write(chunk(Buffer.alloc(0)));
      const res = await c.readResponse({ timeoutMs: 10_000 });
      assert.ok(body.length / 1.6 > RATE, 'the test body arrives above the rate');
      assert.equal(res?.status, 200, `chunked body above the rate: ${res?.status} ${res?.body}`);
    } finally {
      c.destroy();
    }
    // The ticket is released after the response is written: poll briefly.
    let health = await server.deepHealth();
    for (let i = 0; i < 40 && health.gate.inflight_bytes !== 0; i++) {
      await sleep(50);
      health = await server.deepHealth();
    }
    assert.equal(health.rows.spans, 200, 'its spans were stored');
    assert.equal(health.gate.inflight_bytes, 0, 'and the gate released every byte charged');
  });
});

describe('connections: one project cannot starve another', { timeout: 90_000 }, () => {
  const SLOTS = 8;
  let server;
  let tokenB;
  before(async () => {
    server = await startServer({
      args: ['--max-inflight-requests', String(SLOTS), '--max-inflight-bytes', String(8 << 20),
        '--min-body-bytes-per-second', '0'],
    });
    tokenB = await mintToken(server.dataDir, 'other');
  });
  after(async () => { await server?.cleanup(); });

  it('holds a flooding project to its share while another sends', async () => {
    assert.equal((await postSpans(server, 1, { token: tokenB })).status, 200, 'B sends first');
    const floods = [];
    try {
      // A opens more slow chunked bodies than the gate has slots.
      for (let i = 0; i < SLOTS; i++) {
        const c = await RawConnection.open(server.otlpPort);
        floods.push(c);
        await c.write(chunkedPostHead(server.otlpPort, 'traces', TOKEN));
        await c.write(chunk(Buffer.alloc(100, 0x61)));
      }
      const answers = await Promise.all(floods.map((c) => c.readResponse({ timeoutMs: 1500 })));
      const refused = answers.filter((r) => r !== null);
      assert.equal(refused.length, SLOTS / 2, `A got half the slots: ${refused.length} of ${SLOTS} refused`);
      for (const r of refused) {
        assert.equal(r.status, 503);
        assert.match(r.body.toString(), /fair share/);
      }
      // B gets its half while A's bodies hang.
      const b = await Promise.all([2, 3, 4, 5].map((n) => postSpans(server, n, { token: tokenB })));
      assert.deepEqual(b.map((r) => r.status), [200, 200, 200, 200], 'B is admitted while A floods');

      // A's chunked bodies are charged as they arrive: a large chunk on one
      // of them takes A past its half of the byte budget.
      const held = floods.filter((_, i) => answers[i] === null);
      await held[0].write(chunk(Buffer.alloc(5 << 20, 0x61)));
      const big = await held[0].readResponse({ timeoutMs: 10_000 });
      assert.equal(big?.status, 503, `A's 5 MiB chunk: ${big?.status} ${big?.body}`);
      assert.match(big.body.toString(), /fair share/);
      assert.equal((await postSpans(server, 6, { token: tokenB, spans: 100 })).status, 200, 'B still gets in');

      const health = await server.deepHealth();
      assert.equal(health.gate.active_projects, 2);
      assert.ok(health.gate.rejected_project_share >= SLOTS / 2 + 1, JSON.stringify(health.gate));
    } finally {
      for (const c of floods) c.destroy();
    }
  });
});

describe('connections: a project that floods first cannot keep another out', { timeout: 90_000 }, () => {
  const SLOTS = 4;
  let server;
  let tokenB;
  before(async () => {
    server = await startServer({
      args: ['--max-inflight-requests', String(SLOTS), '--min-body-bytes-per-second', '1000',
        '--body-rate-grace-ms', '1500'],
    });
    tokenB = await mintToken(server.dataDir, 'other');
  });
  after(async () => { await server?.cleanup(); });

  it('admits B within a few seconds while A reopens every slow body the server cuts', async (t) => {
    let stop = false;
    const open = new Set();
    // A: keep SLOTS slow bodies in flight, reopening each as soon as it ends.
    const floodOne = async () => {
      while (!stop) {
        const c = await RawConnection.open(server.otlpPort);
        open.add(c);
        await c.write(chunkedPostHead(server.otlpPort, 'traces', TOKEN));
        const timer = setInterval(() => { c.write(chunk(Buffer.alloc(10, 0x61))); }, 200);
        await c.readResponse({ timeoutMs: 20_000 });
        clearInterval(timer);
        c.destroy();
        open.delete(c);
        await sleep(50);  // a refused flooder comes back at once, but not in a busy loop
      }
    };
    const floods = Array.from({ length: SLOTS * 2 }, floodOne);
    try {
      await sleep(300);  // A holds every slot
      const started = Date.now();
      let status = 0;
      let tries = 0;
      while (Date.now() - started < 15_000) {
        tries++;
        status = (await postSpans(server, 10 + tries, { token: tokenB })).status;
        if (status === 200) break;
        await sleep(250);
      }
      const ms = Date.now() - started;
      t.diagnostic(`B admitted after ${ms} ms and ${tries} tries`);
      assert.equal(status, 200, `B was kept out for ${ms} ms`);
      assert.ok(ms < 8000, `B waited ${ms} ms`);
    } finally {
      stop = true;
      for (const c of open) c.destroy();
      await Promise.allSettled(floods);
    }
    const health = await server.deepHealth();
    assert.ok(health.gate.rejected_project_share > 0, JSON.stringify(health.gate));
  });
});
