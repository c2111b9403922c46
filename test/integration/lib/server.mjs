// Starts and stops a real `sightline serve` process for the end-to-end tests,
// and reads what it stored with `sightline sql` once it has stopped.
//
// Each server gets a fresh temporary data dir and free loopback ports. All
// traffic stays on 127.0.0.1. Servers are children of the test process (same
// process group), so run.sh's timeout reaches them too; an exit hook kills any
// still running if a test process dies early.

import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO_ROOT = path.resolve(here, '../../..');
export const BIN = process.env.SIGHTLINE_BIN
  ? path.resolve(process.env.SIGHTLINE_BIN)
  : path.join(REPO_ROOT, 'build/sightline');
export const TOKEN = 'it-token-5f1c';
export const HOST = '127.0.0.1';

//! Ids are stored as signed 64-bit halves (docs/STORAGE.md); these SQL
//! expressions read them back as the lowercase hex the API shows, alike on
//! both engines ('' when absent).
export const HEX = {
  trace_id: "CASE WHEN trace_id_high IS NULL THEN '' ELSE printf('%016x%016x', trace_id_high, trace_id_low) END",
  span_id: "CASE WHEN span_id IS NULL THEN '' ELSE printf('%016x', span_id) END",
  parent_span_id: "CASE WHEN parent_span_id IS NULL THEN '' ELSE printf('%016x', parent_span_id) END",
};

// Engines under test; SIGHTLINE_IT_ENGINES=duckdb narrows a local run.
export const ENGINES = (process.env.SIGHTLINE_IT_ENGINES || 'duckdb,sqlite')
  .split(',').map((s) => s.trim()).filter(Boolean);

const KEEP = !!process.env.SIGHTLINE_IT_KEEP;  // keep temp dirs for a post-mortem

const live = new Set();      // running server processes
const tempDirs = new Set();  // temp dirs not yet removed
process.on('exit', () => {
  for (const child of live) {
    try { child.kill('SIGKILL'); } catch { /* already gone */ }
  }
  if (!KEEP) {
    for (const dir of tempDirs) {
      try { fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 }); } catch { /* best effort */ }
    }
  }
});
for (const [sig, code] of [['SIGINT', 130], ['SIGTERM', 143]]) {
  process.on(sig, () => process.exit(code));
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function requireBinary() {
  if (!fs.existsSync(BIN)) {
    throw new Error(`sightline binary not found at ${BIN}: build it (ninja -C build sightline) or set SIGHTLINE_BIN`);
  }
}

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

export async function makeTempDir(prefix = 'sightline-it-') {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

//! An HTTP(S) request to the server. Resolves {status, headers, body: Buffer}
//! as soon as a response arrives, even if the server answered before reading
//! the whole request body (an early 413/503 is a valid answer). An AbortSignal
//! (`signal`) destroys the connection and rejects with an AbortError. For an
//! https URL, `ca` is the certificate to trust (a test's self-signed one).
export function request(url, { method = 'GET', headers = {}, body, agent, timeoutMs = 30_000, signal, ca } = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    if (u.hostname !== HOST) throw new Error(`refusing non-loopback target ${url}`);
    let settled = false;
    const transport = u.protocol === 'https:' ? https : http;
    const req = transport.request({
      host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers,
      agent: agent ?? false, signal, ...(ca ? { ca } : {}),
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        if (settled) return;
        settled = true;
        resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) });
      });
      res.on('error', (err) => {
        if (settled) return;
        settled = true;
        // The status line arrived; the body may have been cut by a close.
        resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), bodyError: err });
      });
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`timeout after ${timeoutMs} ms: ${method} ${url}`)));
    req.on('error', (err) => {
      if (settled) return;
      // An EPIPE/ECONNRESET after the response started is handled by the
      // response's own events; only a request that never got one fails here.
      if (req.res) return;
      settled = true;
      reject(err);
    });
    if (body !== undefined) req.end(body); else req.end();
  });
}

export async function getJson(url) {
  const res = await request(url);
  if (res.status !== 200) throw new Error(`GET ${url} -> ${res.status}: ${res.body.toString().slice(0, 500)}`);
  return JSON.parse(res.body.toString());
}

function tail(file, bytes = 4000) {
  try {
    const buf = fs.readFileSync(file);
    return buf.subarray(Math.max(0, buf.length - bytes)).toString();
  } catch {
    return '(no log)';
  }
}

/**
 * A running server. Created by startServer(); restart() reuses the data dir.
 */
export class Server {
  constructor({ engine, dir, dataDir, args, env, ulimitFiles, softUlimitFiles, tls, state }) {
    this.engine = engine;
    this.state = state;        // --state URL (a PostgreSQL database), or undefined: state.sqlite in dataDir
    this.dir = dir;            // temp root: data/ and logs live here
    this.dataDir = dataDir;
    this.args = args;
    this.env = env;
    this.ulimitFiles = ulimitFiles;  // run under `ulimit -n` (soft and hard) when set
    this.softUlimitFiles = softUlimitFiles;  // run under `ulimit -Sn` (soft only) when set
    this.tls = tls;            // {cert, key: file paths, ca: the certificate's PEM} to serve TLS
    this.child = null;
    this.exit = null;          // {code, signal} once exited
    this.starts = 0;
    this.readToken = null;     // a read token of the default project, once started
  }

