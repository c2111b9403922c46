// Charts that neither hide nor invent data, and a refresh that keeps what is
// on screen (issue #14, points 1 and 3), in a real browser against a real
// server. Each chart keeps what it drew on its element (`chartState`: bucket
// starts, the y values as drawn, the indices drawn as points), and the tests
// check that against the sparse data sent here: one point, isolated points,
// gaps.

import { after, before, test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Server, sleep } from './lib/server.mjs';
import { eventually, closeBrowserAndServer, launchBrowser, logInAsAdmin, testWithScreenshot } from './lib/browser.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(here, 'output');
fs.mkdirSync(OUT, { recursive: true });

const tid = (id) => `[data-testid="${id}"]`;
const str = (key, v) => ({ key, value: { stringValue: v } });
const ns = (ms) => String(BigInt(Math.round(ms)) * 1000000n);
const hex = (n, len) => n.toString(16).padStart(len, '0');

// T: a whole minute half an hour ago, so the default "last hour" holds it all.
const T = Math.floor((Date.now() - 30 * 60_000) / 60_000) * 60_000;
// Spans and logs: a 10-minute range (10 s buckets, 60 of them).
const STEP = 10_000;
// Metrics: 2 minutes from T + 10 min (2 s buckets), a gauge every 5 s.
const M0 = T + 10 * 60_000;
const M_STEP = 2_000;
const REFRESH_LINES = 150; // a page and a half: one "Load more"

let server;
let browser;
let page;
const pageErrors = [];

function spans() {
  let n = 0;
  const span = (route, at, durMs) => {
    n++;
    return {
      traceId: `c4a70000000000000000000000${hex(n, 6)}`,
      spanId: `c4a7${hex(n, 12)}`,
      name: `GET ${route}`,
      kind: 2,
      startTimeUnixNano: ns(at),
      endTimeUnixNano: ns(at + durMs),
      attributes: [str('http.route', route)],
      status: { code: 0 },
    };
  };
  return {
    resourceSpans: [
      {
        resource: { attributes: [str('service.name', 'sparse')] },
        scopeSpans: [
          {
            scope: { name: 'charts-test' },
            spans: [
              // /run: three buckets in a row (a line), then one alone (bucket 6).
              span('/run', T + 1_000, 100),
              span('/run', T + 11_000, 200),
              span('/run', T + 21_000, 300),
              span('/run', T + 61_000, 489),
              // /once: a single point (bucket 30).
              span('/once', T + 301_000, 50),
            ],
          },
        ],
      },
    ],
  };
}

function logs() {
  const rec = (at, sev, text, body) => ({
    timeUnixNano: ns(at),
    observedTimeUnixNano: ns(at),
    severityNumber: sev,
    severityText: text,
    body: { stringValue: body },
    attributes: [],
  });
  const refresh = [];
  for (let i = 0; i < REFRESH_LINES; i++) refresh.push(rec(T + 5_000 + i * 1_000, 9, 'INFO', `refresh line ${i}`));
  return {
    resourceLogs: [
      {
        resource: { attributes: [str('service.name', 'sparse')] },
        scopeLogs: [
          {
            scope: { name: 'charts-test' },
            logRecords: [
              rec(T + 5_000, 17, 'ERROR', 'alone in bucket 0'),
              rec(T + 65_000, 9, 'INFO', 'bucket 6, first'),
              rec(T + 66_000, 9, 'INFO', 'bucket 6, second'),
              rec(T + 305_000, 13, 'WARN', 'alone in bucket 30'),
            ],
          },
        ],
      },
      { resource: { attributes: [str('service.name', 'refresh')] }, scopeLogs: [{ scope: { name: 'charts-test' }, logRecords: refresh }] },
    ],
  };
}

