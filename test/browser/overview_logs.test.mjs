// The overview's services over time, the Logs page's total, facets and
// collapsed repeats, and keyboard movement in the trace waterfall (issue #14
// part 7), in a real browser against a real server. Charts are checked by
// their own record of what they drew (`chartState`), against the API's answer
// and against the spans sent here.

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
const ns = (ms) => String(BigInt(Math.round(ms)) * 1000000n);
const hex = (n, len) => n.toString(16).padStart(len, '0');

// T: a whole minute half an hour ago; pages look at [T, T + 10 min): 10 s buckets.
const T = Math.floor((Date.now() - 30 * 60_000) / 60_000) * 60_000;
const RANGE = `from=${T}&to=${T + 600_000}`;
const STEP_S = 10;
const TRACE = 'b7a5c0de000000000000000000000001';

let server;
let browser;
let page;
const pageErrors = [];

// Entry spans: ov-one in buckets 0-2 (bucket 1: 4 requests, 1 error), ov-two
// in buckets 1 and 30. Plus one trace of four spans for the waterfall.
const SPANS = [
  ['ov-one', 1_000, 100, false], ['ov-one', 2_000, 300, false],
  ['ov-one', 11_000, 50, false], ['ov-one', 12_000, 60, true], ['ov-one', 13_000, 70, false], ['ov-one', 14_000, 80, false],
  ['ov-one', 21_000, 500, false],
  ['ov-two', 15_000, 20, true], ['ov-two', 301_000, 40, false],
];

function spans() {
  const byService = new Map();
  SPANS.forEach(([service, at, dur, err], i) => {
    if (!byService.has(service)) byService.set(service, []);
    byService.get(service).push({
      traceId: `b7a50000000000000000000000${hex(i + 1, 6)}`,
      spanId: `b7a5${hex(i + 1, 12)}`,
      name: 'GET /x',
      kind: 2,
      startTimeUnixNano: ns(T + at),
      endTimeUnixNano: ns(T + at + dur),
      status: { code: err ? 2 : 0 },
    });
  });
  const wf = (id, parent, name, at, dur) => ({
    traceId: TRACE,
    spanId: `c0de${hex(id, 12)}`,
    parentSpanId: parent ? `c0de${hex(parent, 12)}` : undefined,
    name,
    kind: parent ? 1 : 2,
    startTimeUnixNano: ns(T + 400_000 + at),
    endTimeUnixNano: ns(T + 400_000 + at + dur),
    status: { code: 0 },
  });
  const waterfall = [wf(1, 0, 'root', 0, 100), wf(2, 1, 'first', 5, 20), wf(3, 2, 'second', 10, 5), wf(4, 1, 'third', 40, 30)];
  return {
    resourceSpans: [
      ...[...byService].map(([service, list]) => ({
        resource: { attributes: [str('service.name', service)] },
        scopeSpans: [{ scope: { name: 'overview-test' }, spans: list }],
      })),
      { resource: { attributes: [str('service.name', 'wf')] }, scopeSpans: [{ scope: { name: 'overview-test' }, spans: waterfall }] },
    ],
  };
}

// Log records: lg-a 6 lines (4 identical in a row), lg-b 3; region attributes.
const LOGS = [
  ['lg-a', 10_000, 9, 'INFO', 'started', 'eu'],
  ['lg-a', 20_000, 13, 'WARN', 'retrying connection', 'eu'],
  ['lg-a', 21_000, 13, 'WARN', 'retrying connection', 'eu'],
  ['lg-a', 22_000, 13, 'WARN', 'retrying connection', 'us'],
  ['lg-a', 23_000, 13, 'WARN', 'retrying connection', 'eu'],
  ['lg-a', 30_000, 17, 'ERROR', 'gave up', 'eu'],
  ['lg-b', 40_000, 9, 'INFO', 'hello', 'us'],
  ['lg-b', 41_000, 9, 'INFO', 'world', 'us'],
  ['lg-b', 42_000, 17, 'ERROR', 'oops', 'eu'],
];

function logs() {
  const byService = new Map();
  for (const [service, at, sev, text, body, region] of LOGS) {
    if (!byService.has(service)) byService.set(service, []);
    byService.get(service).push({
      timeUnixNano: ns(T + at),
      observedTimeUnixNano: ns(T + at),
      severityNumber: sev,
      severityText: text,
      body: { stringValue: body },
      attributes: [str('region', region)],
    });
  }
  return {
    resourceLogs: [...byService].map(([service, logRecords]) => ({
      resource: { attributes: [str('service.name', service)] },
      scopeLogs: [{ scope: { name: 'overview-test' }, logRecords }],
    })),
  };
}

const test = testWithScreenshot(nodeTest, 'overview-logs-', () => page);

