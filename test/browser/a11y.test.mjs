// Keyboard use, no silent filter drops, and an automated accessibility check
// (axe-core) of every page, in a real browser against a real sightline server.
// Screenshots land in test/browser/output/.

import { after, before, test as nodeTest } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { ADMIN_PASSWORD, ADMIN_USER, Server } from './lib/server.mjs';
import { eventually, closeBrowserAndServer, launchBrowser, testWithScreenshot } from './lib/browser.mjs';
import { buildDataset, ERROR_CHARGE_SPAN, ERROR_TRACE, EXCEPTION, LOG_ERROR_LINE } from './lib/dataset.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.join(here, 'output');
fs.mkdirSync(OUT, { recursive: true });
const AXE_SOURCE = fs.readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let server;
let browser;
let page;
const pageErrors = [];

const url = (p) => `${server.apiUrl}${p}`;
const tid = (id) => `[data-testid="${id}"]`;

const test = testWithScreenshot(nodeTest, 'a11y-', () => page);

async function settled() {
  await eventually(async () => {
    assert.equal(await page.locator(tid('loading')).count(), 0, 'still loading');
  });
}

/** The data-testid (or tag) of the focused element and its extra data attributes. */
async function focused() {
  return page.evaluate(() => {
    const e = document.activeElement;
    if (!e || e === document.body) return { testid: null };
    return { testid: e.getAttribute('data-testid'), tag: e.tagName.toLowerCase(), data: { ...e.dataset }, text: e.textContent };
  });
}

/** Presses Tab until `pred(focused)` holds; fails after `max` presses. Only the keyboard moves focus. */
async function tabTo(pred, what, max = 120) {
  const seen = [];
  for (let i = 0; i < max; i++) {
    await page.keyboard.press('Tab');
    const f = await focused();
    if (pred(f)) return f;
    seen.push(f.testid ?? f.tag);
  }
  assert.fail(`${what}: not reached with ${max} Tab presses; focus went through ${seen.join(', ')}`);
}

/** Runs axe-core in the page; fails on any serious or critical violation. */
async function axeCheck(name) {
  await page.evaluate(AXE_SOURCE);
  const res = await page.evaluate(async () => {
    // eslint-disable-next-line no-undef
    const r = await axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => `${n.target.join(' ')}: ${n.failureSummary?.split('\n').slice(0, 3).join(' ')}`),
    }));
  });
  const bad = res.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(
    bad.map((v) => `${v.id} (${v.impact}): ${v.help}\n      ${v.nodes.join('\n      ')}`),
    [],
    `${name}: axe-core serious/critical violations`,
  );
  await page.screenshot({ path: path.join(OUT, `a11y-${name}.png`), fullPage: true });
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
});

after(() => closeBrowserAndServer(browser, server));

test('login page: no serious accessibility violations; log in', async () => {
  await page.goto(url('/login'));
  await page.locator(tid('login-username')).waitFor();
  await axeCheck('login');
  await page.fill(tid('login-username'), ADMIN_USER);
  await page.fill(tid('login-password'), ADMIN_PASSWORD);
  await page.click(tid('login-submit'));
  await page.waitForURL((u) => u.pathname !== '/login');
  await page.locator(tid('username')).waitFor();
});

test('skip link: the first Tab stop, and Enter moves the keyboard to the content', async () => {
  await page.goto(url('/endpoints'));
  await page.locator(tid('endpoint-row')).first().waitFor();
  await page.evaluate(() => document.activeElement?.blur());
  await page.keyboard.press('Tab');
  const f = await focused();
  assert.equal(f.testid, 'skip-link', `first focusable element: ${JSON.stringify(f)}`);
  assert.equal(f.text.trim(), 'Skip to content');
  assert.ok(await page.locator(tid('skip-link')).isVisible(), 'the skip link shows when focused');
  await page.keyboard.press('Enter');
  assert.equal(await page.evaluate(() => document.activeElement?.id), 'main');
  // The next Tab goes into the page, past the header's controls.
  await page.keyboard.press('Tab');
  const inside = await page.evaluate(() => !!document.activeElement?.closest('main'));
  assert.ok(inside, `after the skip link, Tab lands in the content: ${JSON.stringify(await focused())}`);
});

test('keyboard: an endpoint row opens its traces with Enter', async () => {
  await page.goto(url('/endpoints'));
  await page.locator(tid('endpoint-row')).first().waitFor();
  const f = await tabTo((x) => x.testid === 'endpoint-row' && x.data.endpoint === '/api/checkout', 'endpoint row /api/checkout');
  await page.keyboard.press('Enter');
  await page.waitForURL((u) => u.pathname === '/traces');
  const q = new URL(page.url()).searchParams;
  assert.equal(q.get('endpoint'), '/api/checkout');
  assert.equal(q.get('service'), f.data.service);
});