function metrics() {
  const gauge = [];
  const counter = [];
  const latency = [];
  // 24 points 5 s apart, half a second into their 2 s bucket: buckets 0, 2, 5, 7, 10, ...
  for (let k = 0; k < 24; k++) {
    const t = M0 + 500 + k * 5_000;
    gauge.push({ attributes: [str('host', 'a')], timeUnixNano: ns(t), asDouble: 10 + k });
    counter.push({ attributes: [], startTimeUnixNano: ns(M0 - 60_000), timeUnixNano: ns(t), asInt: String(1000 + 10 * k) });
    latency.push({
      attributes: [],
      startTimeUnixNano: ns(t - 5_000),
      timeUnixNano: ns(t),
      count: '10',
      sum: 300,
      bucketCounts: ['2', '6', '2'],
      explicitBounds: [10, 50],
    });
  }
  // host b: a single point, in bucket 15.
  gauge.push({ attributes: [str('host', 'b')], timeUnixNano: ns(M0 + 30_500), asDouble: 99 });
  return {
    resourceMetrics: [
      {
        resource: { attributes: [str('service.name', 'sparse')] },
        scopeMetrics: [
          {
            scope: { name: 'charts-test' },
            metrics: [
              { name: 'sparse.gauge', unit: '1', gauge: { dataPoints: gauge } },
              { name: 'sparse.requests', unit: '1', sum: { dataPoints: counter, aggregationTemporality: 2, isMonotonic: true } },
              { name: 'sparse.latency', unit: 'ms', histogram: { dataPoints: latency, aggregationTemporality: 1 } },
            ],
          },
        ],
      },
    ],
  };
}

const test = testWithScreenshot(nodeTest, 'charts-', () => page);

/** In-app navigation (the router listens to popstate), as a click on a link does. */
async function open(url) {
  await page.evaluate((u) => {
    history.pushState(null, '', u);
    dispatchEvent(new PopStateEvent('popstate'));
  }, url);
}

/** The chart's own record of what it drew, once `ready(state)` holds. */
async function chartState(id, ready = () => true) {
  return eventually(async () => {
    const s = await page.locator(tid(id)).evaluate((el) => el.chartState ?? null);
    assert.ok(s && ready(s), `chart ${id} not drawn as expected yet: ${JSON.stringify(s)?.slice(0, 300)}`);
    return s;
  });
}

const nonNull = (vals) => vals.flatMap((v, i) => (v === null ? [] : [i]));

/** Every index in `idxs` is drawn as a point in series `si`. */
function assertPoints(state, si, idxs, what) {
  const drawn = state.points[si];
  for (const i of idxs) {
    assert.ok(drawn === 'all' || drawn.includes(i), `${what}: bucket ${i} has no point drawn (points: ${JSON.stringify(drawn)})`);
  }
}

function assertGrid(state, step, first, what) {
  assert.equal(state.buckets[0], first, `${what}: first bucket`);
  for (const [i, b] of state.buckets.entries()) {
    assert.equal(b % step, 0, `${what}: bucket ${i} starts at ${b}, not a multiple of ${step}`);
    if (i > 0) assert.equal(b - state.buckets[i - 1], step, `${what}: bucket ${i} width`);
  }
}

before(async () => {
  server = await new Server().start();
  await server.ingest('traces', spans());
  await server.ingest('logs', logs());
  await server.ingest('metrics', metrics());
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  await logInAsAdmin(page, server);
});

after(() => closeBrowserAndServer(browser, server));

// A range that starts 3 s into a bucket: the server answers on the grid.
const spanRange = `from=${T + 3_000}&to=${T + 603_000}`;

