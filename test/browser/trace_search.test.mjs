// Trace search (issue #14, part 5) in a real browser against a real server:
// paging through more traces than a page holds, sorting by duration, the
// duration distribution drawn from the spans sent and brushed to set the
// duration filter, attribute keys and values suggested from the data (span
// and resource attributes), and the !=, >, exists and resource operators
// filtering as a person would check them: against the traces the test sent.

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
const int = (key, v) => ({ key, value: { intValue: String(v) } });
const bool = (key, v) => ({ key, value: { boolValue: v } });
const ns = (ms) => String(BigInt(Math.round(ms * 1000)) * 1000n);
const hex = (n, len) => n.toString(16).padStart(len, '0');

// Ten minutes starting at a whole minute 20 minutes ago.
const FROM = Math.floor((Date.now() - 20 * 60_000) / 60_000) * 60_000;
const TO = FROM + 10 * 60_000;
const N = 12;

// Trace i: a SERVER root of 10 + 10 i ms and an INTERNAL child of half that,
// inside it (so the trace lasts as long as its root).
const plan = (i) => ({
  trace: hex(0x5ea0000 + i, 32),
  start: FROM + 20_000 + i * 40_000,
  root: 10 + 10 * i,
  child: (10 + 10 * i) / 2,
  tenant: i % 3 === 0 ? 'globex' : 'acme',
  retries: i % 4,
  cacheHit: i % 5 === 0 ? i % 10 === 0 : undefined, // on the child of traces 0, 5, 10
  host: i % 2 === 0 ? 'search-1' : 'search-2',
});
const ALL = Array.from({ length: N }, (_, i) => plan(i));
const ids = (pred) => ALL.filter(pred).map((p) => p.trace);

function spans() {
  const byHost = { 'search-1': [], 'search-2': [] };
  for (let i = 0; i < N; i++) {
    const p = plan(i);
    const root = hex(i * 2 + 1, 16);
    byHost[p.host].push(
      {
        traceId: p.trace, spanId: root, parentSpanId: '', name: 'GET /search', kind: 2,
        startTimeUnixNano: ns(p.start), endTimeUnixNano: ns(p.start + p.root),
        attributes: [str('http.route', '/search'), str('tenant', p.tenant), int('retry.count', p.retries), int('http.response.status_code', 200)],
        status: { code: 0 },
      },
      {
        traceId: p.trace, spanId: hex(i * 2 + 2, 16), parentSpanId: root, name: 'rank', kind: 1,
        startTimeUnixNano: ns(p.start + 1), endTimeUnixNano: ns(p.start + 1 + p.child),
        attributes: p.cacheHit === undefined ? [] : [bool('cache.hit', p.cacheHit)],
        status: { code: 0 },
      },
    );
  }
  return {
    resourceSpans: Object.entries(byHost).map(([host, list]) => ({
      resource: { attributes: [str('service.name', 'search'), str('host.name', host)] },
      scopeSpans: [{ scope: { name: 'search-test' }, spans: list }],
    })),
  };
}

let server;
let browser;
let page;
const pageErrors = [];
const test = testWithScreenshot(nodeTest, 'trace-search-', () => page);

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

async function open(query = '') {
  await page.goto(`${server.apiUrl}/traces?from=${FROM}&to=${TO}&service=search${query}`);
}

/** The trace ids of the rows on screen, once `want` rows (or none) are shown. */
async function shownIds() {
  return page.locator(tid('trace-row')).evaluateAll((rows) => rows.map((r) => r.dataset.traceId));
}

async function rowsBecome(want, what) {
  await eventually(async () => assert.deepEqual(await shownIds(), want, what));
}

test('pages through more traces than a page holds with Next and Previous', async () => {
  await open('&limit=5');
  const newest = [...ALL].sort((a, b) => b.start - a.start).map((p) => p.trace);
  await rowsBecome(newest.slice(0, 5), 'first page, newest first');
  assert.equal(await page.locator(tid('traces-prev')).isDisabled(), true);
  await page.click(tid('traces-next'));
  await rowsBecome(newest.slice(5, 10), 'second page');
  assert.equal(new URL(page.url()).searchParams.get('offset'), '5');
  assert.match(await page.locator(tid('traces-page-range')).innerText(), /6–10 \(more follow\)/);
  await page.click(tid('traces-next'));
  await rowsBecome(newest.slice(10), 'last page');
  assert.equal(await page.locator(tid('traces-next')).isDisabled(), true, 'nothing after the last page');
  await page.click(tid('traces-prev'));
  await rowsBecome(newest.slice(5, 10), 'back to the second page');
  // The page in the URL survives a reload.
  await page.reload();
  await rowsBecome(newest.slice(5, 10), 'the second page after a reload');
});

