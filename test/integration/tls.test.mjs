// TLS on both listeners (--tls-cert, --tls-key), with a self-signed
// certificate made for the test by the openssl CLI: the official OTel JS SDK
// exports spans over https to the OTLP port and to the API port's OTLP path,
// a read token reads them back, a login's cookie is `Secure` (and is not on
// a plain server), plain HTTP on a TLS port gets no answer, and a start with
// a key that does not belong to the certificate fails and says why. TLS does
// not depend on the telemetry engine, so one engine is enough.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';

import { SpanKind } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';

import { BIN, HOST, TOKEN, makeTempDir, request, startServer } from './lib/server.mjs';
import { api, apiOk, login } from './lib/api.mjs';

const run = promisify(execFile);
const PASSWORD = 'tls-test-admin-password';
const HANDSHAKE_TIMEOUT_MS = 1500;  // --header-timeout-ms, which also bounds the handshake

//! A self-signed certificate for 127.0.0.1 and its key, as files in `dir`.
async function selfSigned(dir, name) {
  const cert = path.join(dir, `${name}.crt`);
  const key = path.join(dir, `${name}.key`);
  await run('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-days', '2',
    '-subj', '/CN=sightline-test', '-addext', 'subjectAltName=IP:127.0.0.1']);
  return { cert, key, ca: fs.readFileSync(cert) };
}

//! Sends `count` spans of service `service` with the official SDK to `url`, trusting `ca`.
async function exportSpans(url, ca, service, count) {
  const exporter = new OTLPTraceExporter({
    url,
    headers: { Authorization: `Bearer ${TOKEN}` },
    httpAgentOptions: { ca },
  });
  const results = [];
  const orig = exporter.export.bind(exporter);
  exporter.export = (spans, done) => orig(spans, (r) => { results.push(r); done(r); });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('tls-test');
  for (let i = 0; i < count; i++) tracer.startSpan(`GET /tls/${i}`, { kind: SpanKind.SERVER }).end();
  await provider.forceFlush();
  await provider.shutdown();
  return results;
}

//! A plain-HTTP GET: resolves {status} or {error} (the connection's fate).
async function plainGet(port) {
  try {
    const res = await request(`http://${HOST}:${port}/readyz`, { timeoutMs: 5_000 });
    return { status: res.status };
  } catch (err) {
    return { error: err.code ?? err.message };
  }
}

describe('TLS on both listeners', () => {
  let dir;
  let tls;
  let server;

  before(async () => {
    dir = await makeTempDir('sightline-it-tls-');
    tls = await selfSigned(dir, 'server');
    server = await startServer({
      tls, env: { SIGHTLINE_ADMIN_PASSWORD: PASSWORD }, args: ['--header-timeout-ms', String(HANDSHAKE_TIMEOUT_MS)],
    });
  });
  after(async () => { await server?.cleanup(); });

  it('the SDK exports over https to both ports and a read token reads the spans back', async () => {
    const otlp = await exportSpans(`${server.otlpUrl}/v1/traces`, tls.ca, 'tls-otlp', 5);
    const apiPort = await exportSpans(`${server.apiUrl}/api/otel/v1/traces`, tls.ca, 'tls-api', 3);
    for (const r of [...otlp, ...apiPort]) assert.equal(r.code, 0, `export failed: ${r.error}`);
    for (const [service, want] of [['tls-otlp', 5], ['tls-api', 3]]) {
      const body = await apiOk(server, 'traces', { service, limit: 100 });
      assert.equal(body.traces.length, want, `traces of ${service}`);
    }
  });

  it('a login over TLS sets a Secure cookie that opens the API', async () => {
    const res = await login(server, 'admin', PASSWORD);
    assert.equal(res.status, 200);
    assert.match(res.setCookie, /;\s*Secure(;|$)/i);
    assert.match(res.setCookie, /;\s*HttpOnly/i);
    const projects = await api(server, 'projects', {}, { cookie: res.cookie, token: null });
    assert.equal(projects.status, 200, projects.text);
  });

  it('plain HTTP on a TLS port gets no HTTP answer, and the server goes on serving', async () => {
    for (const port of [server.otlpPort, server.apiPort]) {
      const got = await plainGet(port);
      assert.equal(got.status, undefined, `plain HTTP on TLS port ${port} was answered ${got.status}`);
    }
    const ready = await request(`${server.apiUrl}/readyz`, { ca: tls.ca });
    assert.equal(ready.status, 200);
  });

  it('a connection that never starts its handshake is closed after the header timeout', async () => {
    const started = performance.now();
    const closedAfter = await new Promise((resolve, reject) => {
      const socket = net.connect(server.otlpPort, HOST);
      const guard = setTimeout(() => { socket.destroy(); reject(new Error('still open after 10 s')); }, 10_000);
      socket.on('error', () => {});
      socket.on('close', () => { clearTimeout(guard); resolve(performance.now() - started); });
    });
    assert.ok(closedAfter >= HANDSHAKE_TIMEOUT_MS - 100, `closed after ${closedAfter} ms, before the timeout`);
    assert.ok(closedAfter < HANDSHAKE_TIMEOUT_MS + 3_000, `closed after ${closedAfter} ms`);
  });

  it('a client that does not trust the certificate cannot send', async () => {
    await assert.rejects(exportSpans(`${server.otlpUrl}/v1/traces`, undefined, 'tls-untrusted', 1),
      (errors) => [errors].flat().some((e) => e?.code === 'DEPTH_ZERO_SELF_SIGNED_CERT'));
  });

  it('a key that is not the certificate\'s: the start fails and says so', async () => {
    const other = await selfSigned(dir, 'other');
    const data = path.join(dir, 'mismatch-data');
    let failure;
    try {
      await run(BIN, ['serve', '--data', data, '--otlp-http', `${HOST}:0`, '--listen', `${HOST}:0`,
        '--otlp-grpc', `${HOST}:0`,
        '--tls-cert', tls.cert, '--tls-key', other.key], { timeout: 30_000 });
    } catch (err) {
      failure = err;
    }
    assert.ok(failure, 'serve started with a key of another certificate');
    assert.equal(failure.code, 1);
    const said = failure.stderr + failure.stdout;
    assert.match(said, /cannot use the TLS key .*other\.key with the certificate .*server\.crt: key values mismatch/);
  });

  it('--tls-cert without --tls-key is refused before anything starts', async () => {
    let failure;
    try {
      await run(BIN, ['serve', '--data', path.join(dir, 'half-data'), '--tls-cert', tls.cert], { timeout: 30_000 });
    } catch (err) {
      failure = err;
    }
    assert.ok(failure, 'serve started with a certificate and no key');
    assert.match(failure.stderr + failure.stdout, /--tls-key/);
  });
});

describe('without TLS', () => {
  let server;
  before(async () => { server = await startServer({ env: { SIGHTLINE_ADMIN_PASSWORD: PASSWORD } }); });
  after(async () => { await server?.cleanup(); });

  it('the session cookie is not Secure (a browser would drop it over http)', async () => {
    const res = await login(server, 'admin', PASSWORD);
    assert.equal(res.status, 200);
    assert.doesNotMatch(res.setCookie, /Secure/i);
    assert.match(res.setCookie, /HttpOnly/);
  });
});
