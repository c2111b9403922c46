// The web UI in a real browser against a real sightline server: log in, open
// every page and check what a person would see for a known dataset; follow
// links between pages; screenshots of every page land in test/browser/output/.

import { after, before, test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADMIN_PASSWORD, ADMIN_USER, Server, httpGet, sleep } from './lib/server.mjs';
import { assertChartDrawn, eventually, closeBrowserAndServer, launchBrowser, rowCells, testWithScreenshot } from './lib/browser.mjs';
import {
  buildDataset, tailLog, ERROR_TRACE, ERROR_CHARGE_SPAN, OK_TRACE, ERROR_TRACE_SPANS, EXCEPTION, EXPECTED,
  HEARTBEATS, LOG_ERROR_LINE, LOG_START_LINE,
} from './lib/dataset.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(here, 'output');
fs.mkdirSync(OUT, { recursive: true });

let server;
let browser;
let page;
const pageErrors = [];

const url = (p) => `${server.apiUrl}${p}`;
const tid = (id) => `[data-testid="${id}"]`;

async function shot(name, { fullPage = true } = {}) {
  await page.evaluate(() => document.fonts.ready);
  await page.screenshot({ path: path.join(OUT, `${name}.png`), fullPage });
}

async function goto(p) {
  await page.goto(url(p));
}

/** Waits until the page shows no "Loading…" placeholder. */
async function settled() {
  await eventually(async () => {
    assert.equal(await page.locator(tid('loading')).count(), 0, 'still loading');
  });
}

const test = testWithScreenshot(nodeTest, '', () => page);

function pathAndQuery() {
  const u = new URL(page.url());
  return { path: u.pathname, q: u.searchParams };
}

before(async () => {
  server = await new Server().start();
  const data = buildDataset();
  await server.ingest('traces', data.traces);
  await server.ingest('logs', data.logs);
  await server.ingest('metrics', data.metrics);
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  // What the server's Content-Security-Policy blocks is only a console error.
  page.on('console', (msg) => {
    if (msg.type() === 'error' && /Content Security Policy/i.test(msg.text())) pageErrors.push(msg.text());
  });
});

after(() => closeBrowserAndServer(browser, server));

test('the API is there', async () => {
  const r = await httpGet(url('/api/v1/me'));
  assert.equal(r.status, 401, `GET /api/v1/me without a session: ${r.status} ${r.text}`);
  assert.match(r.text, /"error"/);
});

test('login: a deep link goes through the login page and comes back', async () => {
  await goto(`/endpoints?service=frontend`);
  await page.waitForURL((u) => u.pathname === '/login');
  assert.equal(new URL(page.url()).searchParams.get('next'), '/endpoints?service=frontend');
  await page.fill(tid('login-username'), ADMIN_USER);
  await page.fill(tid('login-password'), 'wrong password');
  await page.click(tid('login-submit'));
  const err = page.locator(tid('login-error'));
  await err.waitFor();
  assert.ok((await err.innerText()).trim().length > 0, 'the API error message is shown');
  await page.fill(tid('login-password'), ADMIN_PASSWORD);
  await shot('01-login');
  await page.click(tid('login-submit'));
  await page.waitForURL((u) => u.pathname === '/endpoints');
  assert.equal(pathAndQuery().q.get('service'), 'frontend');
  await page.locator(tid('username')).waitFor();
  assert.equal(await page.locator(tid('username')).innerText(), ADMIN_USER);
});

test('overview: services with requests and error rates', async () => {
  await page.click(tid('nav-overview'));
  await page.waitForURL((u) => u.pathname === '/');
  const rows = page.locator(`${tid('services-table')} ${tid('service-row')}`);
  await rows.first().waitFor();
  const cells = await rowCells(rows);
  const byService = Object.fromEntries(cells.map((c) => [c[0], c]));
  for (const [svc, want] of Object.entries(EXPECTED.services)) {
    const c = byService[svc];
    assert.ok(c, `service ${svc} listed: ${JSON.stringify(cells)}`);
    // Service, Requests, Rate, Errors, Error rate, P50, P95, P99
    assert.equal(c[1], String(want.requests), `${svc} requests`);
    assert.equal(c[3], String(want.errors), `${svc} errors`);
    assert.equal(c[4], want.errorRate, `${svc} error rate`);
    for (const i of [5, 6, 7]) assert.match(c[i], /^[\d.,]+ (ms|s)$/, `${svc} latency cell ${c[i]}`);
    assert.match(c[2], /\/(s|min|h)$/, `${svc} rate`);
  }
  assert.equal(cells[0][0], 'frontend', 'by requests, descending');
  // How long the project's data is kept: the server's flags, forever here.
  await page.locator(tid('retention')).waitFor();
  assert.equal(await page.locator(tid('retention-spans')).textContent(), 'spans forever');
  assert.equal(await page.locator(tid('retention-metrics')).textContent(), ' · metrics forever');
  await settled();
  await shot('02-overview');
  // A service row leads to its endpoints.
  await page.locator(`${tid('service-row')}[data-service="checkout"]`).click();
  await page.waitForURL((u) => u.pathname === '/endpoints' && u.searchParams.get('service') === 'checkout');
  const eps = page.locator(tid('endpoint-row'));
  await eps.first().waitFor();
  const services = await eps.evaluateAll((trs) => trs.map((tr) => tr.dataset.service));
  assert.deepEqual([...new Set(services)], ['checkout']);
});