test('keyboard: a trace row opens the trace; a span row opens its details; Esc closes them', async () => {
  await page.goto(url('/traces?status=error'));
  await page.locator(tid('trace-row')).first().waitFor();
  await tabTo((x) => x.testid === 'trace-row' && x.data.traceId === ERROR_TRACE, 'error trace row');
  await page.keyboard.press('Enter');
  await page.waitForURL((u) => u.pathname === `/traces/${ERROR_TRACE}`);
  await page.locator(tid('span-row')).first().waitFor();
  await tabTo((x) => x.testid === 'span-row' && x.data.spanId === ERROR_CHARGE_SPAN, 'the charge span row');
  await page.keyboard.press('Enter');
  await page.locator(tid('span-details')).waitFor();
  assert.equal(new URL(page.url()).searchParams.get('span'), ERROR_CHARGE_SPAN);
  await axeCheck('trace-span-details');
  // Esc from inside the details (after tabbing into them) closes them too.
  await page.locator(tid('span-details-close')).focus();
  await page.keyboard.press('Escape');
  await eventually(async () => assert.equal(await page.locator(tid('span-details')).count(), 0, 'details closed by Esc'));
  assert.equal(new URL(page.url()).searchParams.get('span'), null);
  const f = await focused();
  assert.equal(f.data?.spanId, ERROR_CHARGE_SPAN, 'the keyboard is back on the span row');
  // Space works on a row as well.
  await page.keyboard.press(' ');
  await page.locator(tid('span-details')).waitFor();
  await page.keyboard.press('Escape');
  await eventually(async () => assert.equal(await page.locator(tid('span-details')).count(), 0));
});

test('keyboard: a log line opens with Enter and closes with Esc', async () => {
  await page.goto(url(`/logs?q=${encodeURIComponent(LOG_ERROR_LINE)}`));
  await page.locator(tid('log-row')).first().waitFor();
  await tabTo((x) => x.testid === 'log-line' && x.text.includes(LOG_ERROR_LINE), 'the error log line');
  await page.keyboard.press('Enter');
  const details = page.locator(tid('log-details'));
  await details.waitFor();
  assert.match(await details.innerText(), /payment failed/);
  await axeCheck('logs-open-line');
  await page.keyboard.press('Escape');
  await eventually(async () => assert.equal(await details.count(), 0, 'log details closed by Esc'));
});

test('keyboard: an exception group opens its spans with Enter; Esc closes them', async () => {
  await page.goto(url('/exceptions'));
  await page.locator(tid('exception-row')).first().waitFor();
  await tabTo((x) => x.testid === 'exception-row' && x.data.type === EXCEPTION.type, 'the exception group');
  await page.keyboard.press('Enter');
  await page.locator(tid('exception-spans')).waitFor();
  assert.equal(new URL(page.url()).searchParams.get('ex_type'), EXCEPTION.type);
  await page.locator(tid('exception-span-row')).first().waitFor();
  await axeCheck('exceptions-open-group');
  await page.keyboard.press('Escape');
  await eventually(async () => assert.equal(await page.locator(tid('exception-spans')).count(), 0, 'closed by Esc'));
  assert.equal(new URL(page.url()).searchParams.get('ex_type'), null);
  assert.equal((await focused()).data?.type, EXCEPTION.type, 'the keyboard is back on the group row');
});

test('traces: an invalid attribute filter or min above max is shown and not applied', async () => {
  await page.goto(url('/traces'));
  await page.locator(tid('trace-row')).first().waitFor();
  const before = page.url();
  // A bare key is a filter now ("has the key"); a comparison needs a number.
  await page.fill(tid('traces-attr'), 'foo>bar');
  assert.equal(await page.locator(tid('traces-attr')).getAttribute('aria-invalid'), 'true');
  await page.click(tid('traces-search'));
  const errs = page.locator(tid('traces-form-errors'));
  await errs.waitFor();
  assert.match(await errs.innerText(), /"foo>bar" is not key=value, key!=value, key>number/);
  assert.equal(page.url(), before, 'nothing applied');
  await axeCheck('traces-invalid-filter');

  await page.fill(tid('traces-attr'), '');
  await page.fill(tid('traces-min'), '500');
  await page.fill(tid('traces-max'), '10');
  assert.equal(await page.locator(tid('traces-min')).getAttribute('aria-invalid'), 'true');
  await page.click(tid('traces-search'));
  await eventually(async () => assert.match(await errs.innerText(), /Min duration \(500 ms\) is above max duration \(10 ms\)/));
  assert.equal(page.url(), before, 'nothing applied');

  // Fixed: applied.
  await page.fill(tid('traces-max'), '');
  await page.fill(tid('traces-attr'), 'http.route=/api/cart');
  await page.click(tid('traces-search'));
  await page.waitForURL((u) => u.searchParams.get('min_duration_ms') === '500');
  assert.deepEqual(new URL(page.url()).searchParams.getAll('attr'), ['http.route=/api/cart']);
  assert.equal(await errs.count(), 0);
});

