// The metric explorer (issue #14, point 7): the picker searches, each metric
// type opens with the aggregation that means something for it, a cumulative
// counter is never summed raw, and an exponential histogram charts the
// percentile its buckets give. In a real browser against a real server.

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

// M0: a whole minute half an hour ago; 2 minutes of data, a point every 10 s.
const M0 = Math.floor((Date.now() - 30 * 60_000) / 60_000) * 60_000;
const M_STEP = 10_000;
const range = `from=${M0}&to=${M0 + 120_000}`;

let server;
let browser;
let page;
const pageErrors = [];

// One point every 10 s, 5 s into each 10 s.
const times = Array.from({ length: 12 }, (_, k) => M0 + 5_000 + k * M_STEP);

function metrics() {
  const start = ns(M0 - 60_000);
  const sum = (name, monotonic, temporality, value, description) => ({
    name,
    description,
    unit: '1',
    sum: {
      isMonotonic: monotonic,
      aggregationTemporality: temporality,
      dataPoints: times.map((t, k) => ({ attributes: [], startTimeUnixNano: start, timeUnixNano: ns(t), asDouble: value(k) })),
    },
  });
  return {
    resourceMetrics: [
      {
        resource: { attributes: [str('service.name', 'explorer')] },
        scopeMetrics: [
          {
            scope: { name: 'metrics-test' },
            metrics: [
              {
                name: 'room.temperature',
                description: 'Air temperature',
                unit: 'Cel',
                gauge: { dataPoints: times.map((t, k) => ({ attributes: [], timeUnixNano: ns(t), asDouble: 20 + (k % 3) })) },
              },
              sum('jobs.done', true, 2, (k) => 30 * (k + 1), 'Jobs finished'), // 3 per second
              sum('queue.items', false, 2, (k) => 100 - 5 * k, 'Items waiting'), // an UpDownCounter
              {
                name: 'rpc.latency',
                description: 'RPC latency',
                unit: 's',
                // Delta, scale 0: per point 10 values in (1,2] and 10 in (2,4]
                // (positive offset 0 is (1,2]). P95: rank 19 of 20, 9 of 10
                // into (2,4]: 2 + 2 * 9/10 = 3.8.
                exponentialHistogram: {
                  aggregationTemporality: 1,
                  dataPoints: times.map((t) => ({
                    attributes: [],
                    startTimeUnixNano: ns(t - M_STEP),
                    timeUnixNano: ns(t),
                    count: '20',
                    sum: 55,
                    scale: 0,
                    zeroCount: '0',
                    positive: { offset: 0, bucketCounts: ['10', '10'] },
                  })),
                },
              },
              {
                name: 'gc.pause',
                description: 'GC pauses',
                unit: 'ms',
                // Reports P50 and P99 only: P95 lies between, 2 + 8 * (0.45/0.49).
                summary: {
                  dataPoints: times.map((t) => ({
                    attributes: [],
                    startTimeUnixNano: start,
                    timeUnixNano: ns(t),
                    count: '100',
                    sum: 300,
                    quantileValues: [
                      { quantile: 0.5, value: 2 },
                      { quantile: 0.99, value: 10 },
                    ],
                  })),
                },
              },
              ...Array.from({ length: 7 }, (_, i) => ({
                name: `filler.metric.${i}`,
                unit: '1',
                gauge: { dataPoints: [{ attributes: [], timeUnixNano: ns(times[0]), asDouble: i }] },
              })),
            ],
          },
        ],
      },
    ],
  };
}

const test = testWithScreenshot(nodeTest, 'metrics-', () => page);

/** In-app navigation (the router listens to popstate), as a click on a link does. */
async function open(url) {
  await page.evaluate((u) => {
    history.pushState(null, '', u);
    dispatchEvent(new PopStateEvent('popstate'));
  }, url);
}

async function chartState(ready = () => true) {
  return eventually(async () => {
    const s = await page.locator(tid('metrics-chart')).evaluate((el) => el.chartState ?? null);
    assert.ok(s && ready(s), `chart not drawn as expected yet: ${JSON.stringify(s)?.slice(0, 300)}`);
    return s;
  });
}

const options = (sel) => page.locator(`${tid(sel)} option`).evaluateAll((os) => os.map((o) => o.value));
const query = () => new URL(page.url()).searchParams;

before(async () => {
  server = await new Server().start();
  await server.ingest('metrics', metrics());
  browser = await launchBrowser();
  page = await browser.context.newPage();
  page.on('pageerror', (err) => pageErrors.push(String(err)));
  await logInAsAdmin(page, server);
});

