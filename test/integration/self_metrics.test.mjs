// /metrics in the ecosystem's shape (issue #12 part 6), read by a real
// Prometheus text-format parser: the standard process_* families,
// sightline_build_info, query-side metrics that count the calls made here,
// and one label scheme (signal, exact HTTP code); scraped with a read token
// from a server started with --metrics-require-auth. Also the OTLP/HTTP
// spec details of part 3 a client sees: the response's Content-Type is the
// request's, and partial_success counts every reason.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';

import { TOKEN, request, startServer } from './lib/server.mjs';
import { api } from './lib/api.mjs';
import { encodeTraceRequestProto, makeRunTag, makeSpanBatch } from './lib/otlp.mjs';

const SIGNALS = new Set(['spans', 'logs', 'metrics']);

async function scrape(server) {
  const res = await request(`${server.apiUrl}/metrics`, { headers: { Authorization: `Bearer ${server.readToken}` } });
  assert.equal(res.status, 200, '/metrics with a read token');
  assert.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/);
  return res.body.toString();
}

// The raw value of one exposition line (histograms are read this way: the
// parser folds a histogram's label sets into one, dropping their labels).
function rawValue(text, series) {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  assert.ok(line !== undefined, `${series} is exposed`);
  return Number(line.slice(series.length + 1));
}

function family(families, name) {
  const f = families.find((x) => x.name === name);
  assert.ok(f, `family ${name} is exposed`);
  return f;
}

function sample(families, name, labels) {
  const f = family(families, name);
  const m = f.metrics.find((x) => Object.entries(labels).every(([k, v]) => x.labels?.[k] === v));
  assert.ok(m, `${name}${JSON.stringify(labels)} is exposed`);
  return m;
}

