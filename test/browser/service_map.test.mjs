// The service map page (issue #14, part 6) in a real browser against a real
// server: three services calling each other are drawn as boxes and arrows
// whose labels match numbers computed here from the spans sent; clicking an
// arrow opens the called service's traces, clicking a box its endpoints, both
// in the same time range; the URL survives a reload.

import { after, before, test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server } from './lib/server.mjs';
import { eventually, closeBrowserAndServer, launchBrowser, logInAsAdmin, testWithScreenshot } from './lib/browser.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(here, 'output');
fs.mkdirSync(OUT, { recursive: true });

const tid = (id) => `[data-testid="${id}"]`;
const str = (key, v) => ({ key, value: { stringValue: v } });
const ns = (ms) => String(BigInt(Math.round(ms * 1000)) * 1000n);
const hex = (n, len) => n.toString(16).padStart(len, '0');

// Ten minutes, starting at a whole minute 20 minutes ago; one request every 25 s.
const FROM = Math.floor((Date.now() - 20 * 60_000) / 60_000) * 60_000;
const TO = FROM + 10 * 60_000;
const SECONDS = (TO - FROM) / 1000;
// 21 requests: the P95 of 21 values is one of them (rank 19 of 0..20), so
// the label's rounding never sits on a tie.
const N = 21;

// shop -> cart on every request (cart fails on every 4th), cart -> stock on
// every other one; all durations in whole milliseconds.
const plan = (i) => ({ t: FROM + 15_000 + i * 25_000, cart: 10 + i, cartError: i % 4 === 0, stock: i % 2 === 0, stockMs: 4 + (i % 5) });

function spans() {
  const by = { shop: [], cart: [], stock: [] };
  const span = (service, trace, id, parent, name, kind, start, ms, error = false) => by[service].push({
    traceId: trace, spanId: hex(id, 16), parentSpanId: parent ? hex(parent, 16) : '', name, kind,
    startTimeUnixNano: ns(start), endTimeUnixNano: ns(start + ms), attributes: [], status: { code: error ? 2 : 0 },
  });
  for (let i = 0; i < N; i++) {
    const p = plan(i);
    const trace = hex(0xabc0000 + i, 32);
    const b = i * 16;
    span('shop', trace, b + 1, 0, 'GET /buy', 2, p.t, p.cart + 20);
    span('shop', trace, b + 2, b + 1, 'POST cart', 3, p.t + 1, p.cart + 2);
    span('cart', trace, b + 3, b + 2, 'POST /cart', 2, p.t + 2, p.cart, p.cartError);
    if (p.stock) {
      span('cart', trace, b + 4, b + 3, 'GET stock', 3, p.t + 3, p.stockMs + 1);
      span('stock', trace, b + 5, b + 4, 'GET /stock', 2, p.t + 3.5, p.stockMs);
    }
  }
  return {
    resourceSpans: Object.entries(by).map(([service, list]) => ({
      resource: { attributes: [str('service.name', service)] },
      scopeSpans: [{ scope: { name: 'map-test' }, spans: list }],
    })),
  };
}

