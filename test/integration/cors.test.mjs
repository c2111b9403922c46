// CORS on the ingest paths (docs/API.md "CORS"), as a browser would see it
// on the wire: preflights from an allowed and another origin, the allowed
// origin on every answer of an export (success, and errors answered before or
// while the body is read, closing or not), never a CORS header on the read
// API or the UI, nothing at all without --cors-allowed-origins, and a start
// refused for `*`. The real browser is in test/browser/cors.test.mjs.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { BIN, HOST, TOKEN, makeTempDir, request, startServer } from './lib/server.mjs';
import { RawConnection, chunk } from './lib/raw_http.mjs';
import { encodeTraceRequestProto, makeRunTag, makeSpanBatch } from './lib/otlp.mjs';

const ORIGIN = 'http://127.0.0.1:5173';
const OTHER = 'http://127.0.0.1:5174';
const PROTO = 'application/x-protobuf';
const MAX_BODY = 64 * 1024;
const runTag = makeRunTag();

const preflightHeaders = (origin) => ({
  Origin: origin,
  'Access-Control-Request-Method': 'POST',
  'Access-Control-Request-Headers': 'authorization,content-type',
});

function corsHeaders(headers) {
  return Object.keys(headers).filter((k) => k.startsWith('access-control-'));
}

function assertAllowed(res, what) {
  assert.equal(res.headers['access-control-allow-origin'], ORIGIN, `${what}: Access-Control-Allow-Origin`);
  assert.equal(res.headers['access-control-expose-headers'], 'Retry-After', `${what}: Retry-After exposed`);
  assert.equal(res.headers.vary, 'Origin', `${what}: Vary`);
}

function spans(n = 2) {
  return encodeTraceRequestProto(makeSpanBatch(runTag, 1, n));
}

function post(server, { origin = ORIGIN, token = TOKEN, contentType = PROTO, body = spans(), headers = {},
  url = `${server.otlpUrl}/v1/traces` } = {}) {
  return request(url, {
    method: 'POST', body,
    headers: { Origin: origin, Authorization: `Bearer ${token}`, 'Content-Type': contentType,
      'Content-Length': body.length, ...headers },
  });
}