test('endpoints: counts, error rates, chart, sorting', async () => {
  await page.click(tid('nav-endpoints'));
  await page.waitForURL((u) => u.pathname === '/endpoints' && !u.searchParams.has('service'));
  await eventually(async () => {
    for (const want of EXPECTED.endpoints) {
      const row = page.locator(`${tid('endpoint-row')}[data-service="${want.service}"][data-endpoint="${want.endpoint}"]`);
      assert.equal(await row.count(), 1, `row ${want.service} ${want.endpoint}`);
      assert.equal((await row.locator(tid('endpoint-count')).innerText()).trim(), want.count, `${want.endpoint} count`);
      assert.equal((await row.locator(tid('endpoint-error-rate')).innerText()).trim(), want.errorRate, `${want.endpoint} error rate`);
    }
  });
  await assertChartDrawn(page, tid('endpoints-chart'));
  await settled();
  await shot('03-endpoints');

  // Chart metric selector: requests.
  await page.selectOption(tid('metric-select'), 'count');
  await eventually(() => assert.equal(pathAndQuery().q.get('metric'), 'count'));
  await assertChartDrawn(page, tid('endpoints-chart'));

  // Sorting: requests ascending puts a 2-request endpoint first.
  await page.click(tid('sort-count'));
  await eventually(() => assert.equal(pathAndQuery().q.get('order'), 'asc'));
  await eventually(async () => {
    const counts = await page.locator(`${tid('endpoint-row')} ${tid('endpoint-count')}`).allInnerTexts();
    assert.deepEqual(counts, ['2', '2', '6']);
  });
  // Sorting by endpoint, ascending: the API orders by (endpoint, service).
  await page.click(tid('sort-endpoint'));
  await eventually(async () => {
    assert.equal(pathAndQuery().q.get('sort'), 'endpoint');
    const keys = await page.locator(tid('endpoint-row')).evaluateAll((trs) => trs.map((tr) => `${tr.dataset.service} ${tr.dataset.endpoint}`));
    assert.deepEqual(keys, ['frontend /api/cart', 'frontend /api/checkout', 'checkout /charge']);
  });

  // Reload keeps everything (the URL holds the state).
  await page.reload();
  await page.locator(tid('endpoint-row')).first().waitFor();
  assert.equal(await page.locator(tid('metric-select')).inputValue(), 'count');
});

test('endpoints: an empty range says so', async () => {
  const to = Date.now() - 3 * 3_600_000;
  await goto(`/endpoints?from=${to - 3_600_000}&to=${to}`);
  await page.locator(tid('empty')).first().waitFor();
  assert.match(await page.locator(tid('empty')).first().innerText(), /No spans in this range/);
  assert.equal(await page.locator(tid('range-select')).inputValue(), 'custom');
});