test('endpoints chart: percentiles are lines, never stacked; gaps stay gaps; lone values are points', async () => {
  await open(`/endpoints?service=sparse&${spanRange}`);
  const s = await chartState('endpoints-chart', (x) => x.labels.length === 2);
  assert.equal(await page.locator(tid('stack-toggle')).count(), 0, 'no stacking offered for P95');
  assert.equal(s.stacked, false);
  assert.equal(s.kind, 'line');
  assertGrid(s, STEP, T, 'endpoints P95');
  const run = s.labels.indexOf('sparse /run');
  const once = s.labels.indexOf('sparse /once');
  assert.ok(run >= 0 && once >= 0, `labels ${s.labels}`);
  // The values drawn are each endpoint's own P95: nothing is added up.
  assert.deepEqual(nonNull(s.data[run]), [0, 1, 2, 6]);
  assert.deepEqual(nonNull(s.data[once]), [30]);
  assert.ok(Math.abs(s.data[run][6] - 489) < 5, `P95 of the lone /run span: ${s.data[run][6]}`);
  assert.ok(Math.abs(s.data[once][30] - 50) < 1, `P95 of /once: ${s.data[once][30]}`);
  assert.ok(Math.max(...s.data.flat().filter((v) => v !== null)) < 500, 'no value above the slowest P95');
  assertPoints(s, run, [6], '/run');
  assertPoints(s, once, [30], '/once (one point)');
  await page.screenshot({ path: path.join(OUT, 'charts-endpoints-p95.png') });

  // Requests: counts may be stacked (the default). A bucket without requests
  // is a true count of 0, so the stack's top is each bucket's total.
  await page.selectOption(tid('metric-select'), 'count');
  const c = await chartState('endpoints-chart', (x) => x.stacked);
  assert.equal(c.kind, 'area');
  assert.ok(await page.locator(tid('stack-toggle')).isChecked(), 'stacked by default for counts');
  const top = c.labels.indexOf('sparse /once');
  const bottom = c.labels.indexOf('sparse /run');
  assert.equal(top, c.labels.length - 1, 'the smaller endpoint is stacked on top');
  const totals = new Array(c.buckets.length).fill(0);
  for (const i of [0, 1, 2, 6, 30]) totals[i] = 1;
  assert.deepEqual(c.data[top], totals);
  assert.equal(c.data[bottom][30], 0, '/run had no request in bucket 30');
  await page.click(tid('stack-toggle'));
  const u = await chartState('endpoints-chart', (x) => !x.stacked);
  const own = u.data[u.labels.indexOf('sparse /once')];
  assert.deepEqual([own[6], own[30]], [0, 1], 'unstacked: /once\'s own counts');
});

test('logs volume: counts land in their aligned buckets', async () => {
  await open(`/logs?service=sparse&${spanRange}`);
  const s = await chartState('logs-volume-chart', (x) => x.labels.length === 3);
  assert.equal(s.kind, 'bars');
  assertGrid(s, STEP, T, 'logs volume');
  // The stack's top is the bucket's total.
  const total = s.buckets.map((_, i) => Math.max(0, ...s.data.map((d) => d[i] ?? 0)));
  const expected = new Array(s.buckets.length).fill(0);
  expected[0] = 1;
  expected[6] = 2;
  expected[30] = 1;
  assert.deepEqual(total, expected);
});

const metricRange = `from=${M0}&to=${M0 + 120_000}`;

test('metrics: a gauge every 5 s over 2 minutes, and a single-point series, are drawn as points', async () => {
  await open(`/metrics?metric=sparse.gauge&agg=avg&group_by=host&${metricRange}`);
  const s = await chartState('metrics-chart', (x) => x.labels.length === 2);
  assert.equal(s.stacked, false);
  assertGrid(s, M_STEP, M0, 'gauge');
  const a = s.labels.indexOf('host=a');
  const b = s.labels.indexOf('host=b');
  const want = Array.from({ length: 24 }, (_, k) => Math.floor((500 + k * 5_000) / M_STEP));
  assert.deepEqual(nonNull(s.data[a]), want);
  assert.deepEqual(want.map((i) => s.data[a][i]), want.map((_, k) => 10 + k));
  assert.deepEqual(nonNull(s.data[b]), [15]);
  assertPoints(s, a, want, 'gauge every 5 s');
  assertPoints(s, b, [15], 'single-point series');
  await page.screenshot({ path: path.join(OUT, 'charts-metrics-gauge.png') });
});

test('metrics: rate and histogram percentiles on sparse data are points with faithful values', async () => {
  await open(`/metrics?metric=sparse.requests&agg=rate&${metricRange}`);
  const r = await chartState('metrics-chart', (x) => x.labels.length === 1 && nonNull(x.data[0]).length > 0);
  const idx = nonNull(r.data[0]);
  // +10 every 5 s is 2/s; the first point has no baseline.
  assert.equal(idx.length, 23, `rate buckets ${idx}`);
  for (const i of idx) {
    assert.ok(r.data[0][i] > 1.5 && r.data[0][i] < 2.6, `rate in bucket ${i}: ${r.data[0][i]} (2/s sent)`);
  }
  assertPoints(r, 0, idx, 'rate');

  await open(`/metrics?metric=sparse.latency&agg=p95&${metricRange}`);
  const p = await chartState('metrics-chart', (x) => x.labels.length === 1 && nonNull(x.data[0]).length > 0);
  const pi = nonNull(p.data[0]);
  assert.equal(pi.length, 24, `p95 buckets ${pi}`);
  // 2, 6, 2 in (0,10], (10,50], (50,+inf): rank 9.5 of 10 lies in the last, open
  // bucket, reported at its lower bound or above.
  for (const i of pi) assert.ok(p.data[0][i] >= 50, `p95 in bucket ${i}: ${p.data[0][i]}`);
  assertPoints(p, 0, pi, 'p95');
});

