// The known dataset the browser tests ingest over OTLP/HTTP JSON, and what a
// person should see for it. Timestamps sit a few minutes before `now`, inside
// the UI's default "last 1 hour" range.
//
//   frontend  SERVER GET /api/cart          x6, ok
//   frontend  SERVER POST /api/checkout     x2 (one error)   -> CLIENT "POST checkout"
//   checkout  SERVER POST /charge           x2 (one error,      -> CLIENT "SELECT payments"
//                                                 with an exception event)
//   logs: 4 linked to the error trace, 2 to the ok trace, 120 DEBUG heartbeats (for paging)
//   metrics: counter shop.orders (sum, monotonic), histogram http.server.request.duration,
//            gauge process.memory.usage


const hex = (n, len) => n.toString(16).padStart(len, '0');
const traceId = (n) => `5e1f0000000000000000000000${hex(n, 6)}`;
const spanId = (t, n) => `${hex(t, 8)}${hex(n, 8)}`;

const str = (key, v) => ({ key, value: { stringValue: v } });
const int = (key, v) => ({ key, value: { intValue: String(v) } });
const ns = (ms) => String(BigInt(Math.round(ms * 1000)) * 1000n); // µs precision

const SCOPE = { name: 'shop-instrumentation', version: '1.2.0' };

export const ERROR_TRACE = traceId(1);
/** The checkout SERVER span of the error trace (the one with the exception). */
export const ERROR_CHARGE_SPAN = spanId(1, 3);
export const OK_TRACE = traceId(2);
export const ERROR_TRACE_SPANS = ['POST /api/checkout', 'POST checkout', 'POST /charge', 'SELECT payments'];
export const EXCEPTION = { type: 'PaymentDeclinedError', message: 'card declined: insufficient funds', service: 'checkout' };
export const LOG_ERROR_LINE = 'payment failed: card declined for order 1042';
export const LOG_START_LINE = 'checkout started for cart 42';
export const HEARTBEATS = 120;

export const EXPECTED = {
  services: {
    frontend: { requests: 8, errors: 1, errorRate: '12.5%' },
    checkout: { requests: 2, errors: 1, errorRate: '50%' },
  },
  endpoints: [
    { service: 'frontend', endpoint: '/api/cart', count: '6', errorRate: '0%' },
    { service: 'frontend', endpoint: '/api/checkout', count: '2', errorRate: '50%' },
    { service: 'checkout', endpoint: '/charge', count: '2', errorRate: '50%' },
  ],
};

function resource(service, extra = []) {
  return {
    attributes: [
      str('service.name', service),
      str('service.version', '2.4.1'),
      str('deployment.environment', 'browser-test'),
      str('host.name', `${service}-pod-1`),
      ...extra,
    ],
  };
}

function span({ trace, id, parent, name, kind, start, dur, attrs = [], status, events = [], links = [] }) {
  return {
    traceId: trace,
    spanId: id,
    parentSpanId: parent ?? '',
    name,
    kind,
    startTimeUnixNano: ns(start),
    endTimeUnixNano: ns(start + dur),
    attributes: attrs,
    events,
    links,
    status: status ?? { code: 0 },
  };
}

/** A checkout trace: frontend SERVER -> frontend CLIENT -> checkout SERVER -> checkout CLIENT (db). */
function checkoutTrace(n, t0, failed) {
  const trace = traceId(n);
  const [a, b, c, d] = [spanId(n, 1), spanId(n, 2), spanId(n, 3), spanId(n, 4)];
  const err = (msg) => ({ code: 2, message: msg });
  const frontend = [
    span({
      trace, id: a, name: 'POST /api/checkout', kind: 2, start: t0, dur: 182.5,
      attrs: [str('http.request.method', 'POST'), str('http.route', '/api/checkout'), int('http.response.status_code', failed ? 502 : 200), str('cart.id', '42')],
      status: failed ? err('upstream payment failed') : { code: 1 },
    }),
    span({
      trace, id: b, parent: a, name: 'POST checkout', kind: 3, start: t0 + 12, dur: 160,
      attrs: [str('http.request.method', 'POST'), str('server.address', 'checkout'), int('http.response.status_code', failed ? 402 : 200)],
    }),
  ];
  const checkout = [
    span({
      trace, id: c, parent: b, name: 'POST /charge', kind: 2, start: t0 + 20, dur: 145,
      attrs: [str('http.request.method', 'POST'), str('http.route', '/charge'), int('http.response.status_code', failed ? 402 : 200), str('payment.method', 'card')],
      status: failed ? err('card declined') : { code: 0 },
      events: failed
        ? [{
            timeUnixNano: ns(t0 + 150),
            name: 'exception',
            attributes: [
              str('exception.type', EXCEPTION.type),
              str('exception.message', EXCEPTION.message),
              str('exception.stacktrace', 'PaymentDeclinedError: card declined: insufficient funds\n    at charge (payments.js:88:11)\n    at handle (server.js:41:5)'),
            ],
          }]
        : [],
      links: failed ? [{ traceId: OK_TRACE, spanId: spanId(2, 3), attributes: [str('link.reason', 'retry-of')] }] : [],
    }),
    span({
      trace, id: d, parent: c, name: 'SELECT payments', kind: 3, start: t0 + 30, dur: 41.25,
      attrs: [str('db.system', 'postgresql'), str('db.statement', 'SELECT * FROM payments WHERE order_id = $1')],
    }),
  ];
  return { frontend, checkout, ids: { a, b, c, d } };
}

