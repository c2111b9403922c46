// Starts and stops a real PostgreSQL server for the end-to-end tests: initdb
// -A trust into a fresh temp dir, pg_ctl start on a free loopback port with
// the socket in that dir, createdb, and pg_ctl stop + removal at the end.
// Durability is off (fsync, synchronous_commit): the data dies with the test.
//
// As root, the server programs run as the `postgres` OS user (initdb refuses
// root) through `runuser -u postgres --`, in a temp dir that user owns.
// Binaries come from $SIGHTLINE_PG_BINDIR or the newest
// /usr/lib/postgresql/<version>/bin (Debian postgresql-15); when missing,
// startPostgres() throws, so the tests fail rather than skip. pg_ctl
// detaches the server, so an exit hook stops it (immediate mode) if a test
// process ends without calling stop().

import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { HOST, freePort } from './server.mjs';

const KEEP = !!process.env.SIGHTLINE_IT_KEEP;
const running = new Set();  // servers not yet stopped

process.on('exit', () => {
  for (const pg of running) {
    const [cmd, args] = pg.ownerCommand('pg_ctl', ['-D', pg.dataDir, '-m', 'immediate', '-w', 'stop']);
    spawnSync(cmd, args, { stdio: 'ignore', timeout: 15_000 });
    if (!KEEP) fs.rmSync(pg.dir, { recursive: true, force: true });
  }
});

function run(cmd, args, { timeoutMs = 60_000 } = {}) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { timeout: timeoutMs }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(' ')} failed (${err.code ?? err.signal}):\n${stderr}\n${stdout}`));
      else resolve(stdout);
    });
  });
}

//! The directory holding initdb, pg_ctl and createdb, or null.
export function postgresBinDir() {
  const env = process.env.SIGHTLINE_PG_BINDIR;
  if (env) return fs.existsSync(path.join(env, 'initdb')) ? env : null;
  let versions = [];
  try { versions = fs.readdirSync('/usr/lib/postgresql'); } catch { return null; }
  const found = versions
    .filter((v) => fs.existsSync(`/usr/lib/postgresql/${v}/bin/initdb`) && fs.existsSync(`/usr/lib/postgresql/${v}/bin/pg_ctl`))
    .sort((a, b) => Number(b) - Number(a));
  return found.length ? `/usr/lib/postgresql/${found[0]}/bin` : null;
}

export class Postgres {
  constructor({ bin, dir, prefix }) {
    this.bin = bin;
    this.dir = dir;                       // temp root: data/, the socket, server.log
    this.dataDir = path.join(dir, 'data');
    this.logPath = path.join(dir, 'server.log');
    this.prefix = prefix;                 // ['runuser', '-u', 'postgres', '--'] as root, else []
    this.port = null;
  }

  //! [command, args] that run a server program (initdb, pg_ctl) as the server's OS user.
  ownerCommand(program, args) {
    const full = path.join(this.bin, program);
    return this.prefix.length ? [this.prefix[0], [...this.prefix.slice(1), full, ...args]] : [full, args];
  }

  #asOwner(program, args) {
    return run(...this.ownerCommand(program, args));
  }

  //! The libpq URL of a database on this server.
  url(database) { return `postgresql://postgres@${HOST}:${this.port}/${database}`; }

  async start() {
    await this.#asOwner('initdb', ['-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '-D', this.dataDir]);
    let lastErr;
    for (let attempt = 0; attempt < 3; attempt++) {
      this.port = await freePort();
      try {
        await this.#asOwner('pg_ctl', ['-D', this.dataDir, '-l', this.logPath, '-w', '-t', '60', '-o',
          `-p ${this.port} -k ${this.dir} -c listen_addresses=${HOST} -c fsync=off -c synchronous_commit=off`,
          'start']);
        running.add(this);
        return this;
      } catch (err) {
        lastErr = err;  // maybe the port was taken between freePort() and the bind
      }
    }
    throw new Error(`${lastErr.message}\n${this.logTail()}`);
  }

  //! Creates a database; resolves its URL.
  async createDatabase(name) {
    await run(path.join(this.bin, 'createdb'), ['-h', HOST, '-p', String(this.port), '-U', 'postgres', name]);
    return this.url(name);
  }

  //! Runs SQL with psql; resolves its unaligned, tuples-only output.
  async psql(database, sql) {
    return run(path.join(this.bin, 'psql'), ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', HOST, '-p',
      String(this.port), '-U', 'postgres', '-d', database, '-c', sql]);
  }

  logTail(bytes = 4000) {
    try {
      const buf = fs.readFileSync(this.logPath);
      return buf.subarray(Math.max(0, buf.length - bytes)).toString();
    } catch {
      return '(no log)';
    }
  }

  //! Fast shutdown, then the temp dir is removed (unless SIGHTLINE_IT_KEEP).
  async stop() {
    if (running.has(this)) {
      await this.#asOwner('pg_ctl', ['-D', this.dataDir, '-m', 'fast', '-w', '-t', '60', 'stop']);
      running.delete(this);
    }
    if (KEEP) console.log(`# kept ${this.dir}`);
    else await fsp.rm(this.dir, { recursive: true, force: true });
  }
}

//! A PostgreSQL server started in a fresh temp dir on a free loopback port.
export async function startPostgres() {
  const bin = postgresBinDir();
  if (!bin) {
    throw new Error('PostgreSQL server binaries not found (/usr/lib/postgresql/<version>/bin or '
      + '$SIGHTLINE_PG_BINDIR): install the Debian package postgresql-15 (scripts/setup.sh --test)');
  }
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'sightline-it-pg-'));
  let prefix = [];
  if (process.getuid() === 0) {
    const uid = Number((await run('id', ['-u', 'postgres'])).trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).trim());
    await fsp.chown(dir, uid, gid);
    prefix = ['runuser', '-u', 'postgres', '--'];
  }
  const pg = new Postgres({ bin, dir, prefix });
  try {
    await pg.start();
  } catch (err) {
    await fsp.rm(dir, { recursive: true, force: true });
    throw err;
  }
  return pg;
}