describe('CORS on the ingest paths with --cors-allowed-origins', { timeout: 120_000 }, () => {
  let server;
  before(async () => {
    server = await startServer({
      args: ['--cors-allowed-origins', `${ORIGIN},https://app.example.com`, '--max-body-bytes', String(MAX_BODY),
        '--max-inflight-requests', '1', '--body-timeout-ms', '1500', '--min-body-bytes-per-second', '0'],
    });
  });
  after(async () => { await server?.stop(); });

  it('a preflight from an allowed origin gets 204 with the exporters\' headers, on every ingest path', async () => {
    const conn = await RawConnection.open(server.otlpPort);
    const apiConn = await RawConnection.open(server.apiPort);
    try {
      const paths = [[conn, '/v1/traces'], [conn, '/v1/logs'], [conn, '/v1/metrics'],
        [apiConn, '/api/otel/v1/traces'], [apiConn, '/api/otel/v1/logs'], [apiConn, '/api/otel/v1/metrics']];
      for (const [c, p] of paths) {
        const res = await c.request('OPTIONS', p, { headers: preflightHeaders(ORIGIN) });
        assert.ok(res, `${p}: an answer on the same connection`);
        assert.equal(res.status, 204, p);
        assert.equal(res.headers['access-control-allow-origin'], ORIGIN, p);
        assert.equal(res.headers.vary, 'Origin', p);
        assert.equal(res.headers['access-control-allow-methods'], 'POST', p);
        const allowed = res.headers['access-control-allow-headers'].toLowerCase().split(/\s*,\s*/);
        for (const h of ['authorization', 'content-type', 'content-encoding']) assert.ok(allowed.includes(h), `${p}: ${h}`);
        assert.ok(Number(res.headers['access-control-max-age']) > 0, p);
        assert.equal(res.headers['access-control-allow-credentials'], undefined, p);
        assert.equal(res.body.length, 0, p);
      }
      assert.equal(conn.closed, false, 'a preflight keeps the connection');
    } finally {
      conn.destroy();
      apiConn.destroy();
    }
  });

  it('a preflight from another origin gets 403 and no CORS header; a non-preflight OPTIONS stays 405', async () => {
    const other = await request(`${server.otlpUrl}/v1/traces`, { method: 'OPTIONS', headers: preflightHeaders(OTHER) });
    assert.equal(other.status, 403);
    assert.deepEqual(corsHeaders(other.headers), []);
    const plain = await request(`${server.otlpUrl}/v1/traces`, { method: 'OPTIONS', headers: { Origin: ORIGIN } });
    assert.equal(plain.status, 405);
    assert.equal(plain.headers.allow, 'POST');
  });

  it('an export answer carries the allowed origin: 200, and none for another origin or none given', async () => {
    const ok = await post(server);
    assert.equal(ok.status, 200, ok.body.toString());
    assertAllowed(ok, '200');
    const viaApi = await post(server, { url: `${server.apiUrl}/api/otel/v1/traces` });
    assert.equal(viaApi.status, 200);
    assertAllowed(viaApi, '200 on the API port');
    const other = await post(server, { origin: OTHER });
    assert.equal(other.status, 200);
    assert.deepEqual(corsHeaders(other.headers), []);
    const none = await request(`${server.otlpUrl}/v1/traces`, {
      method: 'POST', body: spans(), headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': PROTO },
    });
    assert.equal(none.status, 200);
    assert.deepEqual(corsHeaders(none.headers), []);
  });

  it('errors answered before the body is read carry it too: 401, 403 (read token), 413, 415', async () => {
    const cases = [
      ['401', { token: 'wrong-token' }, 401],
      ['403', { token: server.readToken }, 403],
      ['415', { contentType: 'text/plain' }, 415],
      ['413', { body: Buffer.alloc(MAX_BODY + 1) }, 413],
    ];
    for (const [what, opts, status] of cases) {
      const res = await post(server, opts);
      assert.equal(res.status, status, `${what}: ${res.body.toString()}`);
      assert.equal(res.headers.connection, 'close', `${what} closes the connection`);
      assertAllowed(res, what);
    }
  });

  it('a 503 from the full gate and one from a stalled body carry it, with Retry-After readable', async () => {
    // The one admitted request holds the gate while its chunked body stalls.
    const holder = await RawConnection.open(server.otlpPort);
    try {
      await holder.write(`POST /v1/traces HTTP/1.1\r\nHost: ${HOST}\r\nOrigin: ${ORIGIN}\r\n`
        + `Authorization: Bearer ${TOKEN}\r\nContent-Type: ${PROTO}\r\nTransfer-Encoding: chunked\r\n\r\n`);
      await holder.write(chunk(Buffer.from([0x0a])));
      // Up to 3 s: on a loaded box the server may take over a second to read the holder's headers.
      let full;
      for (let i = 0; i < 60; i++) {
        full = await post(server);
        if (full.status === 503) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.equal(full.status, 503, 'the gate is full');
      assert.ok(Number(full.headers['retry-after']) >= 1);
      assertAllowed(full, '503 before the body');

      const stalled = await holder.readResponse({ timeoutMs: 5000 });
      assert.ok(stalled, 'the stalled body is answered');
      assert.equal(stalled.status, 503, 'past --body-timeout-ms');
      assert.equal(stalled.headers['access-control-allow-origin'], ORIGIN);
      assert.equal(stalled.headers['access-control-expose-headers'], 'Retry-After');
      assert.ok(await holder.waitClosed(5000), 'and the connection closed');
    } finally {
      holder.destroy();
    }
  });

  it('the read API and the UI never carry a CORS header, preflight or not', async () => {
    const get = await request(`${server.apiUrl}/api/v1/services`, {
      headers: { Origin: ORIGIN, Authorization: `Bearer ${server.readToken}` },
    });
    assert.equal(get.status, 200, get.body.toString());
    assert.deepEqual(corsHeaders(get.headers), []);
    const pre = await request(`${server.apiUrl}/api/v1/services`, {
      method: 'OPTIONS', headers: preflightHeaders(ORIGIN),
    });
    assert.notEqual(pre.status, 204);
    assert.deepEqual(corsHeaders(pre.headers), []);
    const login = await request(`${server.apiUrl}/api/v1/login`, {
      method: 'POST', body: '{}', headers: { Origin: ORIGIN, 'Content-Type': 'application/json' },
    });
    assert.deepEqual(corsHeaders(login.headers), []);
    for (const url of [`${server.apiUrl}/`, `${server.apiUrl}/metrics`, `${server.otlpUrl}/healthz`]) {
      const r = await request(url, { headers: { Origin: ORIGIN } });
      assert.deepEqual(corsHeaders(r.headers), [], url);
    }
  });
});

describe('without --cors-allowed-origins', { timeout: 60_000 }, () => {
  it('a preflight gets 405 and an export no CORS header', async () => {
    const server = await startServer();
    try {
      const pre = await request(`${server.otlpUrl}/v1/traces`, { method: 'OPTIONS', headers: preflightHeaders(ORIGIN) });
      assert.equal(pre.status, 405);
      assert.deepEqual(corsHeaders(pre.headers), []);
      const ok = await post(server);
      assert.equal(ok.status, 200);
      assert.deepEqual(corsHeaders(ok.headers), []);
      assert.equal(ok.headers.vary, undefined);
    } finally {
      await server.stop();
    }
  });

  it('a start with `*`, `null` or a URL with a path is refused, naming the flag', async () => {
    const dir = await makeTempDir('sightline-it-cors-');
    try {
      for (const bad of ['*', 'null', 'https://app.example.com/app']) {
        const r = spawnSync(BIN, ['serve', '--data', path.join(dir, 'data'), '--otlp-http', `${HOST}:0`,
          '--otlp-grpc', '', '--listen', `${HOST}:0`], {
          encoding: 'utf8', timeout: 30_000, env: { ...process.env, SIGHTLINE_CORS_ALLOWED_ORIGINS: bad },
        });
        assert.equal(r.status, 2, `${bad}: ${r.stderr}`);
        assert.match(r.stderr, /--cors-allowed-origins/, bad);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
