// Starts and stops a real `sightline serve` for the browser tests: a fresh
// temporary data dir, free loopback ports, a known ingest token and admin
// password. Stopped with SIGTERM (SIGKILL only if it hangs).

import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '../../..');
export const BIN = process.env.SIGHTLINE_BIN
  ? path.resolve(process.env.SIGHTLINE_BIN)
  : path.join(REPO_ROOT, 'build/sightline');
export const HOST = '127.0.0.1';
export const TOKEN = 'browser-test-token-7d2a';
export const ADMIN_USER = 'admin';
export const ADMIN_PASSWORD = 'browser-test-pw-91c4';

const live = new Set();
process.on('exit', () => {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
});

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, HOST, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function assertLoopback(url) {
  const u = new URL(url);
  if (u.hostname !== HOST) throw new Error(`refusing non-loopback target ${url}`);
}

export async function httpGet(url, headers = {}) {
  assertLoopback(url);
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text(), headers: res.headers };
}

export class Server {
  constructor({ engine = process.env.SIGHTLINE_BROWSER_ENGINE || 'duckdb', args = [] } = {}) {
    this.engine = engine;
    this.args = args;
    this.child = null;
    this.exit = null;
  }

  get apiUrl() {
    return `http://${HOST}:${this.apiPort}`;
  }
  get otlpUrl() {
    return `http://${HOST}:${this.otlpPort}`;
  }

  logTail(bytes = 4000) {
    try {
      const buf = fs.readFileSync(this.logPath);
      return buf.subarray(Math.max(0, buf.length - bytes)).toString();
    } catch {
      return '(no log)';
    }
  }

  async start({ readyTimeoutMs = 30_000 } = {}) {
    if (!fs.existsSync(BIN)) {
      throw new Error(`sightline binary not found at ${BIN}: build it (ninja -C build sightline) or set SIGHTLINE_BIN`);
    }
    this.dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'sightline-browser-'));
    this.dataDir = path.join(this.dir, 'data');
    this.logPath = path.join(this.dir, 'server.log');
    let lastErr;
    for (let attempt = 0; attempt < 3; attempt++) {
      this.otlpPort = await freePort();
      do this.apiPort = await freePort();
      while (this.apiPort === this.otlpPort);
      try {
        await this.#spawn(readyTimeoutMs);
        return this;
      } catch (err) {
        lastErr = err;
        if (this.child && this.exit === null) {
          this.child.kill('SIGKILL');
          await this.exited;
          break; // it ran but never became ready: not a port race
        }
      }
    }
    throw lastErr;
  }

  async #spawn(readyTimeoutMs) {
    const fd = fs.openSync(this.logPath, 'a');
    const argv = [
      'serve',
      '--data', this.dataDir,
      '--otlp-http', `${HOST}:${this.otlpPort}`,
      '--listen', `${HOST}:${this.apiPort}`,
      '--otlp-grpc', '',
      '--storage', this.engine,
      ...this.args,
    ];
    const child = spawn(BIN, argv, {
      stdio: ['ignore', fd, fd],
      env: { ...process.env, SIGHTLINE_INGEST_TOKEN: TOKEN, SIGHTLINE_ADMIN_PASSWORD: ADMIN_PASSWORD },
    });
    fs.closeSync(fd);
    this.child = child;
    this.exit = null;
    live.add(child);
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        this.exit = { code, signal };
        live.delete(child);
        resolve(this.exit);
      });
    });
    child.on('error', () => {});
    const deadline = Date.now() + readyTimeoutMs;
    while (Date.now() < deadline) {
      if (this.exit) {
        throw new Error(`sightline exited before ready (${JSON.stringify(this.exit)}): ${argv.join(' ')}\n${this.logTail()}`);
      }
      try {
        const r = await httpGet(`${this.apiUrl}/readyz`);
        if (r.status === 200) return;
      } catch {
        /* not listening yet */
      }
      await sleep(100);
    }
    throw new Error(`sightline not ready after ${readyTimeoutMs} ms\n${this.logTail()}`);
  }

  /** POST an OTLP/HTTP JSON export; throws unless 200 without partial success. */
  async ingest(signal, body) {
    const url = `${this.otlpUrl}/v1/${signal}`;
    assertLoopback(url);
    const res = await fetch(url, {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(15_000),
    });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`POST /v1/${signal} -> ${res.status}: ${text}`);
    const json = text ? JSON.parse(text) : {};
    const partial = json.partialSuccess ?? json.partial_success;
    if (partial && Object.values(partial).some((v) => v && v !== '0' && v !== 0)) {
      throw new Error(`POST /v1/${signal} partial success: ${text}`);
    }
    return json;
  }

  /** `sightline token create` on the running server's data dir; resolves the token. */
  createToken({ project = 'default', scope = 'ingest' } = {}) {
    return new Promise((resolve, reject) => {
      execFile(BIN, ['token', 'create', '--project', project, '--scope', scope, '--data', this.dataDir],
        { timeout: 30_000 }, (err, stdout, stderr) => {
          if (err) reject(new Error(`sightline token create failed (${err.code ?? err.signal}): ${stderr}`));
          else resolve(stdout.trim());
        });
    });
  }

  /** SIGTERM, wait for a clean exit (SIGKILL after timeoutMs). Keeps the temp dir with SIGHTLINE_BROWSER_KEEP=1. */
  async stop({ timeoutMs = 20_000 } = {}) {
    if (this.child && this.exit === null) {
      this.child.kill('SIGTERM');
      const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
      await this.exited;
      clearTimeout(timer);
    }
    if (this.dir && !process.env.SIGHTLINE_BROWSER_KEEP) await fsp.rm(this.dir, { recursive: true, force: true });
    return this.exit;
  }
}