  get scheme() { return this.tls ? 'https' : 'http'; }
  get otlpUrl() { return `${this.scheme}://${HOST}:${this.otlpPort}`; }
  get apiUrl() { return `${this.scheme}://${HOST}:${this.apiPort}`; }
  //! OTLP/gRPC, as the JS gRPC exporters take it.
  get grpcUrl() { return `${this.scheme}://${HOST}:${this.grpcPort}`; }
  get pid() { return this.child?.pid; }
  get logPath() { return path.join(this.dir, `server-${this.starts}.log`); }
  alive() { return this.child !== null && this.exit === null; }
  logTail() { return tail(this.logPath); }

  async start({ readyTimeoutMs = 30_000 } = {}) {
    requireBinary();
    let lastErr;
    // A port picked as free can be taken before the server binds it; retry.
    for (let attempt = 0; attempt < 3; attempt++) {
      this.otlpPort = await freePort();
      this.apiPort = await freePort();
      while (this.apiPort === this.otlpPort) this.apiPort = await freePort();
      this.grpcPort = await freePort();
      while (this.grpcPort === this.otlpPort || this.grpcPort === this.apiPort) this.grpcPort = await freePort();
      try {
        await this.#spawnAndWait(readyTimeoutMs);
        // The ingest token cannot read the API: tests read with a read token,
        // minted once per data dir while the server runs.
        this.readToken ??= await createToken(this.dataDir, { scope: 'read', state: this.state });
        return this;
      } catch (err) {
        lastErr = err;
        if (this.alive()) {
          await this.kill9();
          break;  // it ran but never became ready: not a port race
        }
      }
    }
    throw lastErr;
  }