test('traces: search, waterfall, span details, trace logs', async () => {
  await goto('/');
  await page.click(tid('nav-traces'));
  await page.waitForURL((u) => u.pathname === '/traces');
  await page.locator(tid('trace-row')).first().waitFor();
  await page.fill(tid('traces-service'), 'frontend');
  await page.selectOption(tid('traces-status'), 'error');
  await page.click(tid('traces-search'));
  await page.waitForURL((u) => u.searchParams.get('status') === 'error');
  await eventually(async () => {
    const ids = await page.locator(tid('trace-row')).evaluateAll((trs) => trs.map((tr) => tr.dataset.traceId));
    assert.deepEqual(ids, [ERROR_TRACE]);
  });
  const cells = (await rowCells(page.locator(tid('trace-row'))))[0];
  assert.match(cells[1], /POST \/api\/checkout/);
  assert.equal(cells[2], '4');
  assert.equal(cells[3], '182.5 ms');
  await settled();
  await shot('04-traces');

  await page.locator(tid('trace-row')).first().click();
  await page.waitForURL((u) => u.pathname === `/traces/${ERROR_TRACE}`);
  const spans = page.locator(`${tid('waterfall')} ${tid('span-row')}`);
  await spans.first().waitFor();
  assert.deepEqual(await spans.locator(tid('span-name')).allInnerTexts(), ERROR_TRACE_SPANS);
  const indents = await spans.evaluateAll((rows) => rows.map((r) => parseFloat(getComputedStyle(r.querySelector('.wf-name')).paddingLeft)));
  for (let i = 1; i < indents.length; i++) assert.ok(indents[i] > indents[i - 1], `indented by parent: ${indents}`);
  const errNames = await page.locator(`${tid('span-row')}[data-error="1"] ${tid('span-name')}`).allInnerTexts();
  assert.deepEqual(errNames, ['POST /api/checkout', 'POST /charge']);
  // Bars are positioned by start and sized by duration.
  const bars = await spans.evaluateAll((rows) => rows.map((r) => {
    const b = r.querySelector('.wf-bar').getBoundingClientRect();
    return { left: b.left, width: b.width };
  }));
  assert.ok(bars[0].width > bars[3].width, 'the root bar is longer than the db span bar');
  assert.ok(bars[3].left > bars[0].left, 'the db span starts later than the root');

  // Span details.
  await page.locator(`${tid('span-row')}[data-span-name="POST /charge"]`).click();
  const details = page.locator(tid('span-details'));
  await details.waitFor();
  const attrs = await details.locator(tid('span-attributes')).innerText();
  assert.match(attrs, /http\.route\s+\/charge/);
  assert.match(attrs, /payment\.method\s+card/);
  assert.match(await details.locator(tid('span-resource')).innerText(), /cloud\.region\s+eu-west-1/);
  const events = await details.locator(tid('span-events')).innerText();
  assert.match(events, /exception/);
  assert.match(events, new RegExp(EXCEPTION.message));
  assert.match(await details.locator(tid('span-links')).innerText(), new RegExp(OK_TRACE));
  assert.match(await details.locator(tid('span-status')).innerText(), /ERROR: card declined/);
  assert.ok(pathAndQuery().q.get('span'), 'the selected span is in the URL');

  // The trace's logs.
  const logs = page.locator(tid('trace-logs'));
  await eventually(async () => {
    const text = await logs.innerText();
    assert.match(text, new RegExp(LOG_ERROR_LINE));
    assert.match(text, new RegExp(LOG_START_LINE));
  });
  await settled();
  await shot('05-trace');

  // A reload restores the selected span.
  await page.reload();
  await page.locator(tid('span-details')).waitFor();
  assert.match(await page.locator(`${tid('span-details')} h2`).innerText(), /POST \/charge/);
});

test('trace page: an unknown trace shows the API error', async () => {
  await goto(`/traces/${'f'.repeat(32)}`);
  const err = page.locator(tid('error'));
  await err.waitFor();
  assert.ok((await err.innerText()).replace('Error:', '').trim().length > 0);
});

test('exceptions: grouped, with spans and a link to the trace', async () => {
  await goto('/');
  await page.click(tid('nav-exceptions'));
  const row = page.locator(`${tid('exception-row')}[data-type="${EXCEPTION.type}"]`);
  await row.waitFor();
  const c = (await rowCells(row))[0];
  // Type, Message, Service, Count, Last seen, First seen, Sample
  assert.equal(c[0], EXCEPTION.type);
  assert.equal(c[1], EXCEPTION.message);
  assert.equal(c[2], EXCEPTION.service);
  assert.equal(c[3], '1');
  await row.click();
  const spanRows = page.locator(`${tid('exception-spans')} ${tid('exception-span-row')}`);
  await spanRows.first().waitFor();
  assert.equal(await spanRows.count(), 1);
  assert.match((await rowCells(spanRows))[0][2], /POST \/charge/);
  await settled();
  await shot('06-exceptions');
  await spanRows.first().locator(tid('exception-trace-link')).click();
  await page.waitForURL((u) => u.pathname === `/traces/${ERROR_TRACE}`);
  await page.locator(tid('span-row')).first().waitFor();
  assert.deepEqual(await page.locator(tid('span-name')).allInnerTexts(), ERROR_TRACE_SPANS);
});

