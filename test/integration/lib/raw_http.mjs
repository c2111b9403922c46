// HTTP/1.1 over a bare socket, for the tests that need what a client library
// hides: several requests on one connection (HEAD then GET), a body sent a
// few bytes at a time, connections held open on purpose. Loopback only.

import net from 'node:net';

import { HOST } from './server.mjs';

export class RawConnection {
  //! Resolves once connected to HOST:port.
  static open(port, { timeoutMs = 5000 } = {}) {
    return new Promise((resolve, reject) => {
      const sock = net.connect({ host: HOST, port });
      const timer = setTimeout(() => { sock.destroy(); reject(new Error(`connect to ${port} timed out`)); }, timeoutMs);
      sock.once('connect', () => { clearTimeout(timer); resolve(new RawConnection(sock)); });
      sock.once('error', (err) => { clearTimeout(timer); reject(err); });
    });
  }

  constructor(sock) {
    this.sock = sock;
    this.buf = Buffer.alloc(0);
    this.closed = false;
    this.waiters = [];
    sock.on('data', (c) => { this.buf = Buffer.concat([this.buf, c]); this.#wake(); });
    sock.on('close', () => { this.closed = true; this.#wake(); });
    sock.on('error', () => { /* reported as a close */ });
  }

  #wake() {
    const w = this.waiters;
    this.waiters = [];
    for (const resolve of w) resolve();
  }

  #next(deadline) {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
      this.waiters.push(() => { clearTimeout(timer); resolve(); });
    });
  }

  //! Writes; resolves false if the socket is gone.
  write(data) {
    if (this.closed || this.sock.destroyed) return Promise.resolve(false);
    return new Promise((resolve) => { this.sock.write(data, (err) => resolve(!err)); });
  }

  //! Sends `GET path` (or another method) with keep-alive and reads its response.
  async request(method, path, { headers = {}, timeoutMs = 5000 } = {}) {
    const lines = [`${method} ${path} HTTP/1.1`, `Host: ${HOST}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    await this.write(`${lines.join('\r\n')}\r\n\r\n`);
    return this.readResponse({ timeoutMs, noBody: method === 'HEAD' });
  }

  /**
   * One response: {status, headers (lowercase names), body: Buffer}, or null
   * if the connection closed (or the time ran out) before a whole one came.
   * `noBody`: the answer to a HEAD, whose Content-Length announces no body.
   */
  async readResponse({ timeoutMs = 5000, noBody = false } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const end = this.buf.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = this.buf.subarray(0, end).toString('latin1').split('\r\n');
        const m = /^HTTP\/1\.[01] (\d{3})/.exec(head[0]);
        if (!m) throw new Error(`not an HTTP response: ${head[0]}`);
        const headers = {};
        for (const line of head.slice(1)) {
          const i = line.indexOf(':');
          headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
        }
        const length = noBody ? 0 : Number(headers['content-length'] ?? 0);
        if (this.buf.length >= end + 4 + length) {
          const body = this.buf.subarray(end + 4, end + 4 + length);
          this.buf = this.buf.subarray(end + 4 + length);
          return { status: Number(m[1]), headers, body };
        }
      }
      if (this.closed || Date.now() >= deadline) return null;
      await this.#next(deadline);
    }
  }

  //! Resolves true once the server has closed the connection, false after `timeoutMs`.
  async waitClosed(timeoutMs = 5000) {
    const deadline = Date.now() + timeoutMs;
    while (!this.closed && Date.now() < deadline) await this.#next(deadline);
    return this.closed;
  }

  //! Bytes received and not yet read as a response.
  pending() { return this.buf; }

  destroy() { this.sock.destroy(); }
}

//! The head of a POST to /v1/<signal> with a chunked body; send chunks with chunk().
export function chunkedPostHead(port, signal, token, contentType = 'application/x-protobuf') {
  return `POST /v1/${signal} HTTP/1.1\r\nHost: ${HOST}:${port}\r\nAuthorization: Bearer ${token}\r\n`
    + `Content-Type: ${contentType}\r\nTransfer-Encoding: chunked\r\n\r\n`;
}

//! One chunk of a chunked body; an empty buffer is the last chunk.
export function chunk(buf) {
  return Buffer.concat([Buffer.from(`${buf.length.toString(16)}\r\n`), buf, Buffer.from('\r\n')]);
}
