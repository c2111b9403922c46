// Malformed, oversized, slow and unauthenticated OTLP/HTTP requests get the
// right status code, store nothing, and leave the server serving.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import net from 'node:net';
import zlib from 'node:zlib';

import { HEX, HOST, TOKEN, request, startServer } from './lib/server.mjs';
import { encodeTraceRequestProto, encodeTraceRequestJson, makeRunTag, makeSpanBatch } from './lib/otlp.mjs';

const MAX_BODY = 1 << 20;       // --max-body-bytes
const BODY_TIMEOUT_MS = 2000;   // --body-timeout-ms
const PROTO = 'application/x-protobuf';
const JSON_TYPE = 'application/json';

const auth = { Authorization: `Bearer ${TOKEN}` };
const runTag = makeRunTag();
const oneSpan = makeSpanBatch(runTag, 1, 1);
const validProto = encodeTraceRequestProto(oneSpan);
const validJson = encodeTraceRequestJson(oneSpan);

/**
 * A gzip stream that inflates to `inflated` bytes: the first bytes are a valid
 * ExportTraceServiceRequest prefix (an unknown length-delimited field 15 that a
 * protobuf parser skips), the rest zeros inside that field. So the decompressed
 * body is a well-formed request; only its size makes it wrong. Built by
 * streaming deflate, never holding the inflated bytes.
 */
async function gzipBomb(inflated) {
  const payload = inflated - 8;
  const prefix = Buffer.from([0x7a, ...varint(payload)]);  // field 15, wire type 2, length
  const gz = zlib.createGzip({ level: 9, memLevel: 9 });
  const out = [];
  gz.on('data', (c) => out.push(c));
  const done = new Promise((resolve, reject) => { gz.on('end', resolve); gz.on('error', reject); });
  const write = (buf) => new Promise((resolve) => { if (gz.write(buf)) resolve(); else gz.once('drain', resolve); });
  const zeros = Buffer.alloc(1 << 20);
  await write(prefix);
  for (let left = payload; left > 0; left -= zeros.length) {
    await write(left >= zeros.length ? zeros : zeros.subarray(0, left));
  }
  gz.end();
  await done;
  return Buffer.concat(out);
}

function varint(n) {
  const out = [];
  while (n > 0x7f) { out.push((n & 0x7f) | 0x80); n = Math.floor(n / 128); }
  out.push(n);
  return out;
}

//! A valid request padded with an unknown field (skipped by parsers) to `size` bytes.
function paddedProto(size) {
  const pad = size - validProto.length - 6;
  return Buffer.concat([validProto, Buffer.from([0x7a, ...varint(pad)]), Buffer.alloc(pad, 0x61)]);
}

//! zstd via the zstd CLI (Node 20's zlib has none); null when it is not installed.
function zstd(buf) {
  const r = spawnSync('zstd', ['-q', '-c'], { input: buf, maxBuffer: 64 << 20 });
  return r.status === 0 ? r.stdout : null;
}
const HAVE_ZSTD = zstd(Buffer.from('x')) !== null;

function post(url, body, headers) {
  return request(url, { method: 'POST', body, headers: { ...headers, 'Content-Length': body.length } });
}

function assertStatus(res, status, what) {
  assert.equal(res.status, status,
    `${what}: expected ${status}, got ${res.status} ${res.body.toString().slice(0, 300)}`);
  assert.ok(res.body.length > 0, `${what}: error response has an empty body`);
}

//! For JSON requests the error body is {"code":..,"message":".."}; check that it mentions the problem.
function assertJsonError(res, pattern, what) {
  let body;
  try {
    body = JSON.parse(res.body.toString());
  } catch {
    assert.fail(`${what}: error body is not JSON: ${res.body.toString().slice(0, 300)}`);
  }
  assert.equal(typeof body.message, 'string', `${what}: error body has no message: ${res.body}`);
  assert.match(body.message, pattern, `${what}: message does not mention the problem`);
}