test('logs: newest first, volume chart, paging, filters, link to the trace', async () => {
  await goto('/');
  await page.click(tid('nav-logs'));
  const list = page.locator(tid('logs-list'));
  await list.waitFor();
  await eventually(async () => assert.match(await list.innerText(), new RegExp(LOG_ERROR_LINE)));
  await assertChartDrawn(page, tid('logs-volume-chart'));
  const total = HEARTBEATS + 6;
  const rows = list.locator(tid('log-row'));
  assert.equal(await rows.count(), 100, 'first page');
  // Newest first: the last heartbeats come after the trace logs in time, so compare timestamps.
  const times = await rows.evaluateAll((lis) => lis.map((li) => li.querySelector('time').getAttribute('title')));
  assert.deepEqual(times, [...times].sort().reverse(), 'newest first');
  await settled();
  await shot('07-logs', { fullPage: false });
  await page.click(tid('load-more'));
  await eventually(async () => assert.equal(await rows.count(), total));
  await page.locator(tid('logs-end')).waitFor();

  // Text search.
  await page.fill(tid('logs-q'), 'PAYMENT');
  await page.click(tid('logs-search'));
  await eventually(async () => {
    const bodies = await list.locator(tid('log-body')).allInnerTexts();
    assert.equal(bodies.length, 3, `matches: ${bodies}`);
    for (const b of bodies) assert.match(b, /payment/i);
  });
  // Min severity ERROR.
  await page.selectOption(tid('logs-severity'), '17');
  await eventually(async () => {
    const bodies = await list.locator(tid('log-body')).allInnerTexts();
    assert.deepEqual(bodies.sort(), ['checkout failed: upstream payment error', LOG_ERROR_LINE].sort());
  });
  assert.equal(pathAndQuery().q.get('severity_min'), '17');
  assert.equal(pathAndQuery().q.get('q'), 'PAYMENT');

  // The trace link of a log line opens its trace.
  const line = list.locator(tid('log-row'), { hasText: LOG_ERROR_LINE });
  await line.locator(tid('log-trace-link')).click();
  await page.waitForURL((u) => u.pathname === `/traces/${ERROR_TRACE}`);
  await page.locator(tid('span-row')).first().waitFor();
  assert.deepEqual(await page.locator(tid('span-name')).allInnerTexts(), ERROR_TRACE_SPANS);
  await page.locator(tid('span-details')).waitFor();
  assert.match(await page.locator(`${tid('span-details')} h2`).innerText(), /POST \/charge/);
});

test('logs: trace id filter and attribute filter', async () => {
  await goto(`/logs?trace_id=${OK_TRACE}`);
  const list = page.locator(tid('logs-list'));
  await eventually(async () => {
    const bodies = await list.locator(tid('log-body')).allInnerTexts();
    assert.deepEqual(bodies.sort(), ['charge accepted for order 1041', 'checkout started for cart 7']);
  });
  await goto('/logs');
  await page.fill(tid('logs-attr'), 'order.id=1042');
  await page.click(tid('logs-search'));
  await eventually(async () => {
    assert.deepEqual(await list.locator(tid('log-body')).allInnerTexts(), [LOG_ERROR_LINE]);
  });
  assert.deepEqual(pathAndQuery().q.getAll('attr'), ['order.id=1042']);
});

test('logs: live tail shows a new line within seconds', async () => {
  await goto('/logs');
  await page.locator(tid('logs-list')).waitFor();
  await page.click(tid('live-tail-toggle'));
  await page.locator(tid('tail-status')).waitFor();
  assert.equal(await page.locator(tid('live-tail')).isChecked(), true);
  assert.equal(pathAndQuery().q.get('tail'), '1');
  const text = `live tail line ${Date.now()}`;
  await sleep(300);
  await server.ingest('logs', tailLog(text));
  await eventually(async () => {
    const first = await page.locator(`${tid('logs-list')} ${tid('log-body')}`).first().innerText();
    assert.equal(first, text);
  }, { timeoutMs: 10_000 });
  await page.click(tid('live-tail-toggle'));
  await eventually(() => assert.equal(pathAndQuery().q.get('tail'), null));
});

