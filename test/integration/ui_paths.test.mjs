// The UI's URLs (docs/API.md "The web UI"): every page path survives a reload
// (the browser gets the app, also at /metrics, where a scraper keeps getting
// the Prometheus text), a file that is not there is a 404 rather than the app,
// assets are served gzip-compressed to clients that accept it, and a 64-bit
// (16-hex) trace id opens its trace.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import zlib from 'node:zlib';

import { startServer, request } from './lib/server.mjs';
import { api, apiOk, postOtlp } from './lib/api.mjs';
import { encodeTraceRequestJson } from './lib/otlp.mjs';

// What Chromium sends when a page is loaded or reloaded, and what Prometheus sends.
const BROWSER_ACCEPT =
  'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
const PROMETHEUS_ACCEPT =
  'application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

describe('UI paths', { timeout: 120_000 }, () => {
  let server;
  before(async () => {
    server = await startServer({ engine: 'duckdb' });
  });
  after(async () => {
    await server?.stop();
  });

  const get = (path, headers = {}) => request(`${server.apiUrl}${path}`, { headers });

  it('a browser reloading /metrics gets the app; a scraper and curl get the Prometheus text', async () => {
    const page = await get('/metrics', { Accept: BROWSER_ACCEPT });
    assert.equal(page.status, 200);
    assert.match(page.headers['content-type'], /^text\/html/);
    assert.match(page.body.toString(), /<div id="app">|<script/);

    for (const accept of [PROMETHEUS_ACCEPT, '*/*', undefined]) {
      const scrape = await get('/metrics', accept ? { Accept: accept } : {});
      assert.equal(scrape.status, 200, `Accept: ${accept}`);
      assert.match(scrape.headers['content-type'], /^text\/plain; version=0\.0\.4/, `Accept: ${accept}`);
      assert.match(scrape.body.toString(), /^# HELP /m);
    }
    // An explicit refusal of HTML (q=0) is not a browser.
    const refused = await get('/metrics', { Accept: 'text/html;q=0, text/plain' });
    assert.match(refused.headers['content-type'], /^text\/plain/);
  });

  it('deep links get the app; unknown files get 404', async () => {
    for (const path of ['/traces', '/traces/0af7651916cd43dd8448eb211c80319c', '/logs', '/exceptions']) {
      const res = await get(path, { Accept: BROWSER_ACCEPT });
      assert.equal(res.status, 200, path);
      assert.match(res.headers['content-type'], /^text\/html/, path);
    }
    for (const path of ['/assets/index-00000000.js', '/assets/gone.css', '/favicon.ico', '/robots.txt']) {
      const res = await get(path, { Accept: BROWSER_ACCEPT });
      assert.equal(res.status, 404, `${path}: ${res.body.toString().slice(0, 80)}`);
      assert.doesNotMatch(res.body.toString(), /<script/, path);
    }
  });

  it('assets are gzip-compressed for clients that accept it, and identical once inflated', async () => {
    const html = (await get('/')).body.toString();
    const assets = [...html.matchAll(/(?:src|href)="(\/assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]);
    assert.ok(assets.some((a) => a.endsWith('.js')) && assets.some((a) => a.endsWith('.css')), html.slice(0, 400));
    let plainBytes = 0;
    let gzipBytes = 0;
    for (const path of ['/', ...assets]) {
      const plain = await get(path, { 'Accept-Encoding': 'identity' });
      const gz = await get(path, { 'Accept-Encoding': 'gzip, deflate, br, zstd' });
      assert.equal(plain.status, 200, path);
      assert.equal(plain.headers['content-encoding'], undefined, path);
      assert.equal(gz.headers['content-encoding'], 'gzip', path);
      assert.equal(gz.headers.vary, 'Accept-Encoding', path);
      assert.equal(Number(gz.headers['content-length']), gz.body.length, path);
      assert.ok(zlib.gunzipSync(gz.body).equals(plain.body), `${path}: inflates to the plain bytes`);
      // gzip;q=0 is a refusal.
      const refused = await get(path, { 'Accept-Encoding': 'gzip;q=0' });
      assert.equal(refused.headers['content-encoding'], undefined, path);
      plainBytes += plain.body.length;
      gzipBytes += gz.body.length;
    }
    assert.ok(gzipBytes < plainBytes / 2, `gzip ${gzipBytes} bytes of ${plainBytes}`);
  });

  it('a 64-bit trace id (16 hex characters) opens its trace', async () => {
    const low = 'b7ad6b7169203331';
    const now = BigInt(Date.now()) * 1_000_000n;
    const body = encodeTraceRequestJson({
      resource: { 'service.name': 'zipkin-bridge' },
      spans: [{ traceId: '0'.repeat(16) + low, spanId: '00f067aa0ba902b7', name: 'GET /legacy', kind: 2,
        start: now - 5_000_000n, end: now }],
    });
    await postOtlp(server, 'traces', body, { json: true });
    const from = Date.now() - 3_600_000;
    const to = Date.now() + 60_000;
    const long = await apiOk(server, `traces/${'0'.repeat(16)}${low}`, { from, to });
    const short = await apiOk(server, `traces/${low}`, { from, to });
    assert.deepEqual(short, long);
    assert.equal(short.spans.length, 1);
    assert.equal(short.spans[0].name, 'GET /legacy');

    const bad = await api(server, 'traces/b7ad6b71692033', { from, to });
    assert.equal(bad.status, 400);
    assert.match(bad.json.error, /32 hex characters \(or 16 for a 64-bit id\)/);
  });
});
