// The per-project cap on metric series (--max-series-per-project): past it a
// project's new series are refused (their points counted in partial_success)
// while its known series go on being stored, and the cap still holds after a
// restart, which loads the stored series. Another project has its own cap.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';

import { TOKEN, createToken, request, startServer } from './lib/server.mjs';

const CAP = 3;

//! Gauges "g<from>".."g<to>" of one service, one point each, as OTLP/JSON.
function gauges(from, to) {
  const metrics = [];
  for (let i = from; i <= to; i++) {
    metrics.push({ name: `g${i}`, gauge: { dataPoints: [{ timeUnixNano: `${Date.now()}000000`, asDouble: i }] } });
  }
  return Buffer.from(JSON.stringify({
    resourceMetrics: [{
      resource: { attributes: [{ key: 'service.name', value: { stringValue: 'cap-svc' } }] },
      scopeMetrics: [{ metrics }],
    }],
  }));
}

//! POSTs metrics; resolves the number of rejected data points (0 on a full success).
async function send(server, body, token = TOKEN) {
  const res = await request(`${server.otlpUrl}/v1/metrics`, {
    method: 'POST', body,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Content-Length': body.length },
  });
  assert.equal(res.status, 200, res.body.toString());
  const answer = JSON.parse(res.body.toString());
  const partial = answer.partialSuccess;
  if (partial?.rejectedDataPoints) {
    assert.match(partial.errorMessage, /holds its cap of 3 series \(--max-series-per-project\)/);
  }
  return Number(partial?.rejectedDataPoints ?? 0);
}

describe('the series cap per project (duckdb)', { timeout: 120_000 }, () => {
  let server;
  let other;
  before(async () => {
    server = await startServer({ args: ['--max-series-per-project', String(CAP)] });
  });
  after(async () => { await server?.cleanup(); });

  it('new series past the cap are refused and counted; known ones go on', async () => {
    assert.equal(await send(server, gauges(1, 2)), 0);
    assert.equal(await send(server, gauges(1, 5)), 2, 'g4 and g5 refused');
    assert.equal(await send(server, gauges(1, 3)), 0, 'the known series go on');
  });

  it('another project has its own cap', async () => {
    other = await createToken(server.dataDir, { project: 'other' });
    assert.equal(await send(server, gauges(10, 14), other), 2);
  });

  it('after a restart the stored series still count', async () => {
    await server.stop();
    await server.restart();
    assert.equal(await send(server, gauges(6, 6)), 1, 'still at the cap');
    assert.equal(await send(server, gauges(2, 2)), 0);
    await server.stop();
    const out = await server.sql("SELECT project_id, count(*) FROM metric_series GROUP BY project_id ORDER BY 1");
    assert.deepEqual(out.rows.map((r) => Number(r[1])), [CAP, CAP]);
    const points = await server.sql('SELECT count(*) FROM metric_points');
    assert.equal(Number(points.rows[0][0]), 2 + 3 + 3 + 3 + 1);
  });
});
