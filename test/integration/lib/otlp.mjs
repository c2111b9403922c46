// Hand-built OTLP trace payloads for the raw-HTTP tests (bad input, overload,
// crash), independent of the SDK: a tiny protobuf writer for
// ExportTraceServiceRequest and the OTLP/JSON equivalent, plus helpers to read
// the JSON text columns back without losing 64-bit integers.

import crypto from 'node:crypto';
import zlib from 'node:zlib';

// ---------------------------------------------------------------- protobuf --

class Writer {
  constructor() { this.parts = []; }
  bytes() { return Buffer.concat(this.parts); }
  raw(buf) { this.parts.push(buf); }
  varint(v) {
    let n = BigInt(v);
    const out = [];
    while (n > 0x7fn) {
      out.push(Number(n & 0x7fn) | 0x80);
      n >>= 7n;
    }
    out.push(Number(n));
    this.parts.push(Buffer.from(out));
  }
  tag(field, wire) { this.varint((field << 3) | wire); }
  lenDelimited(field, buf) {
    this.tag(field, 2);
    this.varint(buf.length);
    this.raw(buf);
  }
  string(field, s) { if (s !== undefined && s !== '') this.lenDelimited(field, Buffer.from(s, 'utf8')); }
  bytesField(field, b) { if (b && b.length) this.lenDelimited(field, b); }
  uint(field, v) { if (v) { this.tag(field, 0); this.varint(v); } }
  fixed64(field, v) {
    this.tag(field, 1);
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.raw(b);
  }
  fixed32(field, v) {
    this.tag(field, 5);
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v >>> 0);
    this.raw(b);
  }
  double(field, v) {
    this.tag(field, 1);
    const b = Buffer.alloc(8);
    b.writeDoubleLE(v);
    this.raw(b);
  }
  message(field, fn) {
    const w = new Writer();
    fn(w);
    this.lenDelimited(field, w.bytes());
  }
}

// AnyValue from a JS value: string, boolean, bigint/integer (int), other number
// (double), Buffer (bytes), array, plain object (kvlist).
function writeAnyValue(w, v) {
  if (typeof v === 'string') w.lenDelimited(1, Buffer.from(v, 'utf8'));
  else if (typeof v === 'boolean') { w.tag(2, 0); w.varint(v ? 1 : 0); }
  else if (typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) {
    w.tag(3, 0);
    w.varint(BigInt.asUintN(64, BigInt(v)));
  } else if (typeof v === 'number') w.double(4, v);
  else if (Buffer.isBuffer(v)) w.lenDelimited(7, v);
  else if (Array.isArray(v)) w.message(5, (a) => { for (const x of v) a.message(1, (av) => writeAnyValue(av, x)); });
  else w.message(6, (kv) => { for (const [k, x] of Object.entries(v)) kv.message(1, (e) => writeKeyValue(e, k, x)); });
}

function writeKeyValue(w, key, value) {
  w.string(1, key);
  w.message(2, (av) => writeAnyValue(av, value));
}

function writeAttributes(w, field, attrs) {
  for (const [k, v] of Object.entries(attrs || {})) w.message(field, (kv) => writeKeyValue(kv, k, v));
}

/**
 * Span shape used by these helpers (ids are hex strings, times bigint ns):
 * {traceId, spanId, parentSpanId?, name, kind, start, end, attributes?, statusCode?, statusMessage?}
 */
export function encodeTraceRequestProto({ resource = {}, scope = { name: 'it' }, spans }) {
  const w = new Writer();
  w.message(1, (rs) => {
    rs.message(1, (r) => writeAttributes(r, 1, resource));
    rs.message(2, (ss) => {
      ss.message(1, (sc) => { sc.string(1, scope.name); sc.string(2, scope.version); });
      for (const s of spans) {
        ss.message(2, (sp) => {
          sp.bytesField(1, Buffer.from(s.traceId, 'hex'));
          sp.bytesField(2, Buffer.from(s.spanId, 'hex'));
          sp.bytesField(4, s.parentSpanId ? Buffer.from(s.parentSpanId, 'hex') : null);
          sp.string(5, s.name);
          sp.uint(6, s.kind ?? 1);
          sp.fixed64(7, s.start);
          sp.fixed64(8, s.end);
          writeAttributes(sp, 9, s.attributes);
          if (s.statusCode || s.statusMessage) {
            sp.message(15, (st) => { st.string(2, s.statusMessage); st.uint(3, s.statusCode); });
          }
        });
      }
    });
  });
  return w.bytes();
}

// ---------------------------------------------------------------- OTLP/JSON --