describe('self-metrics: /metrics parsed as the Prometheus text format', { timeout: 120_000 }, () => {
  let server;
  before(async () => {
    server = await startServer({ args: ['--metrics-require-auth'] });
  });
  after(async () => { await server?.cleanup(); });

  it('answers in the request\'s Content-Type, with every partial_success reason counted', async () => {
    const body = encodeTraceRequestProto(makeSpanBatch(makeRunTag(), 1, 2));
    for (const type of ['application/protobuf', 'application/x-protobuf']) {
      const res = await request(`${server.otlpUrl}/v1/traces`, {
        method: 'POST', body,
        headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': type, 'Content-Length': body.length },
      });
      assert.equal(res.status, 200, `${type}: ${res.body.toString()}`);
      assert.equal(res.headers['content-type'], type);
    }
    const bad = (id) => ({ traceId: id, spanId: 'b7ad6b7169203331', name: 'bad' });
    const json = JSON.stringify({
      resourceSpans: [{ scopeSpans: [{ spans: [bad('abcd'), bad('abcd'), { ...bad('0af7651916cd43dd8448eb211c80319c'), spanId: '0000000000000000' }] }] }],
    });
    const res = await request(`${server.otlpUrl}/v1/traces`, {
      method: 'POST', body: json,
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(json) },
    });
    assert.equal(res.status, 200, res.body.toString());
    assert.equal(res.headers['content-type'], 'application/json');
    const partial = JSON.parse(res.body.toString()).partialSuccess;
    assert.equal(partial.rejectedSpans, '3');
    assert.match(partial.errorMessage, /^2 spans rejected: invalid trace_id .*; 1 span rejected: invalid span_id /);
  });

  it('parses, with the process_* families, build info, query metrics and one label scheme', async () => {
    // Anonymous scrapes stay refused under --metrics-require-auth.
    assert.equal((await request(`${server.apiUrl}/metrics`)).status, 401);
    // Calls to count: two of one operation, one 404 of a trace.
    for (let i = 0; i < 2; i++) assert.equal((await api(server, 'services')).status, 200);
    assert.equal((await api(server, `traces/${'ab'.repeat(16)}`)).status, 404);

    const text = await scrape(server);
    let families;
    assert.doesNotThrow(() => { families = parsePrometheusTextFormat(text); }, 'the exposition parses');
    // Nothing the parser skipped: every sample line of a counter or gauge is
    // a parsed sample; every histogram line belongs to a declared histogram.
    const histograms = families.filter((f) => f.type === 'HISTOGRAM').map((f) => f.name);
    const lines = text.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    const histogramLine = (l) => histograms.some((h) => /^(\w+?)(_bucket|_sum|_count)[{ ]/.exec(l)?.[1] === h);
    assert.equal(families.filter((f) => f.type !== 'HISTOGRAM').reduce((n, f) => n + f.metrics.length, 0),
      lines.filter((l) => !histogramLine(l)).length, 'every sample line parsed');
    const names = families.map((f) => f.name);
    assert.equal(new Set(names).size, names.length, `no family exposed twice: ${names}`);
    for (const f of families) {
      assert.ok(['COUNTER', 'GAUGE', 'HISTOGRAM'].includes(f.type), `${f.name} has a TYPE (${f.type})`);
      assert.ok(f.help, `${f.name} has a HELP`);
      if (f.type === 'COUNTER') assert.match(f.name, /_total$/, `counter ${f.name} ends in _total`);
      for (const m of f.metrics) {
        if (m.labels?.signal !== undefined) assert.ok(SIGNALS.has(m.labels.signal), `${f.name} signal=${m.labels.signal}`);
        if (m.labels?.code !== undefined) assert.match(m.labels.code, /^[1-5]\d\d$/, `${f.name} code=${m.labels.code}`);
        assert.equal(m.labels?.table, undefined, `${f.name}: signal, not table`);
      }
    }

    // The standard process metrics, with plausible values.
    const value = (name) => Number(family(families, name).metrics[0].value);
    const now = Date.now() / 1000;
    assert.ok(value('process_resident_memory_bytes') > 1 << 20);
    assert.ok(value('process_virtual_memory_bytes') >= value('process_resident_memory_bytes'));
    assert.ok(value('process_open_fds') > 3 && value('process_open_fds') <= value('process_max_fds'));
    assert.ok(value('process_cpu_seconds_total') > 0);
    assert.equal(family(families, 'process_cpu_seconds_total').type, 'COUNTER');
    const started = value('process_start_time_seconds');
    assert.ok(started <= now + 1 && started > now - 600, `process_start_time_seconds ${started}, now ${now}`);

    const build = family(families, 'sightline_build_info').metrics;
    assert.equal(build.length, 1);
    assert.equal(build[0].value, '1');
    assert.match(build[0].labels.version, /^\d+\.\d+\.\d+/);
    assert.match(build[0].labels.duckdb_version, /^v?\d+\.\d+/);
    assert.match(build[0].labels.sqlite_version, /^3\.\d+/);

    // The query calls made above, by operation and exact code.
    const calls = (operation, code) => Number(sample(families, 'sightline_query_requests_total', { operation, code }).value);
    assert.equal(calls('services', '200'), 2);
    assert.equal(calls('traces/{id}', '404'), 1);
    assert.equal(calls('endpoints', '200'), 0, 'an operation not called is there, at 0');
    assert.ok(histograms.includes('sightline_query_request_duration_seconds'));
    const latency = (suffix, labels) => rawValue(text, `sightline_query_request_duration_seconds_${suffix}{${labels}}`);
    assert.equal(latency('count', 'operation="services"'), 2);
    assert.equal(latency('bucket', 'operation="services",le="+Inf"'), 2);
    assert.ok(latency('sum', 'operation="services"') > 0);
    assert.equal(latency('count', 'operation="traces/{id}"'), 1);

    // Ingest, on the same scheme: the two protobuf exports and the JSON one.
    assert.equal(Number(sample(families, 'sightline_ingest_requests_total', { signal: 'spans', code: '200' }).value), 3);
    for (const signal of SIGNALS) sample(families, 'sightline_storage_rows', { signal });
  });
});
