// Hygiene (docs/SECURITY.md "Hygiene"): the data directory and its files are
// the owner's alone, HEAD answers headers only, the UI and API carry browser
// protections, /metrics and the deep health check can require a credential,
// and a first start that fails mints no credentials it cannot show.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { BIN, ENGINES, HOST, Server, TOKEN, makeTempDir, request, startServer } from './lib/server.mjs';
import { RawConnection } from './lib/raw_http.mjs';
import { encodeTraceRequestProto, makeRunTag, makeSpanBatch } from './lib/otlp.mjs';
import { api, login } from './lib/api.mjs';

const PROTO = 'application/x-protobuf';
const ADMIN_PASSWORD = 'hygiene-admin-pw';
const runTag = makeRunTag();

function postSpans(server, n, token = TOKEN) {
  const body = encodeTraceRequestProto(makeSpanBatch(runTag, n, 3));
  return request(`${server.otlpUrl}/v1/traces`, {
    method: 'POST', body,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': PROTO, 'Content-Length': body.length },
  });
}

//! Every file and directory under `root` (itself included) with its permission bits.
function modes(root) {
  const out = [{ path: root, dir: true, mode: fs.statSync(root).mode & 0o777 }];
  for (const entry of fs.readdirSync(root, { withFileTypes: true })) {
    const p = path.join(root, entry.name);
    if (entry.isDirectory()) out.push(...modes(p));
    else out.push({ path: p, dir: false, mode: fs.statSync(p).mode & 0o777 });
  }
  return out;
}

function assertPrivate(dataDir, when) {
  const all = modes(dataDir);
  const loose = all.filter((e) => e.mode !== (e.dir ? 0o700 : 0o600));
  assert.deepEqual(loose.map((e) => `${e.path} ${e.mode.toString(8)}`), [], `${when}: modes other than 0700/0600`);
  assert.ok(all.some((e) => e.path.endsWith('state.sqlite')), `${when}: state.sqlite is there`);
  return all.filter((e) => !e.dir).map((e) => path.basename(e.path));
}