test('metrics: explorer draws a histogram and a counter', async () => {
  await goto('/');
  await page.click(tid('nav-metrics'));
  await page.locator(tid('metric-name-select')).waitFor();
  const options = await page.locator(`${tid('metric-name-select')} option`).evaluateAll((os) => os.map((o) => o.value));
  for (const m of ['http.server.request.duration', 'shop.orders', 'process.memory.usage']) assert.ok(options.includes(m), `${m} in ${options}`);
  await page.selectOption(tid('metric-name-select'), 'http.server.request.duration');
  await eventually(async () => assert.equal(await page.locator(tid('agg-select')).inputValue(), 'p95'));
  await assertChartDrawn(page, tid('metrics-chart'));
  // Group by http.route: one series per route.
  await page.locator(`${tid('group-by')} label`, { hasText: 'http.route' }).locator('input').check();
  await eventually(async () => {
    const legend = await page.locator(`${tid('metrics-chart')} .u-legend`).innerText();
    assert.match(legend, /http\.route=\/api\/checkout/);
    assert.match(legend, /http\.route=\/api\/cart/);
  });
  await assertChartDrawn(page, tid('metrics-chart'));
  await settled();
  await shot('08-metrics');
  // A filter narrows to one series.
  await page.selectOption(tid('metric-filter-key'), 'http.route');
  await page.selectOption(tid('metric-filter-value'), '/api/cart');
  await page.click(tid('metric-filter-add'));
  await eventually(async () => {
    const legend = await page.locator(`${tid('metrics-chart')} .u-legend`).innerText();
    assert.doesNotMatch(legend, /\/api\/checkout/);
    assert.match(legend, /\/api\/cart/);
  });
  // The counter, as a rate.
  await page.selectOption(tid('metric-name-select'), 'shop.orders');
  await eventually(async () => assert.equal(await page.locator(tid('agg-select')).inputValue(), 'rate'));
  await assertChartDrawn(page, tid('metrics-chart'));
  await settled();
  await shot('08b-metrics-counter');
});

test('dark theme: follows the system, and the toggle overrides it', async () => {
  await page.emulateMedia({ colorScheme: 'dark' });
  await goto('/');
  await page.locator(tid('service-row')).first().waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'dark');
  const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(bg, 'rgb(15, 18, 24)');
  await settled();
  await shot('09-overview-dark');
  await goto(`/traces/${ERROR_TRACE}?span=${ERROR_CHARGE_SPAN}`);
  await page.locator(tid('span-details')).waitFor();
  await settled();
  await shot('10-trace-dark');
  await goto('/logs');
  await assertChartDrawn(page, tid('logs-volume-chart'));
  await settled();
  await shot('11-logs-dark', { fullPage: false });
  await page.click(tid('theme-toggle'));
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light');
  await page.reload();
  await page.locator(tid('logs-list')).waitFor();
  assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), 'light', 'the choice survives a reload');
  await page.click(tid('theme-toggle'));
  await page.evaluate(() => localStorage.clear());
  await page.emulateMedia({ colorScheme: 'light' });
});

test('header: project switcher, time range and auto-refresh live in the URL', async () => {
  await goto('/');
  await page.locator(tid('service-row')).first().waitFor();
  const projects = await page.locator(`${tid('project-select')} option`).allInnerTexts();
  assert.ok(projects.includes('default'), `projects: ${projects}`);
  await page.selectOption(tid('range-select'), '15m');
  await eventually(() => assert.equal(pathAndQuery().q.get('range'), '15m'));
  await page.selectOption(tid('refresh-select'), '10s');
  await eventually(() => assert.equal(pathAndQuery().q.get('refresh'), '10s'));
  // Navigation keeps the global state.
  await page.click(tid('nav-logs'));
  await page.waitForURL((u) => u.pathname === '/logs');
  assert.equal(pathAndQuery().q.get('range'), '15m');
  assert.equal(pathAndQuery().q.get('refresh'), '10s');
  // An unknown page is the app's own 404.
  await goto('/no/such/page');
  await page.getByText('Page not found').waitFor();
});

test('logout: back to the login page, and the API says 401', async () => {
  await goto('/');
  await page.click(tid('logout'));
  await page.waitForURL((u) => u.pathname === '/login');
  await goto('/logs');
  await page.waitForURL((u) => u.pathname === '/login');
  await page.locator(tid('login-form')).waitFor();
});

test('no uncaught errors in the page, no request left 127.0.0.1', () => {
  assert.deepEqual(pageErrors, []);
  assert.deepEqual(browser.blocked, []);
});