test('sorts by duration, slowest or fastest first, across pages', async () => {
  await open('&limit=5');
  await page.locator(tid('trace-row')).first().waitFor();
  await page.selectOption(tid('traces-sort'), 'duration-desc');
  const slowest = [...ALL].sort((a, b) => b.root - a.root).map((p) => p.trace);
  await rowsBecome(slowest.slice(0, 5), 'slowest first');
  const durations = await page.locator(`${tid('trace-row')} .dur-text`).allInnerTexts();
  assert.deepEqual(durations, ALL.map((p) => p.root).sort((a, b) => b - a).slice(0, 5).map((ms) => `${ms} ms`));
  await page.click(tid('traces-next'));
  await rowsBecome(slowest.slice(5, 10), 'slowest first, second page');
  await page.selectOption(tid('traces-sort'), 'duration-asc');
  await rowsBecome([...slowest].reverse().slice(0, 5), 'fastest first, from the first page again');
  assert.equal(new URL(page.url()).searchParams.get('offset'), null);
});

/** The bounds of the distribution's bars as drawn, and their counts. */
async function bars() {
  return page.locator(tid('duration-chart')).evaluate((el) => el.histState.buckets);
}

test('the duration distribution counts the spans sent, and brushing it sets the duration filter', async () => {
  await open();
  await page.locator(tid('duration-bar')).first().waitFor();
  const drawn = await bars();
  const durations = ALL.flatMap((p) => [p.root, p.child]);
  assert.equal(drawn.reduce((n, b) => n + b.count, 0), durations.length, 'every span in one bar');
  for (const b of drawn) {
    const want = durations.filter((d) => d >= b.from_ms && (b.to_ms === null || d < b.to_ms)).length;
    assert.equal(b.count, want, `bar ${b.from_ms}-${b.to_ms} ms`);
  }
  assert.ok(drawn[0].count > 0 && drawn.at(-1).count > 0, 'trimmed to the shortest and longest spans');
  assert.equal(drawn[0].from_ms, 5, 'the shortest span, 5 ms, opens the first bar [5, 7)');
  // Drag from the bar holding 20 ms to the bar holding 60 ms.
  const lo = drawn.findIndex((b) => b.from_ms <= 20 && b.to_ms > 20);
  const hi = drawn.findIndex((b) => b.from_ms <= 60 && b.to_ms > 60);
  const box = async (i) => page.locator(`${tid('duration-bar')} >> nth=${i}`).boundingBox();
  const a = await box(lo);
  const b = await box(hi);
  await page.mouse.move(a.x + a.width / 2, a.y + a.height / 2);
  await page.mouse.down();
  await page.mouse.move(b.x + b.width / 2, b.y + b.height / 2, { steps: 6 });
  await page.mouse.up();
  const min = drawn[lo].from_ms;
  const max = drawn[hi].to_ms;
  await eventually(() => {
    const q = new URL(page.url()).searchParams;
    assert.equal(q.get('min_duration_ms'), String(min));
    assert.equal(q.get('max_duration_ms'), String(max));
  });
  assert.equal(await page.locator(tid('traces-min')).inputValue(), String(min), 'the form shows the brushed range');
  // The traces with a span in [min, max], newest first.
  const want = [...ALL]
    .filter((p) => [p.root, p.child].some((d) => d >= min && d <= max))
    .sort((x, y) => y.start - x.start)
    .map((p) => p.trace);
  await rowsBecome(want, `traces with a span of ${min} to ${max} ms`);
  // The brushed bars are highlighted, the rest not; the distribution still shows every span.
  const active = await page.locator(`${tid('duration-bar')} rect.bar`).evaluateAll((rs) => rs.map((r) => r.classList.contains('active')));
  assert.deepEqual(active, drawn.map((_, i) => i >= lo && i <= hi));
  assert.equal((await bars()).reduce((n, x) => n + x.count, 0), durations.length);
  await page.evaluate(() => document.fonts.ready);
  await page.screenshot({ path: path.join(OUT, 'trace-search-brushed.png'), fullPage: true });
});