export function buildDataset(now = Date.now()) {
  const base = now - 6 * 60_000;
  const t1 = checkoutTrace(1, base + 60_000, true);
  const t2 = checkoutTrace(2, base + 30_000, false);
  const cart = [];
  for (let i = 0; i < 6; i++) {
    cart.push(
      span({
        trace: traceId(10 + i), id: spanId(10 + i, 1), name: 'GET /api/cart', kind: 2,
        start: base + i * 45_000, dur: 10 + i * 7.5,
        attrs: [str('http.request.method', 'GET'), str('http.route', '/api/cart'), int('http.response.status_code', 200)],
        status: { code: 0 },
      }),
    );
  }
  const traces = {
    resourceSpans: [
      { resource: resource('frontend'), scopeSpans: [{ scope: SCOPE, spans: [...t1.frontend, ...t2.frontend, ...cart] }] },
      { resource: resource('checkout', [str('cloud.region', 'eu-west-1')]), scopeSpans: [{ scope: SCOPE, spans: [...t1.checkout, ...t2.checkout] }] },
    ],
  };

  const rec = (t, sev, text, body, trace, span, attrs = []) => ({
    timeUnixNano: ns(t),
    observedTimeUnixNano: ns(t),
    severityNumber: sev,
    severityText: text,
    body: { stringValue: body },
    attributes: attrs,
    traceId: trace ?? '',
    spanId: span ?? '',
  });
  const t1s = base + 60_000;
  const frontendLogs = [
    rec(t1s + 1, 9, 'INFO', LOG_START_LINE, ERROR_TRACE, t1.ids.a, [str('cart.id', '42')]),
    rec(t1s + 181, 17, 'ERROR', 'checkout failed: upstream payment error', ERROR_TRACE, t1.ids.a),
    rec(base + 30_001, 9, 'INFO', 'checkout started for cart 7', OK_TRACE, t2.ids.a),
  ];
  for (let i = 0; i < HEARTBEATS; i++) {
    frontendLogs.push(rec(base - 60_000 + i * 1000, 5, 'DEBUG', `heartbeat ${i} ok`, null, null, [str('component', 'health')]));
  }
  const checkoutLogs = [
    rec(t1s + 25, 13, 'WARN', 'payment provider slow, retrying', ERROR_TRACE, t1.ids.c, [int('attempt', 2)]),
    rec(t1s + 150, 17, 'ERROR', LOG_ERROR_LINE, ERROR_TRACE, t1.ids.c, [str('order.id', '1042'), str('payment.method', 'card')]),
    rec(base + 30_100, 9, 'INFO', 'charge accepted for order 1041', OK_TRACE, t2.ids.c),
  ];
  const logs = {
    resourceLogs: [
      { resource: resource('frontend'), scopeLogs: [{ scope: SCOPE, logRecords: frontendLogs }] },
      { resource: resource('checkout'), scopeLogs: [{ scope: SCOPE, logRecords: checkoutLogs }] },
    ],
  };

  // Metrics: one point a minute for 6 minutes.
  const start = base - 60_000;
  const orders = [];
  const durations = [];
  const memory = [];
  for (let i = 0; i < 6; i++) {
    const t = base + i * 60_000;
    orders.push({ attributes: [str('payment.method', 'card')], startTimeUnixNano: ns(start), timeUnixNano: ns(t), asInt: String(10 + i * 12) });
    orders.push({ attributes: [str('payment.method', 'paypal')], startTimeUnixNano: ns(start), timeUnixNano: ns(t), asInt: String(4 + i * 5) });
    for (const route of ['/api/cart', '/api/checkout']) {
      const slow = route === '/api/checkout';
      durations.push({
        attributes: [str('http.route', route), str('http.request.method', slow ? 'POST' : 'GET')],
        startTimeUnixNano: ns(t - 60_000),
        timeUnixNano: ns(t),
        count: '20',
        sum: slow ? 2400 + i * 100 : 380 + i * 10,
        min: slow ? 40 : 5,
        max: slow ? 400 : 60,
        bucketCounts: slow ? ['0', '2', '6', '8', '4'] : ['4', '12', '4', '0', '0'],
        explicitBounds: [10, 50, 100, 250],
      });
    }
    memory.push({ attributes: [], timeUnixNano: ns(t), asDouble: 180e6 + i * 6e6 });
  }
  const metrics = {
    resourceMetrics: [
      {
        resource: resource('frontend'),
        scopeMetrics: [
          {
            scope: SCOPE,
            metrics: [
              { name: 'shop.orders', unit: '{order}', description: 'Orders placed', sum: { dataPoints: orders, aggregationTemporality: 2, isMonotonic: true } },
              { name: 'http.server.request.duration', unit: 'ms', description: 'Duration of HTTP server requests', histogram: { dataPoints: durations, aggregationTemporality: 1 } },
              { name: 'process.memory.usage', unit: 'By', description: 'Resident memory', gauge: { dataPoints: memory } },
            ],
          },
        ],
      },
    ],
  };
  return { traces, logs, metrics };
}

/** One more log line, for the live tail test. */
export function tailLog(text, now = Date.now()) {
  return {
    resourceLogs: [
      {
        resource: resource('checkout'),
        scopeLogs: [{ scope: SCOPE, logRecords: [{ timeUnixNano: ns(now), observedTimeUnixNano: ns(now), severityNumber: 9, severityText: 'INFO', body: { stringValue: text }, attributes: [] }] }],
      },
    ],
  };
}