describe('bad OTLP/HTTP input (duckdb)', { timeout: 120_000 }, () => {
  let server;
  let traces;

  before(async () => {
    server = await startServer({
      engine: 'duckdb',
      args: ['--max-body-bytes', String(MAX_BODY), '--body-timeout-ms', String(BODY_TIMEOUT_MS)],
    });
    traces = `${server.otlpUrl}/v1/traces`;
  });
  after(async () => { await server?.cleanup(); });

  it('truncated protobuf -> 400', async () => {
    const res = await post(traces, validProto.subarray(0, validProto.length - 7), { ...auth, 'Content-Type': PROTO });
    assertStatus(res, 400, 'truncated protobuf');
  });

  it('truncated protobuf, gzip -> 400', async () => {
    const body = zlib.gzipSync(validProto.subarray(0, validProto.length - 3));
    const res = await post(traces, body, { ...auth, 'Content-Type': PROTO, 'Content-Encoding': 'gzip' });
    assertStatus(res, 400, 'truncated protobuf (gzip)');
  });

  it('invalid JSON -> 400 with a JSON error', async () => {
    const body = Buffer.from('{"resourceSpans": [{"scopeSpans": [');
    const res = await post(traces, body, { ...auth, 'Content-Type': JSON_TYPE });
    assertStatus(res, 400, 'invalid JSON');
    assertJsonError(res, /json|parse|invalid|malformed/i, 'invalid JSON');
  });

  it('JSON with a malformed span id -> 400', async () => {
    const doc = JSON.parse(validJson.toString());
    doc.resourceSpans[0].scopeSpans[0].spans[0].spanId = 'not-hex!';
    const res = await post(traces, Buffer.from(JSON.stringify(doc)), { ...auth, 'Content-Type': JSON_TYPE });
    assertStatus(res, 400, 'bad span id');
  });

  it('bad gzip bytes -> 400', async () => {
    const res = await post(traces, Buffer.from('this is not a gzip stream at all'),
      { ...auth, 'Content-Type': PROTO, 'Content-Encoding': 'gzip' });
    assertStatus(res, 400, 'bad gzip');
  });

  it('truncated gzip stream -> 400', async () => {
    const gz = zlib.gzipSync(paddedProto(64 * 1024));
    const res = await post(traces, gz.subarray(0, gz.length >> 1),
      { ...auth, 'Content-Type': PROTO, 'Content-Encoding': 'gzip' });
    assertStatus(res, 400, 'truncated gzip');
  });

  it('gzip bomb (1 GiB of zeros) -> 413, without inflating it', async () => {
    const bomb = await gzipBomb(1 << 30);
    const rssBefore = server.rssBytes();
    const res = await post(traces, bomb, { ...auth, 'Content-Type': PROTO, 'Content-Encoding': 'gzip' });
    assertStatus(res, 413, `gzip bomb (${bomb.length} bytes compressed)`);
    const rssAfter = server.rssBytes();
    assert.ok(rssAfter - rssBefore < 256 << 20,
      `RSS grew by ${((rssAfter - rssBefore) / 2 ** 20).toFixed(0)} MiB on a gzip bomb`);
  });

  it('small gzip bomb (under the compressed limit, 64 MiB inflated) -> 413', async () => {
    const bomb = await gzipBomb(64 << 20);
    assert.ok(bomb.length < MAX_BODY, 'the compressed bomb is under the body limit');
    const res = await post(traces, bomb, { ...auth, 'Content-Type': PROTO, 'Content-Encoding': 'gzip' });
    assertStatus(res, 413, `gzip bomb (${bomb.length} bytes compressed)`);
  });

  it('small gzip bomb as JSON -> 413 with a JSON error', async () => {
    // `{"resourceSpans":[]}` followed by 8 MiB of spaces: valid JSON, too big inflated.
    const body = Buffer.concat([Buffer.from('{"resourceSpans":[]}'), Buffer.alloc(8 << 20, 0x20)]);
    const res = await post(traces, zlib.gzipSync(body), { ...auth, 'Content-Type': JSON_TYPE, 'Content-Encoding': 'gzip' });
    assertStatus(res, 413, 'JSON gzip bomb');
    assertJsonError(res, /large|limit|size|exceed/i, 'JSON gzip bomb');
  });

  it('corrupt zstd -> 400', { skip: !HAVE_ZSTD && 'zstd CLI not installed' }, async () => {
    const z = zstd(paddedProto(64 * 1024));
    z[z.length >> 1] ^= 0xff;
    const res = await post(traces, z.subarray(0, z.length - 8),
      { ...auth, 'Content-Type': PROTO, 'Content-Encoding': 'zstd' });
    assertStatus(res, 400, 'corrupt zstd');
  });

  it('text/plain -> 415', async () => {
    const res = await post(traces, validJson, { ...auth, 'Content-Type': 'text/plain' });
    assertStatus(res, 415, 'text/plain');
  });

  it('no Content-Type -> 415', async () => {
    const res = await post(traces, validProto, { ...auth });
    assertStatus(res, 415, 'missing Content-Type');
  });

  it('Content-Encoding br -> 415', async () => {
    const res = await post(traces, zlib.brotliCompressSync(validProto),
      { ...auth, 'Content-Type': PROTO, 'Content-Encoding': 'br' });
    assertStatus(res, 415, 'br');
  });

  it('body over --max-body-bytes -> 413 (Content-Length)', async () => {
    const res = await post(traces, paddedProto(MAX_BODY + 4096), { ...auth, 'Content-Type': PROTO });
    assertStatus(res, 413, 'oversized body');
  });

  it('body over --max-body-bytes -> 413 (chunked, no Content-Length)', async () => {
    const body = paddedProto(2 * MAX_BODY);
    const res = await request(traces, {
      method: 'POST', body, headers: { ...auth, 'Content-Type': PROTO, 'Transfer-Encoding': 'chunked' },
    });
    assertStatus(res, 413, 'oversized chunked body');
  });

  it('a body that trickles past --body-timeout-ms -> retryable 503 or closed, never 408, and the server keeps serving', async (t) => {
    const started = Date.now();
    const outcome = await new Promise((resolve) => {
      const sock = net.connect({ host: HOST, port: server.otlpPort });
      let data = '';
      let timer = null;
      let guard = null;
      const finish = (how) => {
        clearInterval(timer);
        clearTimeout(guard);
        sock.destroy();
        resolve({ how, data, ms: Date.now() - started });
      };
      sock.on('connect', () => {
        sock.write(`POST /v1/traces HTTP/1.1\r\nHost: ${HOST}:${server.otlpPort}\r\n`
          + `Authorization: Bearer ${TOKEN}\r\nContent-Type: ${PROTO}\r\nContent-Length: 1000\r\n\r\n`);
        timer = setInterval(() => { if (!sock.destroyed) sock.write('a'); }, 1000);
      });
      sock.on('data', (c) => {
        data += c.toString();
        if (/^HTTP\/1\.[01] \d{3}/.test(data) && data.includes('\r\n\r\n')) finish('response');
      });
      sock.on('end', () => finish('closed'));
      sock.on('close', () => finish('closed'));
      sock.on('error', () => finish('closed'));
      guard = setTimeout(() => finish('still open'), BODY_TIMEOUT_MS + 6000);
    });
    t.diagnostic(`trickle: ${outcome.how} after ${outcome.ms} ms: ${outcome.data.split('\r\n')[0]}`);
    assert.notEqual(outcome.how, 'still open',
      `the server kept a trickling request open for ${outcome.ms} ms (body timeout ${BODY_TIMEOUT_MS} ms)`);
    if (outcome.how === 'response') {
      assert.match(outcome.data, /^HTTP\/1\.[01] 503/, `trickle: expected a retryable 503, got ${outcome.data.split('\r\n')[0]}`);
    }
    assert.ok(outcome.ms >= BODY_TIMEOUT_MS - 500, `trickle ended after ${outcome.ms} ms, before the timeout`);
    const res = await request(`${server.apiUrl}/api/health/deep`);
    assert.equal(res.status, 200, 'the server serves the next request');
  });

  it('missing token -> 401', async () => {
    const res = await post(traces, validProto, { 'Content-Type': PROTO });
    assertStatus(res, 401, 'missing token');
  });

  it('wrong token -> 401 (OTLP port and API port)', async () => {
    const res = await post(traces, validProto, { Authorization: 'Bearer wrong-token', 'Content-Type': PROTO });
    assertStatus(res, 401, 'wrong token');
    const res2 = await post(`${server.apiUrl}/api/otel/v1/traces`, validJson,
      { Authorization: 'Bearer wrong-token', 'Content-Type': JSON_TYPE });
    assertStatus(res2, 401, 'wrong token (API port, JSON)');
    assertJsonError(res2, /token|auth/i, 'wrong token');
  });

  it('a token without the Bearer scheme -> 401', async () => {
    const res = await post(traces, validProto, { Authorization: TOKEN, 'Content-Type': PROTO });
    assertStatus(res, 401, 'token without Bearer');
  });

  it('stored nothing and is still alive', async () => {
    assert.ok(server.alive(), 'server process is alive');
    const health = await server.deepHealth();
    assert.equal(health.status, 'ok');
    assert.deepEqual(health.rows, { spans: 0, logs: 0, metric_points: 0 }, 'nothing was stored');
  });

  it('then accepts a valid request (200) and counts it', async () => {
    const res = await post(traces, validProto, { ...auth, 'Content-Type': PROTO });
    assert.equal(res.status, 200, `valid request: ${res.status} ${res.body}`);
    const resJson = await post(`${server.apiUrl}/api/otel/v1/traces`,
      encodeTraceRequestJson(makeSpanBatch(runTag, 2, 3)), { ...auth, 'Content-Type': JSON_TYPE });
    assert.equal(resJson.status, 200, `valid JSON request: ${resJson.status} ${resJson.body}`);
    assert.match(resJson.headers['content-type'] ?? '', /application\/json/);
    const body = JSON.parse(resJson.body.toString());
    assert.ok(body.partialSuccess === undefined || !body.partialSuccess.rejectedSpans
      || Number(body.partialSuccess.rejectedSpans) === 0, `nothing rejected: ${resJson.body}`);
    let expectedSpans = 4;
    if (HAVE_ZSTD) {
      const resZstd = await post(traces, zstd(encodeTraceRequestProto(makeSpanBatch(runTag, 3, 2))),
        { ...auth, 'Content-Type': PROTO, 'Content-Encoding': 'zstd' });
      assert.equal(resZstd.status, 200, `valid zstd request: ${resZstd.status} ${resZstd.body}`);
      expectedSpans += 2;
    }
    const health = await server.deepHealth();
    assert.equal(health.rows.spans, expectedSpans);
    assert.ok(health.gate && typeof health.gate.rejections === 'number', 'deep health reports gate rejections');
    const metrics = await request(`${server.apiUrl}/metrics`);
    assert.equal(metrics.status, 200, 'GET /metrics');
    assert.match(metrics.headers['content-type'] ?? '', /^text\/plain/, '/metrics is Prometheus text');
    assert.match(metrics.body.toString(), /^# (HELP|TYPE) /m, '/metrics has HELP/TYPE lines');
  });

  it('stops cleanly and kept exactly the valid spans', async () => {
    await server.stop();
    const out = await server.sql(`SELECT ${HEX.span_id} FROM spans ORDER BY 1`);
    const want = [...makeSpanBatch(runTag, 1, 1).spanIds, ...makeSpanBatch(runTag, 2, 3).spanIds,
      ...(HAVE_ZSTD ? makeSpanBatch(runTag, 3, 2).spanIds : [])].sort();
    assert.deepEqual(out.rows.map((r) => r[0]), want);
  });
});