function percentile(values, q) {
  const s = [...values].sort((a, b) => a - b);
  const pos = q * (s.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.min(lo + 1, s.length - 1);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

// The UI's own formatting (ui/src/lib/format.ts) for the values this data gives.
const trimZeros = (s) => (s.includes('.') ? s.replace(/\.?0+$/, '') : s);
function sig3(v) {
  const a = Math.abs(v);
  if (a === 0) return '0';
  if (a >= 100) return Math.round(v).toLocaleString('en-US');
  if (a >= 10) return trimZeros(v.toFixed(1));
  if (a >= 1) return trimZeros(v.toFixed(2));
  return trimZeros(v.toFixed(Math.min(6, 2 - Math.floor(Math.log10(a)))));
}
const fmtMs = (v) => (v < 10 ? `${trimZeros(v.toFixed(2))} ms` : `${trimZeros(v.toFixed(1))} ms`);
const fmtPct = (v) => (v === 0 ? '0%' : `${sig3(v * 100)}%`);
const fmtRate = (v) => (v >= 0.1 ? `${sig3(v)}/s` : `${sig3(v * 60)}/min`);

function expectedEdges() {
  const cart = [];
  const stock = [];
  let cartErrors = 0;
  for (let i = 0; i < N; i++) {
    const p = plan(i);
    cart.push(p.cart);
    if (p.cartError) cartErrors++;
    if (p.stock) stock.push(p.stockMs);
  }
  const label = (d, errors) =>
    `${fmtRate(d.length / SECONDS)} · ${fmtPct(errors / d.length)} err · p95 ${fmtMs(percentile(d, 0.95))}`;
  return { 'shop>cart': label(cart, cartErrors), 'cart>stock': label(stock, 0) };
}

let server;
let browser;
let page;
const pageErrors = [];
const test = testWithScreenshot(nodeTest, 'service-map-', () => page);

before(async () => {
  server = await new Server().start();
  await server.ingest('traces', spans());
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  await logInAsAdmin(page, server);
});

after(async () => {
  await closeBrowserAndServer(browser, server);
  assert.deepEqual(pageErrors, [], 'uncaught errors in the page');
});

async function openMap() {
  await page.goto(`${server.apiUrl}/map?from=${FROM}&to=${TO}`);
  await page.locator(tid('map-edge')).first().waitFor();
}

test('draws every service as a box and every call as an arrow labelled with rate, error % and P95', async () => {
  await openMap();
  const nodes = await page.locator(tid('map-node')).evaluateAll((gs) => gs.map((g) => g.dataset.service).sort());
  assert.deepEqual(nodes, ['cart', 'shop', 'stock']);
  const want = expectedEdges();
  await eventually(async () => {
    const edges = await page.locator(tid('map-edge')).evaluateAll((gs) =>
      gs.map((g) => [`${g.dataset.from}>${g.dataset.to}`, [...g.querySelectorAll('[data-testid="map-edge-label"] tspan')].map((t) => t.textContent).join(' · ')]));
    assert.deepEqual(Object.fromEntries(edges), want);
  });
  // Callers left of callees: shop, then cart, then stock.
  const x = await page.locator(tid('map-node')).evaluateAll((gs) =>
    Object.fromEntries(gs.map((g) => [g.dataset.service, g.getBoundingClientRect().x])));
  assert.ok(x.shop < x.cart && x.cart < x.stock, `layout left to right: ${JSON.stringify(x)}`);
  // The failing call is coloured as failing, the clean one not.
  assert.match(await page.locator(`${tid('map-edge')}[data-to="cart"]`).getAttribute('class'), /\bbad\b/);
  assert.match(await page.locator(`${tid('map-edge')}[data-to="stock"]`).getAttribute('class'), /\bok\b/);
  // A node shows its entry spans' numbers: shop has 20 requests in 600 s.
  const shop = await page.locator(`${tid('map-node')}[data-service="shop"] ${tid('map-node-stats')}`).allTextContents();
  assert.equal(shop[0], '2.1/min · 0% err');
  const shopMs = Array.from({ length: N }, (_, i) => plan(i).cart + 20);
  assert.equal(shop[1], `p95 ${fmtMs(percentile(shopMs, 0.95))}`);
  await page.evaluate(() => document.fonts.ready);
  await page.screenshot({ path: path.join(OUT, 'service-map.png'), fullPage: true });
  // The URL survives a reload.
  await page.reload();
  await page.locator(tid('map-edge')).first().waitFor();
  assert.equal(await page.locator(tid('map-edge')).count(), 2);
});

test('clicking an arrow opens the traces of the called service in the same range', async () => {
  await openMap();
  await page.locator(`${tid('map-edge')}[data-to="stock"] ${tid('map-edge-label')}`).click();
  await eventually(() => assert.equal(new URL(page.url()).pathname, '/traces'));
  const q = new URL(page.url()).searchParams;
  assert.equal(q.get('service'), 'stock');
  assert.equal(q.get('from'), String(FROM));
  assert.equal(q.get('to'), String(TO));
  await eventually(async () => {
    const rows = await page.locator(tid('trace-row')).count();
    assert.equal(rows, Math.ceil(N / 2), 'one trace per call to stock');
  });
});

test('clicking a box (or Enter on it) opens the service\'s endpoints', async () => {
  await openMap();
  await page.locator(`${tid('map-node')}[data-service="cart"]`).click();
  await eventually(() => assert.equal(new URL(page.url()).pathname, '/endpoints'));
  assert.equal(new URL(page.url()).searchParams.get('service'), 'cart');
  await page.locator('tbody tr').filter({ hasText: 'POST /cart' }).first().waitFor();
  await openMap();
  await page.locator(`${tid('map-node')}[data-service="stock"]`).focus();
  await page.keyboard.press('Enter');
  await eventually(() => assert.equal(new URL(page.url()).searchParams.get('service'), 'stock'));
  assert.equal(new URL(page.url()).pathname, '/endpoints');
});
