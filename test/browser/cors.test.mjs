// Browser exporters (docs/API.md "CORS"): a page on another origin (another
// loopback port, served here) sends spans with the OpenTelemetry web SDK and
// its OTLP/HTTP exporter, bundled by esbuild, to a sightline started with
// --cors-allowed-origins naming that page's origin. The spans must be stored;
// a page on an origin not on the list must fail to export and store nothing;
// the read API stays closed to pages, whatever token they hold.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { HOST, Server, TOKEN, httpGet } from './lib/server.mjs';
import { launchBrowser } from './lib/browser.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const RUN = `cors-${Date.now().toString(36)}`;

let server;
let browser;
let allowedPage;
let deniedPage;
let readToken;
const pages = [];

/** Serves the bundled exporter page on a free loopback port: a distinct origin. */
async function servePage(bundle) {
  const srv = http.createServer((req, res) => {
    if (req.url === '/otel.js') {
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      res.end(bundle);
    } else if (req.url === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end('<!doctype html><title>browser app</title><script type="module" src="/otel.js"></script>');
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((resolve) => srv.listen(0, HOST, resolve));
  const origin = `http://${HOST}:${srv.address().port}`;
  return { srv, origin, close: () => new Promise((resolve) => srv.close(resolve)) };
}

async function openPage(origin) {
  const page = await browser.context.newPage();
  pages.push(page);
  await page.goto(`${origin}/`);
  await page.waitForFunction(() => typeof window.sendSpans === 'function');
  return page;
}

/** Root spans of `service` the read API lists (each span of the page is its own trace). */
async function storedTraces(service) {
  const r = await httpGet(`${server.apiUrl}/api/v1/traces?service=${encodeURIComponent(service)}&limit=500`, {
    Authorization: `Bearer ${readToken}`,
  });
  assert.equal(r.status, 200, r.text);
  return JSON.parse(r.text).traces.length;
}

async function waitForTraces(service, want, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  let got = await storedTraces(service);
  while (got < want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 150));
    got = await storedTraces(service);
  }
  return got;
}

before(async () => {
  const built = await esbuild.build({
    entryPoints: [path.join(here, 'page/otel_web.mjs')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    target: 'chrome120',
    logLevel: 'warning',
  });
  const bundle = built.outputFiles[0].text;
  allowedPage = await servePage(bundle);
  deniedPage = await servePage(bundle);
  server = await new Server({ args: ['--cors-allowed-origins', `${allowedPage.origin}/`] }).start();
  readToken = await server.createToken({ scope: 'read' });
  // No interception: Playwright would answer the preflights itself.
  browser = await launchBrowser({ intercept: false });
});

after(async () => {
  for (const page of pages) await page.close().catch(() => {});
  await browser?.close();
  await server?.stop();
  await allowedPage?.close();
  await deniedPage?.close();
});

test('a page on an allowed origin exports spans with the web exporter, and they are stored', async () => {
  const service = `${RUN}-allowed`;
  const page = await openPage(allowedPage.origin);
  const results = await page.evaluate(
    (args) => window.sendSpans(args),
    { url: `${server.otlpUrl}/v1/traces`, token: TOKEN, service, count: 5 },
  );
  assert.deepEqual(results, [{ code: 0, error: null }], 'the exporter reports success');
  assert.equal(await waitForTraces(service, 5), 5, 'the five spans are stored');
});

test('the API port\'s ingest path /api/otel/v1/traces takes a page\'s export too', async () => {
  const service = `${RUN}-api-port`;
  const page = await openPage(allowedPage.origin);
  const results = await page.evaluate(
    (args) => window.sendSpans(args),
    { url: `${server.apiUrl}/api/otel/v1/traces`, token: TOKEN, service, count: 3 },
  );
  assert.deepEqual(results, [{ code: 0, error: null }]);
  assert.equal(await waitForTraces(service, 3), 3);
});

test('an error answer is readable by the page: a read token gets 403, a wrong one 401', async () => {
  const page = await openPage(allowedPage.origin);
  const send = (token, service) => page.evaluate(
    (args) => window.sendSpans(args),
    { url: `${server.otlpUrl}/v1/traces`, token, service, count: 1 },
  );
  const [wrong] = await send('not-a-token', `${RUN}-wrong-token`);
  assert.equal(wrong.code, 1);
  assert.match(wrong.error, /status 401/, 'the page saw the 401, not a network error');
  const [read] = await send(readToken, `${RUN}-read-token`);
  assert.equal(read.code, 1);
  assert.match(read.error, /status 403/, 'a read token cannot send, and the page is told so');
  assert.equal(await storedTraces(`${RUN}-wrong-token`), 0);
  assert.equal(await storedTraces(`${RUN}-read-token`), 0);
});

test('a page on an origin not on the list cannot export, and nothing is stored', async () => {
  const service = `${RUN}-denied`;
  const page = await openPage(deniedPage.origin);
  const results = await page.evaluate(
    (args) => window.sendSpans(args),
    { url: `${server.otlpUrl}/v1/traces`, token: TOKEN, service, count: 4, timeoutMillis: 2000 },
  );
  assert.equal(results.length, 1);
  assert.equal(results[0].code, 1, 'the exporter reports failure');
  assert.match(results[0].error, /network error|Failed to fetch/i, 'the browser blocked it (no status to read)');
  // The preflight was refused, so the POST was never sent; give a stray one time to land.
  await new Promise((r) => setTimeout(r, 500));
  assert.equal(await storedTraces(service), 0);
});

test('the read API is closed to pages, even an allowed origin with a read token', async () => {
  const target = `${server.apiUrl}/api/v1/traces?limit=1`;
  // The token works (outside a browser) ...
  const direct = await httpGet(target, { Authorization: `Bearer ${readToken}`, Origin: allowedPage.origin });
  assert.equal(direct.status, 200);
  assert.equal(direct.headers.get('access-control-allow-origin'), null);
  // ... but a page may not read with it.
  const page = await openPage(allowedPage.origin);
  const outcome = await page.evaluate(async ({ url, token }) => {
    try {
      const r = await fetch(url, { headers: { Authorization: `Bearer ${token}` } });
      return `status ${r.status}`;
    } catch (err) {
      return `${err.name}: ${err.message}`;
    }
  }, { url: target, token: readToken });
  assert.match(outcome, /^TypeError/, `the browser blocked the read: ${outcome}`);
});
