// OTLP/gRPC failure cases with the official OpenTelemetry JS gRPC exporter
// (the success path, every stored field, is in sdk.test.mjs): a bad token is
// refused as UNAUTHENTICATED and stores nothing; while the admission gate is
// full an export is refused as UNAVAILABLE and nothing of it is stored; once
// the gate has room the next export is stored. The gate is filled the way a
// slow client fills it: an OTLP/HTTP request admitted on its Content-Length
// whose body does not come. (The JS gRPC exporter does not retry; the
// RetryInfo a retrying client reads is checked in grpc_server_test.cc.)

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { SpanKind } from '@opentelemetry/api';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { Metadata } from '@grpc/grpc-js';

import { TOKEN, sleep, startServer } from './lib/server.mjs';
import { RawConnection } from './lib/raw_http.mjs';

const EXPORT_TIMEOUT_MS = 2_000;

//! Exports `count` spans of `service` over gRPC with `token`; resolves the
//! exporter's results (one per export) and how long the export took.
async function exportSpans(server, service, count, token = TOKEN) {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${token}`);
  const exporter = new OTLPTraceExporter({ url: server.grpcUrl, metadata, timeoutMillis: EXPORT_TIMEOUT_MS });
  const results = [];
  const orig = exporter.export.bind(exporter);
  exporter.export = (spans, done) => orig(spans, (r) => { results.push(r); done(r); });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service }),
    // One export of all the spans, at forceFlush.
    spanProcessors: [new BatchSpanProcessor(exporter, { scheduledDelayMillis: 60_000 })],
  });
  const started = performance.now();
  const tracer = provider.getTracer('grpc-test');
  for (let i = 0; i < count; i++) tracer.startSpan(`op ${i}`, { kind: SpanKind.SERVER }).end();
  try {
    await provider.forceFlush();
  } catch { /* a failed export is in `results` */ }
  await provider.shutdown().catch(() => {});
  return { results, ms: performance.now() - started };
}

//! Holds the gate's one request slot: an OTLP/HTTP request admitted on its
//! Content-Length whose body does not come. Resolves a function that lets go.
async function holdTheGate(server) {
  const conn = await RawConnection.open(server.otlpPort);
  await conn.write([
    'POST /v1/traces HTTP/1.1', 'Host: 127.0.0.1', `Authorization: Bearer ${TOKEN}`,
    'Content-Type: application/x-protobuf', 'Content-Length: 1000', '', '',
  ].join('\r\n'));
  await sleep(200);  // admitted before the gRPC call comes
  return () => conn.sock.destroy();
}

async function storedSpans(server, service) {
  const out = await server.sql(`SELECT count(*) FROM spans WHERE service_name = '${service}'`);
  return Number(out.rows[0][0]);
}

describe('OTLP/gRPC refusals with the official JS exporter (duckdb)', { timeout: 120_000 }, () => {
  let server;
  before(async () => {
    // One request at a time, and a held body is not cut for 20 s.
    server = await startServer({ args: ['--max-inflight-requests', '1', '--body-rate-grace-ms', '20000'] });
  });
  after(async () => { await server?.cleanup(); });

  it('a bad token: UNAUTHENTICATED, not retried, nothing stored', async () => {
    const { results, ms } = await exportSpans(server, 'grpc-bad-token', 3, 'sl_not_a_token');
    assert.equal(results.length, 1);
    assert.notEqual(results[0].code, 0, 'the export succeeded with a bad token');
    assert.match(String(results[0].error?.message), /UNAUTHENTICATED|16/);
    assert.ok(ms < EXPORT_TIMEOUT_MS, `the exporter retried a bad token (${Math.round(ms)} ms)`);
  });

  it('a full gate: UNAVAILABLE with a message that says to retry, nothing stored', async () => {
    const release = await holdTheGate(server);
    try {
      const { results } = await exportSpans(server, 'grpc-refused', 4);
      assert.equal(results.length, 1);
      assert.notEqual(results[0].code, 0, 'the export succeeded through a full gate');
      assert.match(String(results[0].error?.message), /^14 UNAVAILABLE: .*retry later/);
    } finally {
      release();
    }
  });

  it('once the gate has room the same export goes through', async () => {
    const { results } = await exportSpans(server, 'grpc-after', 5);
    assert.equal(results.length, 1);
    assert.equal(results[0].code, 0, `the export failed: ${results[0].error?.message}`);
  });

  it('stored exactly what was acknowledged', async () => {
    await server.stop();
    assert.equal(await storedSpans(server, 'grpc-bad-token'), 0);
    assert.equal(await storedSpans(server, 'grpc-refused'), 0);
    assert.equal(await storedSpans(server, 'grpc-after'), 5);
  });
});
