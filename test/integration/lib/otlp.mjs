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
  sfixed64(field, v) {
    this.tag(field, 1);
    const b = Buffer.alloc(8);
    b.writeBigInt64LE(BigInt(v));
    this.raw(b);
  }
  packedFixed64(field, values) {
    if (!values.length) return;
    const b = Buffer.alloc(8 * values.length);
    values.forEach((v, i) => b.writeBigUInt64LE(BigInt(v), 8 * i));
    this.lenDelimited(field, b);
  }
  packedDouble(field, values) {
    if (!values.length) return;
    const b = Buffer.alloc(8 * values.length);
    values.forEach((v, i) => b.writeDoubleLE(v, 8 * i));
    this.lenDelimited(field, b);
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
 * {traceId, spanId, parentSpanId?, name, kind, start, end, attributes?, statusCode?, statusMessage?,
 *  traceState?, flags?, events?: [{time, name, attributes?}], links?: [{traceId, spanId, traceState?, attributes?, flags?}]}
 */
function writeSpan(sp, s) {
  sp.bytesField(1, Buffer.from(s.traceId, 'hex'));
  sp.bytesField(2, Buffer.from(s.spanId, 'hex'));
  sp.string(3, s.traceState);
  sp.bytesField(4, s.parentSpanId ? Buffer.from(s.parentSpanId, 'hex') : null);
  sp.string(5, s.name);
  sp.uint(6, s.kind ?? 1);
  sp.fixed64(7, s.start);
  sp.fixed64(8, s.end);
  writeAttributes(sp, 9, s.attributes);
  for (const e of s.events ?? []) {
    sp.message(11, (ev) => {
      ev.fixed64(1, e.time);
      ev.string(2, e.name);
      writeAttributes(ev, 3, e.attributes);
    });
  }
  for (const l of s.links ?? []) {
    sp.message(13, (lk) => {
      lk.bytesField(1, Buffer.from(l.traceId, 'hex'));
      lk.bytesField(2, Buffer.from(l.spanId, 'hex'));
      lk.string(3, l.traceState);
      writeAttributes(lk, 4, l.attributes);
      if (l.flags) lk.fixed32(6, l.flags);
    });
  }
  if (s.statusCode || s.statusMessage) {
    sp.message(15, (st) => { st.string(2, s.statusMessage); st.uint(3, s.statusCode); });
  }
  if (s.flags) sp.fixed32(16, s.flags);
}

//! ExportTraceServiceRequest with several resources: [{resource, scope, spans}].
export function encodeTracesProto(resourceSpans) {
  const w = new Writer();
  for (const { resource = {}, scope = { name: 'it' }, spans } of resourceSpans) {
    w.message(1, (rs) => {
      rs.message(1, (r) => writeAttributes(r, 1, resource));
      rs.message(2, (ss) => {
        ss.message(1, (sc) => { sc.string(1, scope.name); sc.string(2, scope.version); });
        for (const s of spans) ss.message(2, (sp) => writeSpan(sp, s));
      });
    });
  }
  return w.bytes();
}

export function encodeTraceRequestProto({ resource = {}, scope = { name: 'it' }, spans }) {
  return encodeTracesProto([{ resource, scope, spans }]);
}

/**
 * ExportMetricsServiceRequest: [{resource, scope, metrics}] where a metric is
 * {name, description?, unit?, gauge?: {points}, sum?: {points, temporality, monotonic},
 *  histogram?: {points, temporality}, exponentialHistogram?: {points, temporality}}. Number points:
 * {time, start?, value, asInt?, attributes?}; histogram points: {time, start?, count, sum?,
 * bucketCounts, bounds, min?, max?, attributes?}; exponential points: {time, start?, count, sum?,
 * scale, zeroCount, positive: {offset, bucketCounts}, negative?: {..}, attributes?}.
 * Times are bigint ns.
 */
export function encodeMetricsProto(resourceMetrics) {
  const numberPoint = (w, p) => {
    writeAttributes(w, 7, p.attributes);
    if (p.start) w.fixed64(2, p.start);
    w.fixed64(3, p.time);
    if (p.asInt) w.sfixed64(6, p.value);
    else w.double(4, p.value);
  };
  const histogramPoint = (w, p) => {
    writeAttributes(w, 9, p.attributes);
    if (p.start) w.fixed64(2, p.start);
    w.fixed64(3, p.time);
    w.fixed64(4, p.count);
    if (p.sum !== undefined) w.double(5, p.sum);
    w.packedFixed64(6, p.bucketCounts);
    w.packedDouble(7, p.bounds);
    if (p.min !== undefined) w.double(11, p.min);
    if (p.max !== undefined) w.double(12, p.max);
  };
  const sint = (w, field, v) => { w.tag(field, 0); w.varint(v >= 0 ? 2 * v : -2 * v - 1); };
  const expBuckets = (w, b) => {
    sint(w, 1, b.offset);
    const packed = new Writer();
    for (const c of b.bucketCounts) packed.varint(c);
    w.bytesField(2, packed.bytes());
  };
  const exponentialPoint = (w, p) => {
    writeAttributes(w, 1, p.attributes);
    if (p.start) w.fixed64(2, p.start);
    w.fixed64(3, p.time);
    w.fixed64(4, p.count);
    if (p.sum !== undefined) w.double(5, p.sum);
    sint(w, 6, p.scale);
    w.fixed64(7, p.zeroCount);
    w.message(8, (b) => expBuckets(b, p.positive));
    if (p.negative) w.message(9, (b) => expBuckets(b, p.negative));
  };
  const w = new Writer();
  for (const { resource = {}, scope = { name: 'it' }, metrics } of resourceMetrics) {
    w.message(1, (rm) => {
      rm.message(1, (r) => writeAttributes(r, 1, resource));
      rm.message(2, (sm) => {
        sm.message(1, (sc) => { sc.string(1, scope.name); sc.string(2, scope.version); });
        for (const m of metrics) {
          sm.message(2, (mw) => {
            mw.string(1, m.name);
            mw.string(2, m.description);
            mw.string(3, m.unit);
            if (m.gauge) {
              mw.message(5, (g) => { for (const p of m.gauge.points) g.message(1, (pw) => numberPoint(pw, p)); });
            } else if (m.sum) {
              mw.message(7, (s) => {
                for (const p of m.sum.points) s.message(1, (pw) => numberPoint(pw, p));
                s.uint(2, m.sum.temporality);
                s.uint(3, m.sum.monotonic ? 1 : 0);
              });
            } else if (m.histogram) {
              mw.message(9, (h) => {
                for (const p of m.histogram.points) h.message(1, (pw) => histogramPoint(pw, p));
                h.uint(2, m.histogram.temporality);
              });
            } else if (m.exponentialHistogram) {
              mw.message(10, (h) => {
                for (const p of m.exponentialHistogram.points) h.message(1, (pw) => exponentialPoint(pw, p));
                h.uint(2, m.exponentialHistogram.temporality);
              });
            }
          });
        }
      });
    });
  }
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

/**
 * ExportLogsServiceRequest in OTLP/JSON: [{resource, scope, logs}] where a log is
 * {time, observedTime?, severityNumber, severityText?, body, attributes?, traceId?, spanId?, flags?, eventName?}
 * (times bigint ns, ids hex).
 */
export function encodeLogsJson(resourceLogs) {
  return Buffer.from(JSON.stringify({
    resourceLogs: resourceLogs.map(({ resource = {}, scope = { name: 'it' }, logs }) => ({
      resource: { attributes: jsonAttributes(resource) },
      scopeLogs: [{
        scope: { name: scope.name, version: scope.version ?? '' },
        logRecords: logs.map((l) => {
          const rec = {
            timeUnixNano: String(l.time),
            observedTimeUnixNano: String(l.observedTime ?? l.time),
            severityNumber: l.severityNumber,
            severityText: l.severityText ?? '',
            body: jsonAnyValue(l.body),
            attributes: jsonAttributes(l.attributes),
            flags: l.flags ?? 0,
          };
          if (l.traceId) rec.traceId = l.traceId;
          if (l.spanId) rec.spanId = l.spanId;
          if (l.eventName) rec.eventName = l.eventName;
          return rec;
        }),
      }],
    })),
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

// ------------------------------------------------------------- bulk spans --

/**
 * Fast protobuf encoding of many similar spans (millions, for load tests):
 * each variant's name, kind, attributes and status are encoded once; per span
 * only the ids and times are written. Usage:
 *   const enc = new BulkSpanEncoder([{name, kind, attributes, statusCode}, ...]);
 *   const body = enc.encode({resource, scope}, n, (i, span) => {
 *     span.variant = ...; span.traceId.write(...)  // 16-byte Buffer views
 *     span.spanId ...; span.parentSpanId = Buffer|null; span.start = bigint; span.end = bigint;
 *   });
 */
export class BulkSpanEncoder {
  constructor(variants) {
    this.tails = variants.map((v) => {
      const w = new Writer();
      w.string(5, v.name);
      w.uint(6, v.kind ?? 1);
      writeAttributes(w, 9, v.attributes);
      if (v.statusCode || v.statusMessage) {
        w.message(15, (st) => { st.string(2, v.statusMessage); st.uint(3, v.statusCode); });
      }
      return w.bytes();
    });
  }

  encode({ resource = {}, scope = { name: 'it' } }, n, fill) {
    const span = { variant: 0, traceId: Buffer.alloc(16), spanId: Buffer.alloc(8), parentSpanId: null, start: 0n, end: 0n };
    const spans = Buffer.allocUnsafe(n * (64 + Math.max(...this.tails.map((t) => t.length))));
    let off = 0;
    for (let i = 0; i < n; i++) {
      span.parentSpanId = null;
      fill(i, span);
      const tail = this.tails[span.variant];
      const bodyLen = 18 + 10 + (span.parentSpanId ? 10 : 0) + 18 + tail.length;
      spans[off++] = 0x12;  // ScopeSpans.spans
      off = writeVarint(spans, off, bodyLen);
      spans[off++] = 0x0a; spans[off++] = 16; span.traceId.copy(spans, off); off += 16;           // trace_id
      spans[off++] = 0x12; spans[off++] = 8; span.spanId.copy(spans, off); off += 8;              // span_id
      if (span.parentSpanId) { spans[off++] = 0x22; spans[off++] = 8; span.parentSpanId.copy(spans, off); off += 8; }
      spans[off++] = 0x39; spans.writeBigUInt64LE(span.start, off); off += 8;                     // start (fixed64)
      spans[off++] = 0x41; spans.writeBigUInt64LE(span.end, off); off += 8;                       // end (fixed64)
      tail.copy(spans, off); off += tail.length;
    }
    const scopeW = new Writer();
    scopeW.message(1, (sc) => { sc.string(1, scope.name); sc.string(2, scope.version); });
    const scopeSpans = Buffer.concat([scopeW.bytes(), spans.subarray(0, off)]);
    const resW = new Writer();
    resW.message(1, (r) => writeAttributes(r, 1, resource));
    const rsHead = resW.bytes();
    const ssHead = lenHeader(2, scopeSpans.length);
    return Buffer.concat([lenHeader(1, rsHead.length + ssHead.length + scopeSpans.length), rsHead, ssHead, scopeSpans]);
  }
}

function writeVarint(buf, off, v) {
  while (v > 0x7f) { buf[off++] = (v & 0x7f) | 0x80; v = Math.floor(v / 128); }
  buf[off++] = v;
  return off;
}

function lenHeader(field, len) {
  const b = Buffer.alloc(12);
  let off = writeVarint(b, 0, (field << 3) | 2);
  off = writeVarint(b, off, len);
  return b.subarray(0, off);
}