async function open(url) {
  await page.evaluate((u) => {
    history.pushState(null, '', u);
    dispatchEvent(new PopStateEvent('popstate'));
  }, url);
}

async function chartState(id, ready = () => true) {
  return eventually(async () => {
    const s = await page.locator(tid(id)).evaluate((el) => el.chartState ?? null);
    assert.ok(s && ready(s), `chart ${id} not drawn as expected yet: ${JSON.stringify(s)?.slice(0, 300)}`);
    return s;
  });
}

before(async () => {
  server = await new Server().start();
  await server.ingest('traces', spans());
  await server.ingest('logs', logs());
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  await logInAsAdmin(page, server);
});

after(() => closeBrowserAndServer(browser, server));

test('overview: request rate, error rate and P95 per service are drawn as the API answered, on its grid', async () => {
  const answer = page.waitForResponse((r) => r.url().includes('/api/v1/services/series') && r.url().includes(`from=${T}&`));
  await open(`/?${RANGE}`);
  const api = await (await answer).json();
  const rate = await chartState('overview-rate-chart', (x) => x.labels.length >= 2);
  const errors = await chartState('overview-errors-chart', (x) => x.labels.length >= 2);
  const p95 = await chartState('overview-p95-chart', (x) => x.labels.length >= 2);
  const labels = api.series.map((s) => s.service);
  // The waterfall trace's root is an entry span of "wf" too.
  assert.deepEqual(labels.slice(0, 2), ['ov-one', 'ov-two']);
  for (const s of [rate, errors, p95]) {
    assert.deepEqual(s.buckets, api.buckets);
    assert.deepEqual(s.labels, labels);
    assert.equal(s.stacked, false, 'rates and percentiles are never stacked');
    assert.equal(s.kind, 'line');
  }
  assert.equal(api.step_ms, STEP_S * 1000);
  assert.equal(api.buckets[0], T);
  api.series.forEach((s, i) => {
    assert.deepEqual(rate.data[i], s.requests.map((n) => n / STEP_S), `${s.service} rate`);
    assert.deepEqual(errors.data[i], s.requests.map((n, b) => (n ? s.errors[b] / n : null)), `${s.service} error rate`);
    assert.deepEqual(p95.data[i], s.p95_ms, `${s.service} P95`);
  });
  // And the API against what was sent: ov-one has 2, 4, 1 requests in buckets 0-2, one error in bucket 1.
  const one = labels.indexOf('ov-one');
  assert.deepEqual(rate.data[one].slice(0, 4), [0.2, 0.4, 0.1, 0]);
  assert.deepEqual(errors.data[one].slice(0, 4), [0, 0.25, 0, null]);
  assert.equal(p95.data[one][3], null, 'no requests: a gap, not 0');
  assert.ok(Math.abs(p95.data[one][0] - (100 + 0.95 * 200)) < 1e-6, `P95 bucket 0: ${p95.data[one][0]}`);
  assert.ok(Math.abs(p95.data[one][2] - 500) < 1e-6);
  const two = labels.indexOf('ov-two');
  assert.equal(errors.data[two][1], 1);
  assert.equal(rate.data[two][30], 0.1);
  // Lone values (ov-two's bucket 30) are drawn as points, not lost.
  const drawn = p95.points[two];
  assert.ok(drawn === 'all' || drawn.includes(30), `points ${JSON.stringify(drawn)}`);
  await page.screenshot({ path: path.join(OUT, 'overview-charts.png'), fullPage: true });
});