test('refresh keeps the panels, loaded pages, the expanded line and the scroll position until the new answer is in', async () => {
  await open('/logs?service=refresh&range=1h');
  const rows = page.locator(`${tid('logs-list')} ${tid('log-row')}`);
  await eventually(async () => assert.equal(await rows.count(), 100));
  await page.click(tid('load-more'));
  await eventually(async () => assert.equal(await rows.count(), REFRESH_LINES));
  await chartState('logs-volume-chart');
  // Open a line on the second page and scroll it to the middle of the screen.
  const line = rows.filter({ hasText: 'refresh line 29' });
  await line.locator('.log-line').click();
  await line.locator(tid('log-details')).waitFor();
  await line.evaluate((el) => window.scrollTo(0, window.scrollY + el.getBoundingClientRect().top - 400));
  await sleep(100);
  const before = await page.evaluate(() => window.scrollY);
  assert.ok(before > 2000, `scrolled down: ${before}`);
  const topBefore = await line.evaluate((el) => el.getBoundingClientRect().top);

  // A new line, and the logs calls slowed down; their answers still come from the server.
  await server.ingest('logs', {
    resourceLogs: [{
      resource: { attributes: [str('service.name', 'refresh')] },
      scopeLogs: [{ scope: { name: 'charts-test' }, logRecords: [{ timeUnixNano: ns(Date.now() - 1_000), severityNumber: 9, severityText: 'INFO', body: { stringValue: 'refresh line new' }, attributes: [] }] }],
    }],
  });
  let served = 0;
  const logsCalls = (u) => u.pathname.startsWith('/api/v1/logs');
  await page.route(logsCalls, async (route) => {
    await sleep(1_500);
    served++;
    await route.continue();
  });
  await page.click(tid('refresh-now'));
  await eventually(async () => {
    assert.equal(await page.locator(`section[aria-busy="true"]${tid('logs-volume')}`).count(), 1, 'progress cue on the volume panel');
  }, { timeoutMs: 1_000, intervalMs: 50 });
  assert.ok(await page.locator(tid('progress')).isVisible(), 'progress bar under the header, in view while scrolled');
  assert.equal(served, 0, 'the answers are still held back');
  assert.equal(await page.locator(tid('loading')).count(), 0, 'no panel blanked to "Loading"');
  assert.equal(await rows.count(), REFRESH_LINES, 'the lines stay on screen');
  assert.ok(await line.locator(tid('log-details')).isVisible(), 'the expanded line stays open');
  assert.equal(await page.evaluate(() => window.scrollY), before, 'scroll position kept while loading');
  assert.equal(await page.locator(`${tid('logs-volume-chart')} canvas`).count(), 1, 'the chart stays');
  await page.screenshot({ path: path.join(OUT, 'charts-refreshing.png') });

  await eventually(async () => {
    assert.equal(await page.locator('section[aria-busy="true"]').count(), 0, 'cue gone once answered');
    assert.equal(await page.locator(tid('progress')).count(), 0, 'header bar gone once answered');
  });
  assert.ok(served >= 2, `the logs and volume calls were answered by the server: ${served}`);
  await page.unroute(logsCalls);
  // The new line is on top, the page loaded before is still there below it.
  assert.equal(await rows.first().locator(tid('log-body')).innerText(), 'refresh line new');
  assert.equal(await rows.count(), REFRESH_LINES + 1);
  assert.ok(await line.locator(tid('log-details')).isVisible(), 'the expanded line is still open');
  const topAfter = await line.evaluate((el) => el.getBoundingClientRect().top);
  assert.ok(Math.abs(topAfter - topBefore) <= 1, `the opened line stays where it was on screen: ${topBefore} -> ${topAfter}`);
});

test('no page errors', () => {
  assert.deepEqual(pageErrors, []);
});
