// A small client for the query API (/api/v1/ on the API port) and for posting
// OTLP bodies, on top of lib/server.mjs's loopback-only request().

import { TOKEN, request } from './server.mjs';
import { parseJsonExact } from './otlp.mjs';

//! Query string from {key: value | [values]}; undefined/null values are left out.
export function queryString(params = {}) {
  const sp = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null) continue;
    for (const x of Array.isArray(v) ? v : [v]) sp.append(k, String(x));
  }
  const s = sp.toString();
  return s ? `?${s}` : '';
}

/**
 * GET (or another method) on /api/v1/<path>. Authenticates with the
 * server's read token unless `token` (null: none) or a `cookie` is given. Resolves
 * {status, headers, text, json, ms} where json is the parsed body (null if not
 * JSON) and ms the wall time of the call. `exact` parses with parseJsonExact
 * (integers of 16+ digits kept as strings).
 */
export async function api(server, path, params = {}, {
  token = server.readToken, cookie, method = 'GET', body, headers = {}, exact = false, timeoutMs = 60_000, signal, raw,
} = {}) {
  const h = { ...headers };
  if (cookie) h.Cookie = cookie;
  else if (token) h.Authorization = `Bearer ${token}`;
  let payload;
  if (body !== undefined) {
    payload = Buffer.isBuffer(body) ? body : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
    h['Content-Type'] ??= 'application/json';
    h['Content-Length'] = payload.length;
  }
  const url = raw ? `${server.apiUrl}${raw}` : `${server.apiUrl}/api/v1/${path}${queryString(params)}`;
  const started = performance.now();
  const res = await request(url, { method, headers: h, body: payload, timeoutMs, signal, ca: server.tls?.ca });
  const ms = performance.now() - started;
  const text = res.body.toString();
  let json = null;
  try { json = exact ? parseJsonExact(text) : JSON.parse(text); } catch { /* not JSON */ }
  return { status: res.status, headers: res.headers, text, json, ms };
}

//! Like api() but asserts a 200 and returns the parsed body.
export async function apiOk(server, path, params = {}, opts = {}) {
  const res = await api(server, path, params, opts);
  if (res.status !== 200 || res.json === null) {
    const qs = queryString(params);
    throw new Error(`GET /api/v1/${path}${qs} -> ${res.status}: ${res.text.slice(0, 500)}`);
  }
  return res.json;
}

//! POST /api/v1/login; resolves {status, cookie (the "sl_session=..." pair or null), setCookie, json}.
export async function login(server, username, password) {
  const res = await api(server, 'login', {}, { method: 'POST', token: null, body: { username, password } });
  const raw = res.headers['set-cookie'];
  const setCookie = Array.isArray(raw) ? raw.join('\n') : (raw ?? '');
  const m = /(?:^|\n)\s*(sl_session=[^;\n]*)/.exec(setCookie);
  return { status: res.status, json: res.json, setCookie, cookie: m ? m[1] : null };
}

//! POSTs an OTLP body to the OTLP port (/v1/<signal>) and asserts a full success.
export async function postOtlp(server, signal, body, { json = false, gzip = false, token = TOKEN } = {}) {
  const res = await request(`${server.otlpUrl}/v1/${signal}`, {
    method: 'POST',
    body,
    timeoutMs: 120_000,
    ca: server.tls?.ca,
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': json ? 'application/json' : 'application/x-protobuf',
      ...(gzip ? { 'Content-Encoding': 'gzip' } : {}),
      'Content-Length': body.length,
    },
  });
  const text = res.body.toString();
  if (res.status !== 200) throw new Error(`POST /v1/${signal} -> ${res.status}: ${text.slice(0, 300)}`);
  // A full success is an empty response message: `{}` in JSON, no bytes in protobuf.
  if (json ? text.replace(/\s/g, '') !== '{}' : res.body.length !== 0) {
    throw new Error(`POST /v1/${signal}: partial success: ${json ? text : res.body.toString('hex')}`);
  }
  return res;
}