test('logs: the exact total, facets that filter when clicked, and a ×N badge for repeated lines', async () => {
  await open(`/logs?${RANGE}`);
  await eventually(async () => assert.equal(await page.locator(tid('logs-total')).innerText(), String(LOGS.length)));
  assert.match(await page.locator(tid('logs-facets-total')).innerText(), new RegExp(`^${LOGS.length} matching`));
  // Service facet counts as sent.
  const svc = async () => Object.fromEntries(
    await page.locator(tid('facet-service-value')).evaluateAll((els) => els.map((e) => [e.dataset.value, e.querySelector('.facet-count').textContent])),
  );
  assert.deepEqual(await svc(), { 'lg-a': '6', 'lg-b': '3' });
  const region = page.locator(`${tid('facet-attr')}[data-key="region"] ${tid('facet-attr-value')}`);
  assert.deepEqual(await region.evaluateAll((els) => els.map((e) => [e.dataset.value, e.querySelector('.facet-count').textContent])),
    [['eu', '6'], ['us', '3']]);

  // Four identical lines in a row show as one with a ×4 badge, and expand.
  const badge = page.locator(tid('repeat-badge'));
  await badge.first().waitFor();
  assert.equal(await badge.count(), 1);
  assert.equal(await badge.locator('[aria-hidden="true"]').innerText(), '×4');
  // Its accessible name says what it is, for a screen reader.
  assert.equal(await page.getByRole('button', { name: /^4 identical lines in a row; show each$/ }).count(), 1);
  assert.equal(await badge.getAttribute('aria-expanded'), 'false');
  const bodies = () => page.locator(tid('log-body')).allInnerTexts();
  assert.deepEqual(await bodies(), ['oops', 'world', 'hello', 'gave up', 'retrying connection', 'started']);
  await page.screenshot({ path: path.join(OUT, 'logs-facets.png'), fullPage: true });
  await badge.click();
  assert.equal(await badge.getAttribute('aria-expanded'), 'true');
  assert.equal(await page.getByRole('button', { name: /^4 identical lines in a row; collapse them$/ }).count(), 1);
  assert.equal((await bodies()).filter((b) => b === 'retrying connection').length, 4);
  await page.screenshot({ path: path.join(OUT, 'logs-repeats-expanded.png'), fullPage: true });

  // A service facet narrows the filter (the URL), and the total follows.
  await page.locator(`${tid('facet-service-value')}[data-value="lg-b"]`).click();
  await eventually(async () => assert.equal(new URL(page.url()).searchParams.get('service'), 'lg-b'));
  await eventually(async () => assert.equal(await page.locator(tid('logs-total')).innerText(), '3'));
  await eventually(async () => assert.deepEqual(await bodies(), ['oops', 'world', 'hello']));
  // An attribute facet adds key=value.
  await page.locator(`${tid('facet-attr')}[data-key="region"] ${tid('facet-attr-value')}[data-value="us"]`).click();
  await eventually(async () => assert.deepEqual(new URL(page.url()).searchParams.getAll('attr'), ['region=us']));
  await eventually(async () => assert.deepEqual(await bodies(), ['world', 'hello']));
  assert.equal(await page.locator(tid('logs-total')).innerText(), '2');
  await page.screenshot({ path: path.join(OUT, 'logs-facet-filtered.png'), fullPage: true });
  // A value in the filter is pressed; choosing it again drops it.
  const lgB = page.locator(`${tid('facet-service-value')}[data-value="lg-b"]`);
  assert.equal(await lgB.getAttribute('aria-pressed'), 'true');
  await lgB.click();
  await eventually(async () => assert.equal(new URL(page.url()).searchParams.get('service'), null));
  await eventually(async () => assert.equal(await page.locator(tid('logs-total')).innerText(), '3'));
  assert.deepEqual(new URL(page.url()).searchParams.getAll('attr'), ['region=us']);
});

test('trace: arrow keys, Home and End move between waterfall rows; Esc closes the custom-range form', async () => {
  await open(`/traces/${TRACE}?${RANGE}`);
  const rows = page.locator(tid('span-row'));
  await eventually(async () => assert.equal(await rows.count(), 4));
  const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-span-name'));
  await rows.first().focus();
  assert.equal(await focused(), 'root');
  await page.keyboard.press('ArrowDown');
  assert.equal(await focused(), 'first');
  await page.keyboard.press('ArrowDown');
  assert.equal(await focused(), 'second');
  await page.keyboard.press('ArrowUp');
  assert.equal(await focused(), 'first');
  await page.keyboard.press('End');
  assert.equal(await focused(), 'third');
  await page.keyboard.press('ArrowDown');
  assert.equal(await focused(), 'third', 'past the last row: stays');
  await page.keyboard.press('Home');
  assert.equal(await focused(), 'root');
  await page.keyboard.press('ArrowUp');
  assert.equal(await focused(), 'root');
  // Enter still opens the focused span.
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Enter');
  await eventually(async () => assert.equal(new URL(page.url()).searchParams.get('span'), 'c0de000000000002'));
  await page.screenshot({ path: path.join(OUT, 'trace-keyboard.png'), fullPage: true });

  // The range in the URL is custom: its form is open; Esc closes it (the span stays open).
  const form = page.locator(tid('range-form'));
  await form.waitFor();
  await page.locator(tid('range-from')).focus();
  await page.keyboard.press('Escape');
  await eventually(async () => assert.equal(await form.count(), 0));
  assert.equal(new URL(page.url()).searchParams.get('span'), 'c0de000000000002', 'Esc in the form does not close the span');
  assert.equal(await page.evaluate(() => document.activeElement?.getAttribute('data-testid')), 'range-select');
  await page.click(tid('range-edit'));
  await form.waitFor();
  // With a preset range, Esc closes the form and the select is back on it.
  await open('/logs');
  await page.selectOption(tid('range-select'), 'custom');
  await form.waitFor();
  await page.locator(tid('range-to')).focus();
  await page.keyboard.press('Escape');
  await eventually(async () => assert.equal(await form.count(), 0));
  assert.equal(await page.locator(tid('range-select')).inputValue(), '1h');
  assert.deepEqual(pageErrors, []);
});