function jsonAnyValue(v) {
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) return { intValue: String(v) };
  if (typeof v === 'number') return { doubleValue: v };
  if (Buffer.isBuffer(v)) return { bytesValue: v.toString('base64') };
  if (Array.isArray(v)) return { arrayValue: { values: v.map(jsonAnyValue) } };
  return { kvlistValue: { values: Object.entries(v).map(([key, x]) => ({ key, value: jsonAnyValue(x) })) } };
}

function jsonAttributes(attrs) {
  return Object.entries(attrs || {}).map(([key, value]) => ({ key, value: jsonAnyValue(value) }));
}

export function encodeTraceRequestJson({ resource = {}, scope = { name: 'it' }, spans }) {
  return Buffer.from(JSON.stringify({
    resourceSpans: [{
      resource: { attributes: jsonAttributes(resource) },
      scopeSpans: [{
        scope: { name: scope.name, version: scope.version ?? '' },
        spans: spans.map((s) => ({
          traceId: s.traceId,
          spanId: s.spanId,
          parentSpanId: s.parentSpanId ?? '',
          name: s.name,
          kind: s.kind ?? 1,
          startTimeUnixNano: String(s.start),
          endTimeUnixNano: String(s.end),
          attributes: jsonAttributes(s.attributes),
          status: { code: s.statusCode ?? 0, message: s.statusMessage ?? '' },
        })),
      }],
    }],
  }));
}

// ----------------------------------------------------------------- batches --

//! Unique, recognisable ids: a random 4-byte run tag, then the request and span numbers.
export function makeRunTag() {
  return crypto.randomBytes(4).toString('hex');
}

export function spanIdFor(runTag, requestNo, spanNo) {
  // 8 (tag) + 5 (request) + 3 (span) hex = 16 hex chars.
  return runTag + requestNo.toString(16).padStart(5, '0') + spanNo.toString(16).padStart(3, '0');
}

/**
 * A batch of n spans with unique ids for request number requestNo: returns
 * {spans, spanIds}. Spans come in small traces (root + children) and carry a
 * few attributes so that the payload looks like real traffic.
 */
export function makeSpanBatch(runTag, requestNo, n, { service = 'it-load', baseNs } = {}) {
  const base = baseNs ?? BigInt(Date.now()) * 1_000_000n;
  const spans = [];
  const spanIds = [];
  let traceId = null;
  let rootId = null;
  for (let i = 0; i < n; i++) {
    const spanId = spanIdFor(runTag, requestNo, i);
    if (i % 8 === 0) {
      traceId = runTag + crypto.randomBytes(12).toString('hex');
      rootId = spanId;
    }
    const start = base + BigInt(i) * 1000n;
    spans.push({
      traceId,
      spanId,
      parentSpanId: spanId === rootId ? '' : rootId,
      name: spanId === rootId ? 'GET /api/items/{id}' : `SELECT items ${i % 8}`,
      kind: spanId === rootId ? 2 : 3,
      start,
      end: start + 250_000n + BigInt(i % 97) * 1000n,
      attributes: {
        'http.route': '/api/items/{id}',
        'http.request.method': 'GET',
        'http.response.status_code': i % 50 === 0 ? 500 : 200,
        'it.request': requestNo,
        'it.note': 'x'.repeat(24),
      },
      statusCode: i % 50 === 0 ? 2 : 0,
      statusMessage: i % 50 === 0 ? 'internal error' : '',
    });
    spanIds.push(spanId);
  }
  return { spans, spanIds, resource: { 'service.name': service } };
}

export function gzip(buf) {
  return zlib.gzipSync(buf);
}

// -------------------------------------------------------------- JSON text --

/**
 * JSON.parse that keeps integers beyond 2^53 exact: integer literals of 16 or
 * more digits become strings (e.g. nanosecond timestamps in events JSON).
 * Compare such fields with String(expected).
 */
export function parseJsonExact(text) {
  let out = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text[i];
    if (c === '"') {
      let j = i + 1;
      while (j < n && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      out += text.slice(i, j + 1);
      i = j + 1;
    } else if (c === '-' || (c >= '0' && c <= '9')) {
      let j = i + 1;
      while (j < n && /[0-9.eE+-]/.test(text[j])) j++;
      const lit = text.slice(i, j);
      out += /^-?\d{16,}$/.test(lit) ? `"${lit}"` : lit;
      i = j;
    } else {
      out += c;
      i++;
    }
  }
  return JSON.parse(out);
}

//! SDK HrTime [seconds, nanos] as exact bigint nanoseconds.
export function hrTimeToNs(hr) {
  return BigInt(hr[0]) * 1_000_000_000n + BigInt(hr[1]);
}