test('traces: an invalid filter in the URL is not searched without it; it says why', async () => {
  await page.goto(url('/traces?attr=%3Dfoo'));
  const err = page.locator(tid('error'));
  await err.waitFor();
  assert.match(await err.innerText(), /"=foo" is not key=value/);
  assert.equal(await page.locator(tid('trace-row')).count(), 0, 'no unfiltered results');

  await page.goto(url('/traces?min_duration_ms=500&max_duration_ms=10'));
  await err.waitFor();
  assert.match(await err.innerText(), /Min duration \(500 ms\) is above max duration \(10 ms\)/);
  assert.equal(await page.locator(tid('empty')).count(), 0, 'not an empty list without a word');
});

test('logs: an invalid attribute filter or trace id is shown and not applied', async () => {
  await page.goto(url('/logs'));
  await page.locator(tid('log-row')).first().waitFor();
  const before = page.url();
  await page.fill(tid('logs-attr'), 'foo<');
  await page.fill(tid('logs-trace-id'), 'xyz');
  await page.click(tid('logs-search'));
  const errs = page.locator(tid('logs-form-errors'));
  await errs.waitFor();
  const text = await errs.innerText();
  assert.match(text, /"foo<" is not key=value/);
  assert.match(text, /Trace ID "xyz" is not 32 or 16 hex digits/);
  assert.equal(page.url(), before, 'nothing applied');

  await page.goto(url('/logs?attr=%3Dnokey'));
  const err = page.locator(tid('error'));
  await err.waitFor();
  assert.match(await err.innerText(), /"=nokey" is not key=value/);
  assert.equal(await page.locator(tid('log-row')).count(), 0, 'no unfiltered lines');
});

test('time range: an inverted or empty range in the URL says so instead of becoming the last hour', async () => {
  const now = Date.now();
  await page.goto(url(`/traces?from=${now}&to=${now - 3_600_000}`));
  const box = page.locator(tid('range-invalid'));
  await box.waitFor();
  assert.match(await box.innerText(), /inverted/);
  assert.equal(await page.locator(tid('trace-row')).count(), 0, 'no rows from another range');
  await axeCheck('range-inverted');

  await page.goto(url(`/logs?from=${now}&to=${now}`));
  await box.waitFor();
  assert.match(await box.innerText(), /empty/);
  assert.equal(await page.locator(tid('log-row')).count(), 0);

  await page.goto(url(`/traces?from=abc&to=${now}`));
  await box.waitFor();
  assert.match(await box.innerText(), /not two times/);

  // The way out keeps the page and its filters, and drops the bad range.
  await page.goto(url(`/traces?status=error&from=${now}&to=${now - 1000}`));
  await page.click(tid('range-invalid-reset'));
  await page.locator(tid('trace-row')).first().waitFor();
  const q = new URL(page.url()).searchParams;
  assert.equal(q.get('from'), null);
  assert.equal(q.get('status'), 'error');

  // The custom range picker says what is wrong with its two times.
  await page.selectOption(tid('range-select'), 'custom');
  await page.fill(tid('range-from'), '2026-01-02T10:00');
  await page.fill(tid('range-to'), '2026-01-02T09:00');
  const problem = page.locator(tid('range-problem'));
  await problem.waitFor();
  assert.match(await problem.innerText(), /From must be before To/);
  assert.ok(await page.locator(tid('range-apply')).isDisabled());
});

for (const [name, p, ready] of [
  ['overview', '/', 'service-row'],
  ['endpoints', '/endpoints', 'endpoint-row'],
  ['traces', '/traces', 'trace-row'],
  ['trace', `/traces/${ERROR_TRACE}`, 'span-row'],
  ['exceptions', '/exceptions', 'exception-row'],
  ['logs', '/logs', 'log-row'],
  ['metrics', '/metrics', null],
  ['service-map', '/map', 'map-edge'],
]) {
  test(`axe: ${name} page has no serious or critical violations (light and dark)`, async () => {
    for (const theme of ['light', 'dark']) {
      await page.emulateMedia({ colorScheme: theme });
      await page.evaluate(() => localStorage.clear());
      await page.goto(url(p));
      if (ready) await page.locator(tid(ready)).first().waitFor();
      await settled();
      assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), theme);
      await axeCheck(`${name}-${theme}`);
    }
    await page.emulateMedia({ colorScheme: 'light' });
  });
}

test('no page errors', () => {
  assert.deepEqual(pageErrors, []);
});