describe('hygiene: the data directory is the owner\'s alone', { timeout: 120_000 }, () => {
  for (const engine of ENGINES) {
    it(`${engine}: a new data dir is 0700 and every file in it 0600, running and stopped`, async (t) => {
      const server = await startServer({ engine, createDataDir: false });
      try {
        assert.equal((await postSpans(server, 1)).status, 200);
        const running = assertPrivate(server.dataDir, 'running');
        await server.stop();
        const stopped = assertPrivate(server.dataDir, 'stopped');
        t.diagnostic(`files: running ${running.join(' ')}; stopped ${stopped.join(' ')}`);
        assert.ok(running.length >= 2, 'the engine and the state store made files');
      } finally {
        await server.cleanup();
      }
    });
  }

  it('`sightline token create` on a new data dir makes it private too', async () => {
    const dir = await makeTempDir('sightline-it-token-dir-');
    try {
      const dataDir = path.join(dir, 'data');
      const r = spawnSync(BIN, ['token', 'create', '--project', 'p', '--data', dataDir], { encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.status, 0, r.stderr);
      assertPrivate(dataDir, 'after token create');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('hygiene: HTTP', { timeout: 60_000 }, () => {
  let server;
  before(async () => { server = await startServer({ env: { SIGHTLINE_ADMIN_PASSWORD: ADMIN_PASSWORD } }); });
  after(async () => { await server?.cleanup(); });

  it('HEAD answers headers only, so the next response on the connection is intact', async () => {
    for (const port of [server.apiPort, server.otlpPort]) {
      const c = await RawConnection.open(port);
      try {
        const head = await c.request('HEAD', '/healthz');
        assert.equal(head?.status, 200, `HEAD /healthz on ${port}`);
        assert.equal(head.body.length, 0);
        const get = await c.request('GET', '/healthz');
        assert.equal(get?.status, 200, 'the GET after a HEAD is read as its own response');
        assert.deepEqual(JSON.parse(get.body.toString()), { status: 'ok' });
        assert.equal(head.headers['content-length'], get.headers['content-length'], 'HEAD announces the GET\'s length');
        assert.equal(c.pending().length, 0, 'no stray bytes after the GET');
      } finally {
        c.destroy();
      }
    }
    const c = await RawConnection.open(server.apiPort);
    try {
      const head = await c.request('HEAD', '/');
      assert.equal(head?.status, 200, 'HEAD / (the UI)');
      assert.ok(Number(head.headers['content-length']) > 0);
      const get = await c.request('GET', '/readyz');
      assert.equal(get?.status, 200);
      assert.equal(c.pending().length, 0);
    } finally {
      c.destroy();
    }
  });

  it('serves the UI with a Content-Security-Policy, nosniff and a referrer policy', async () => {
    const page = await request(`${server.apiUrl}/`);
    assert.equal(page.status, 200);
    assert.match(page.headers['content-type'], /^text\/html/);
    const csp = page.headers['content-security-policy'] ?? '';
    for (const directive of ["script-src 'self'", "frame-ancestors 'none'", "object-src 'none'", "base-uri 'none'"]) {
      assert.ok(csp.includes(directive), `UI CSP has ${directive}: ${csp}`);
    }
    assert.ok(!csp.includes('unsafe'), `no unsafe-* source in the UI's CSP: ${csp}`);
    assert.equal(page.headers['x-content-type-options'], 'nosniff');
    assert.equal(page.headers['referrer-policy'], 'no-referrer');
    assert.equal(page.headers['x-frame-options'], 'DENY');
    // Everything the page runs comes from a file, which the policy allows.
    const html = page.body.toString();
    assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)[^>]*>/, 'no inline script in index.html');
    const script = /<script[^>]*\bsrc="([^"]+)"/.exec(html);
    assert.ok(script, 'index.html loads a script');
    const asset = await request(`${server.apiUrl}${script[1]}`);
    assert.equal(asset.status, 200);
    assert.match(asset.headers['content-type'], /javascript/);
    assert.equal(asset.headers['x-content-type-options'], 'nosniff');
  });

  it('serves API JSON with a policy that loads nothing', async () => {
    for (const res of [await api(server, 'projects'), await api(server, 'projects', {}, { token: null }),
      await request(`${server.apiUrl}/api/v1/no-such-call`)]) {
      assert.match(res.headers['content-type'], /^application\/json/);
      assert.match(res.headers['content-security-policy'] ?? '', /default-src 'none'/);
      assert.match(res.headers['content-security-policy'] ?? '', /frame-ancestors 'none'/);
      assert.equal(res.headers['x-content-type-options'], 'nosniff');
    }
  });
  it('leaves /metrics and the deep health check open by default', async () => {
    assert.equal((await request(`${server.apiUrl}/metrics`)).status, 200);
    assert.equal((await request(`${server.apiUrl}/api/health/deep`)).status, 200);
  });
});

describe('hygiene: --metrics-require-auth', { timeout: 60_000 }, () => {
  let server;
  before(async () => {
    server = await startServer({ args: ['--metrics-require-auth'], env: { SIGHTLINE_ADMIN_PASSWORD: ADMIN_PASSWORD } });
  });
  after(async () => { await server?.cleanup(); });

  it('answers /metrics and /api/health/deep only with a session or a read token', async () => {
    const session = await login(server, 'admin', ADMIN_PASSWORD);
    assert.equal(session.status, 200);
    for (const p of ['/metrics', '/api/health/deep']) {
      const url = `${server.apiUrl}${p}`;
      const anonymous = await request(url);
      assert.equal(anonymous.status, 401, `${p} without a credential`);
      assert.match(anonymous.body.toString(), /metrics-require-auth/);
      assert.equal((await request(url, { headers: { Authorization: 'Bearer not-a-token' } })).status, 401,
        `${p} with a wrong token`);
      assert.equal((await request(url, { headers: { Cookie: 'sl_session=forged' } })).status, 401,
        `${p} with a forged session`);
      assert.equal((await request(url, { headers: { Authorization: `Bearer ${TOKEN}` } })).status, 401,
        `${p} with an ingest token (it cannot read)`);
      assert.equal((await request(url, { headers: { Authorization: `Bearer ${server.readToken}` } })).status, 200,
        `${p} with a read token`);
      assert.equal((await request(url, { headers: { Cookie: session.cookie } })).status, 200, `${p} with a session`);
    }
    for (const p of ['/healthz', '/readyz']) {
      assert.equal((await request(`${server.apiUrl}${p}`)).status, 200, `${p} stays open`);
      assert.equal((await request(`${server.otlpUrl}${p}`)).status, 200, `${p} stays open on the OTLP port`);
    }
  });
});

describe('hygiene: first-start credentials', { timeout: 90_000 }, () => {
  it('a first start that fails mints nothing; the next start mints them and prints them', async (t) => {
    const blocker = net.createServer();
    await new Promise((resolve) => blocker.listen(0, HOST, resolve));
    const dir = await makeTempDir('sightline-it-first-start-');
    const dataDir = path.join(dir, 'data');
    const env = { ...process.env };
    delete env.SIGHTLINE_INGEST_TOKEN;
    delete env.SIGHTLINE_ADMIN_PASSWORD;
    let server;
    try {
      // The API port is taken: the start fails after the state store and the
      // engine opened, where credentials used to be minted already.
      const failed = spawnSync(BIN, ['serve', '--data', dataDir, '--otlp-http', `${HOST}:0`, '--otlp-grpc', `${HOST}:0`,
        '--listen', `${HOST}:${blocker.address().port}`], { env, timeout: 60_000, encoding: 'utf8' });
      t.diagnostic(`failed start: exit ${failed.status}: ${(failed.stderr + failed.stdout).trim().split('\n').pop()}`);
      assert.notEqual(failed.status, 0, 'the start fails');
      assert.match(failed.stderr + failed.stdout, /cannot listen/);
      assert.doesNotMatch(failed.stdout, /Ingest token|UI login/, 'a failed start prints no credentials');

      server = new Server({ engine: 'duckdb', dir, dataDir, args: [], env: { SIGHTLINE_INGEST_TOKEN: '' } });
      await server.start();
      const log = fs.readFileSync(server.logPath, 'utf8');
      const token = /Ingest token of project 'default'[^\n]*\n\s*(\S+)/.exec(log)?.[1];
      const password = /UI login: admin \/ (\S+)/.exec(log)?.[1];
      assert.ok(token, `the next start prints the minted token\n${log}`);
      assert.ok(password, `the next start prints the admin password\n${log}`);
      assert.equal((await postSpans(server, 1, token)).status, 200, 'the printed token ingests');
      assert.equal((await login(server, 'admin', password)).status, 200, 'the printed password logs in');
    } finally {
      blocker.close();
      if (server) await server.cleanup();
      else fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