  async #spawnAndWait(readyTimeoutMs) {
    this.starts += 1;
    const fd = fs.openSync(this.logPath, 'a');
    const argv = [
      'serve', '--data', this.dataDir,
      '--otlp-http', `${HOST}:${this.otlpPort}`,
      '--listen', `${HOST}:${this.apiPort}`,
      '--otlp-grpc', `${HOST}:${this.grpcPort}`,
      '--storage', this.engine,
      ...(this.state ? ['--state', this.state] : []),
      ...(this.tls ? ['--tls-cert', this.tls.cert, '--tls-key', this.tls.key] : []),
      ...this.args,
    ];
    // Under a shell that lowers the open-file limit and then execs the
    // server, so the pid is the server's.
    const ulimit = this.ulimitFiles ? `-n ${Number(this.ulimitFiles)}`
      : this.softUlimitFiles ? `-Sn ${Number(this.softUlimitFiles)}` : null;
    const [cmd, cmdArgs] = ulimit
      ? ['bash', ['-c', `ulimit ${ulimit} && exec "$0" "$@"`, BIN, ...argv]]
      : [BIN, argv];
    const child = spawn(cmd, cmdArgs, {
      stdio: ['ignore', fd, fd],
      env: { ...process.env, SIGHTLINE_INGEST_TOKEN: TOKEN, ...this.env },
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
    child.on('error', () => { /* reported through exit / readiness */ });

    const deadline = Date.now() + readyTimeoutMs;
    while (Date.now() < deadline) {
      if (this.exit) {
        throw new Error(`sightline exited before ready (code ${this.exit.code}, signal ${this.exit.signal}); args: ${argv.join(' ')}\n${this.logTail()}`);
      }
      try {
        const res = await request(`${this.apiUrl}/readyz`, { timeoutMs: 1000, ca: this.tls?.ca });
        if (res.status === 200) {
          const res2 = await request(`${this.otlpUrl}/readyz`, { timeoutMs: 1000, ca: this.tls?.ca });
          if (res2.status === 200) return;
        }
      } catch { /* not listening yet */ }
      await sleep(50);
    }
    throw new Error(`sightline not ready within ${readyTimeoutMs} ms; args: ${argv.join(' ')}\n${this.logTail()}`);
  }

  //! SIGTERM, wait for exit, and return {code, signal}. Throws unless it exits 0 in time.
  async stop({ timeoutMs = 30_000 } = {}) {
    if (!this.child) throw new Error('server was never started');
    if (this.exit) {
      throw new Error(`server had already exited (code ${this.exit.code}, signal ${this.exit.signal})\n${this.logTail()}`);
    }
    this.child.kill('SIGTERM');
    let timer;
    const timeout = new Promise((resolve) => { timer = setTimeout(() => resolve(null), timeoutMs); });
    const exit = await Promise.race([this.exited, timeout]);
    clearTimeout(timer);
    if (exit === null) {
      await this.kill9();
      throw new Error(`server did not exit within ${timeoutMs} ms of SIGTERM\n${this.logTail()}`);
    }
    if (exit.code !== 0) {
      throw new Error(`server exited with code ${exit.code} signal ${exit.signal} after SIGTERM (expected 0)\n${this.logTail()}`);
    }
    return exit;
  }

  async kill9() {
    if (!this.alive()) return this.exit;
    this.child.kill('SIGKILL');
    return this.exited;
  }

  async restart(opts) {
    if (this.alive()) throw new Error('restart() while running');
    await this.start(opts);
    return this;
  }

  //! Kills a still running server and removes the temp dir (unless SIGHTLINE_IT_KEEP).
  async cleanup() {
    if (this.alive()) await this.kill9();
    if (KEEP) {
      console.log(`# kept ${this.dir}`);
      return;
    }
    await fsp.rm(this.dir, { recursive: true, force: true });
    tempDirs.delete(this.dir);
  }

  //! Peak-friendly resident set size of the server in bytes (VmRSS), or null.
  rssBytes() {
    try {
      const status = fs.readFileSync(`/proc/${this.pid}/status`, 'utf8');
      const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
      return m ? Number(m[1]) * 1024 : null;
    } catch {
      return null;
    }
  }

  async deepHealth() {
    return getJson(`${this.apiUrl}/api/health/deep`);
  }

  //! `sightline sql` on this server's data dir; the server must be stopped.
  async sql(query) {
    if (this.alive()) throw new Error('sql() needs the server stopped');
    return runSql(this.dataDir, this.engine, query);
  }
}

/**
 * Starts a server on a fresh temp data dir. `createDataDir: false` leaves the
 * data dir for the server to create; `ulimitFiles` runs it under that
 * open-file limit (soft and hard), `softUlimitFiles` under that soft limit;
 * `state` is a --state URL (lib/postgres.mjs) instead of state.sqlite.
 */
export async function startServer({
  engine = 'duckdb', args = [], env = {}, readyTimeoutMs, createDataDir = true, ulimitFiles, softUlimitFiles, tls,
  state,
} = {}) {
  requireBinary();
  const dir = await makeTempDir(`sightline-it-${engine}-`);
  const dataDir = path.join(dir, 'data');
  if (createDataDir) await fsp.mkdir(dataDir);
  const server = new Server({ engine, dir, dataDir, args, env, ulimitFiles, softUlimitFiles, tls, state });
  try {
    await server.start({ readyTimeoutMs });
  } catch (err) {
    await server.cleanup();
    throw err;
  }
  return server;
}

//! `sightline token create` on a data dir (or the --state URL); resolves the printed token.
export function createToken(dataDir, { project = 'default', scope = 'ingest', state } = {}) {
  requireBinary();
  return new Promise((resolve, reject) => {
    execFile(BIN, ['token', 'create', '--project', project, '--scope', scope, '--data', dataDir,
      ...(state ? ['--state', state] : [])],
      { timeout: 30_000, env: process.env }, (err, stdout, stderr) => {
        if (err) reject(new Error(`sightline token create failed (${err.code ?? err.signal}): ${stderr}`));
        else resolve(stdout.trim());
      });
  });
}

/**
 * Runs `sightline sql` and returns {columns, rows, objects} where objects maps
 * each row to {column: cell}. Every cell is a string or null.
 */
export function runSql(dataDir, engine, query, { timeoutMs = 120_000 } = {}) {
  requireBinary();
  return new Promise((resolve, reject) => {
    execFile(BIN, ['sql', '--data', dataDir, '--storage', engine, query], {
      maxBuffer: 1 << 30, timeout: timeoutMs, env: process.env,
    }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`sightline sql failed (${err.code ?? err.signal}): ${query}\n${stderr}\n${stdout.slice(0, 2000)}`));
        return;
      }
      let out;
      try {
        out = JSON.parse(stdout);
      } catch (e) {
        reject(new Error(`sightline sql printed no JSON (${e.message}): ${stdout.slice(0, 2000)}`));
        return;
      }
      if (!Array.isArray(out.columns) || !Array.isArray(out.rows)) {
        reject(new Error(`sightline sql output lacks columns/rows: ${stdout.slice(0, 2000)}`));
        return;
      }
      for (const row of out.rows) {
        for (const cell of row) {
          if (cell !== null && typeof cell !== 'string') {
            reject(new Error(`sightline sql cell is neither string nor null: ${JSON.stringify(cell)} in ${query}`));
            return;
          }
        }
      }
      out.objects = out.rows.map((row) => Object.fromEntries(out.columns.map((c, i) => [c, row[i]])));
      resolve(out);
    });
  });
}

//! Single-value query helper: the first cell of the first row.
export async function sqlScalar(server, query) {
  const out = await server.sql(query);
  if (out.rows.length === 0) throw new Error(`no rows: ${query}`);
  return out.rows[0][0];
}
