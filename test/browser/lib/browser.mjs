// Debian's chromium driven by playwright-core: headless, a fresh profile dir,
// and no network except 127.0.0.1.

import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

import { ADMIN_PASSWORD, ADMIN_USER } from './server.mjs';

export const CHROMIUM = process.env.SIGHTLINE_CHROMIUM || '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  // Belt and braces: no name but 127.0.0.1 resolves.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];

/**
 * `intercept: false` leaves requests to the browser alone (the host resolver
 * rule above still keeps it on 127.0.0.1): while Playwright intercepts, it
 * answers every CORS preflight itself, allowing everything, so a test of
 * the server's own preflight answers must run without it.
 */
export async function launchBrowser({ colorScheme = 'light', intercept = true } = {}) {
  const userDataDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'sightline-chromium-'));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1440, height: 900 },
    colorScheme,
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  context.setDefaultTimeout(15_000);
  const blocked = [];
  if (intercept) {
    await context.route('**/*', (route) => {
      const u = new URL(route.request().url());
      if (u.protocol === 'data:' || u.protocol === 'blob:' || u.hostname === '127.0.0.1') return route.continue();
      blocked.push(u.href);
      return route.abort('blockedbyclient');
    });
  }
  return {
    context,
    blocked,
    async close() {
      await context.close();
      await fsp.rm(userDataDir, { recursive: true, force: true });
    },
  };
}

/** Retries `fn` until it stops throwing or `timeoutMs` passes (then rethrows its last error). */
export async function eventually(fn, { timeoutMs = 10_000, intervalMs = 150 } = {}) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}

/** Visible text of the cells of each row matched by `rows`. */
export async function rowCells(rows) {
  return rows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.innerText.trim())));
}

/**
 * Asserts the uPlot chart under `container` drew a canvas with a non-zero size
 * and with series pixels (saturated colours, unlike the grey axes and grid).
 */
export async function assertChartDrawn(page, container) {
  const info = await eventually(async () => {
    const r = await page.locator(container).locator('canvas').first().evaluate((c) => {
      const ctx = c.getContext('2d');
      const { width, height } = c;
      const data = ctx.getImageData(0, 0, width, height).data;
      let colored = 0;
      for (let i = 0; i < data.length; i += 4) {
        const [r, g, b, a] = [data[i], data[i + 1], data[i + 2], data[i + 3]];
        if (a > 0 && Math.max(r, g, b) - Math.min(r, g, b) > 40) colored++;
      }
      const box = c.getBoundingClientRect();
      return { width, height, cssWidth: box.width, cssHeight: box.height, colored };
    });
    assert.ok(r.width > 0 && r.height > 0 && r.cssWidth > 0 && r.cssHeight > 0, `canvas size ${JSON.stringify(r)}`);
    assert.ok(r.colored > 50, `chart in ${container} has no drawn series: ${JSON.stringify(r)}`);
    return r;
  });
  return info;
}

/**
 * A node:test `test` whose failure saves a screenshot of the page (`getPage()`)
 * to test/browser/output/FAILED-<prefix><name>.png and names it in the error.
 */
export function testWithScreenshot(nodeTest, prefix, getPage) {
  return (name, fn) => nodeTest(name, async (t) => {
    try {
      await fn(t);
    } catch (err) {
      const page = getPage();
      if (page) {
        const file = `FAILED-${prefix}${name.replace(/[^a-z0-9]+/gi, '-').slice(0, 60)}.png`;
        const out = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'output', file);
        await page.screenshot({ path: out, fullPage: true }).catch(() => {});
        err.message += `\n  page: ${page.url()}\n  screenshot: test/browser/output/${file}`;
      }
      throw err;
    }
  });
}

/** Closes the browser, then stops the server, reporting an unclean exit with its log. */
export async function closeBrowserAndServer(browser, server) {
  try {
    if (browser) await browser.close();
  } finally {
    if (server) {
      const exit = await server.stop();
      if (exit && exit.code !== 0) console.error(`server exit ${JSON.stringify(exit)}\n${server.logTail()}`);
    }
  }
}

/** Logs the page in as the test server's admin through the login form. */
export async function logInAsAdmin(page, server) {
  const tid = (id) => `[data-testid="${id}"]`;
  await page.goto(`${server.apiUrl}/login`);
  await page.fill(tid('login-username'), ADMIN_USER);
  await page.fill(tid('login-password'), ADMIN_PASSWORD);
  await page.click(tid('login-submit'));
  await page.locator(tid('username')).waitFor();
}