test('the distribution is brushed from the keyboard too: arrows choose, Shift extends, Enter filters', async () => {
  await open();
  await page.locator(tid('duration-bar')).first().waitFor();
  const drawn = await bars();
  // From the Search form's last button, the next Tab stop is the chart.
  await page.locator(tid('traces-search')).focus();
  await page.keyboard.press('Tab');
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'duration-chart');
  await page.keyboard.press('Home');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Shift+ArrowRight');
  await page.keyboard.press('Shift+ArrowRight');
  const lit = await page.locator(`${tid('duration-bar')} rect.bar`).evaluateAll((rs) => rs.map((r) => r.classList.contains('active')));
  assert.deepEqual(lit, drawn.map((_, i) => i >= 2 && i <= 4), 'bars 2 to 4 chosen');
  assert.equal(new URL(page.url()).searchParams.get('min_duration_ms'), null, 'nothing applied before Enter');
  await page.keyboard.press('Enter');
  await eventually(() => {
    const q = new URL(page.url()).searchParams;
    assert.equal(q.get('min_duration_ms'), String(drawn[2].from_ms));
    assert.equal(q.get('max_duration_ms'), String(drawn[4].to_ms));
  });
});

/** The values of the attribute input's suggestions. */
async function suggestions() {
  return page.locator(`${tid('traces-attr-suggestions')} option`).evaluateAll((os) => os.map((o) => o.value));
}

test('suggests attribute keys and values from the data, span and resource attributes', async () => {
  await open();
  await eventually(async () => {
    const s = await suggestions();
    for (const want of ['tenant', 'tenant=acme', 'tenant=globex', 'retry.count', 'cache.hit', 'cache.hit=true', 'resource.host.name', 'resource.host.name=search-2', 'resource.service.name=search']) {
      assert.ok(s.includes(want), `suggestions hold ${want}: ${JSON.stringify(s)}`);
    }
    assert.ok(!s.some((x) => x.startsWith('no.such')), 'only what the data holds');
  });
  assert.equal(await page.locator(tid('traces-attr')).getAttribute('list'), 'trace-attr-suggestions');
  // A key and an operator typed: that key's values.
  await page.fill(tid('traces-attr'), 'tenant!=');
  await eventually(async () => assert.deepEqual((await suggestions()).sort(), ['tenant!=acme', 'tenant!=globex']));
  await page.fill(tid('traces-attr'), 'resource.host.name=');
  await eventually(async () =>
    assert.deepEqual((await suggestions()).sort(), ['resource.host.name=search-1', 'resource.host.name=search-2']));
});

async function searchWith(attr) {
  await open();
  await page.locator(tid('trace-row')).first().waitFor();
  await page.fill(tid('traces-attr'), attr);
  await page.click(tid('traces-search'));
}

test('!=, >, exists and resource filters find the traces a person would pick by hand', async () => {
  const newest = (pred) => ids(pred).reverse();
  await searchWith('tenant!=acme');
  await rowsBecome(newest((p) => p.tenant !== 'acme'), 'tenant != acme');
  assert.deepEqual(new URL(page.url()).searchParams.getAll('attr'), ['tenant!=acme']);
  await searchWith('retry.count>1');
  await rowsBecome(newest((p) => p.retries > 1), 'retry.count > 1');
  await searchWith('retry.count<1');
  await rowsBecome(newest((p) => p.retries < 1), 'retry.count < 1');
  await searchWith('cache.hit');
  await rowsBecome(newest((p) => p.cacheHit !== undefined), 'has cache.hit');
  await searchWith('resource.host.name=search-2');
  await rowsBecome(newest((p) => p.host === 'search-2'), 'resource host.name = search-2');
  assert.deepEqual(new URL(page.url()).searchParams.getAll('resource_attr'), ['host.name=search-2']);
  assert.deepEqual(new URL(page.url()).searchParams.getAll('attr'), []);
  // Two conditions: both must hold on one span.
  await page.fill(tid('traces-attr'), 'tenant=globex');
  await page.click(tid('traces-search'));
  await rowsBecome(newest((p) => p.host === 'search-2' && p.tenant === 'globex'), 'and tenant = globex');
  // A comparison with a word is refused, not dropped.
  await open();
  await page.locator(tid('trace-row')).first().waitFor();
  const before = page.url();
  await page.fill(tid('traces-attr'), 'retry.count>many');
  assert.equal(await page.locator(tid('traces-attr')).getAttribute('aria-invalid'), 'true');
  await page.click(tid('traces-search'));
  await page.locator(tid('traces-form-errors')).waitFor();
  assert.equal(page.url(), before, 'nothing applied');
});