after(() => closeBrowserAndServer(browser, server));

test('the metric picker narrows the list as one types, and Enter opens the first match', async () => {
  await open(`/metrics?${range}`);
  await page.locator(tid('metric-search')).waitFor();
  assert.equal((await options('metric-name-select')).length, 12);
  await page.fill(tid('metric-search'), 'QUEUE');
  // The open metric (the first by name) stays selectable above the matches.
  await eventually(async () => assert.deepEqual(await options('metric-name-select'), ['filler.metric.0', 'queue.items']));
  assert.equal(await page.locator(tid('metric-search-count')).innerText(), '1 of 12');
  await page.press(tid('metric-search'), 'Enter');
  await eventually(() => assert.equal(query().get('metric'), 'queue.items'));
  // Descriptions match too, every word of the search.
  await page.fill(tid('metric-search'), 'rpc lat');
  await eventually(async () => assert.ok((await options('metric-name-select')).includes('rpc.latency')));
  await page.fill(tid('metric-search'), 'air temp');
  await eventually(async () => assert.deepEqual(await options('metric-name-select'), ['queue.items', 'room.temperature']));
  await page.fill(tid('metric-search'), 'no such metric');
  await eventually(async () => assert.equal(await page.locator(tid('metric-search-count')).innerText(), '0 of 12'));
  await page.fill(tid('metric-search'), '');
  await eventually(async () => assert.equal((await options('metric-name-select')).length, 12));
  await page.screenshot({ path: path.join(OUT, 'metrics-picker.png') });
});

test('each metric type opens with its own aggregation, and a cumulative counter is never summed', async () => {
  const cases = [
    ['room.temperature', 'avg', ['avg', 'min', 'max', 'last', 'sum']],
    ['jobs.done', 'rate', ['rate', 'last']],
    ['queue.items', 'last', ['last', 'avg', 'min', 'max']],
    ['rpc.latency', 'p95', ['p95', 'p50', 'p99']],
    ['gc.pause', 'p95', ['p95', 'p50', 'p99']],
  ];
  for (const [name, agg, offered] of cases) {
    await open(`/metrics?metric=${name}&${range}`);
    await eventually(async () => assert.equal(await page.locator(tid('agg-select')).inputValue(), agg, name));
    assert.deepEqual(await options('agg-select'), offered, `${name}: aggregations offered`);
    await chartState((s) => s.labels.length === 1 && s.data[0].some((v) => v !== null));
  }
  // A bookmarked raw sum of the counter falls back to its rate.
  await open(`/metrics?metric=jobs.done&agg=sum&${range}`);
  await eventually(async () => assert.equal(await page.locator(tid('agg-select')).inputValue(), 'rate'));
});

test('the charted values: a counter\'s rate, an UpDownCounter\'s level, an exponential histogram\'s and a summary\'s P95', async () => {
  // The values drawn in time order, whatever the step (one point per 10 s).
  const drawn = async (url, count) => {
    await open(`${url}&${range}`);
    const s = await chartState((x) => x.labels.length === 1 && x.data[0].filter((v) => v !== null).length === count);
    return s.data[0].filter((v) => v !== null);
  };
  // The first point has no baseline; each later one adds 30 in 10 s.
  const rate = await drawn('/metrics?metric=jobs.done&agg=rate', 11);
  rate.forEach((v, i) => assert.ok(Math.abs(v - 3) < 1e-9, `rate ${i}: ${v}`));
  const level = await drawn('/metrics?metric=queue.items&agg=last', 12);
  assert.deepEqual(level, times.map((_, k) => 100 - 5 * k));
  const p95 = await drawn('/metrics?metric=rpc.latency&agg=p95', 12);
  p95.forEach((v, i) => assert.ok(Math.abs(v - 3.8) < 1e-9, `P95 ${i}: ${v}`));
  const reported = await drawn('/metrics?metric=gc.pause&agg=p99', 12);
  assert.deepEqual(reported, times.map(() => 10), 'a summary\'s reported P99');
  const between = await drawn('/metrics?metric=gc.pause&agg=p95', 12);
  between.forEach((v, i) => assert.ok(Math.abs(v - (2 + (8 * 0.45) / 0.49)) < 1e-9, `summary P95 ${i}: ${v}`));
  await page.screenshot({ path: path.join(OUT, 'metrics-exponential-p95.png') });
  assert.deepEqual(pageErrors, []);
});
