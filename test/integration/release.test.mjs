// The release archive as a user gets it: `cmake --build build --target dist`
// (`make dist`; it reuses build/ and builds only the binary), or the archive
// named by SIGHTLINE_DIST_ARCHIVE, unpacked into a temporary prefix outside
// the build tree. That binary, run without LD_LIBRARY_PATH, prints its
// version and engine versions, loads libduckdb.so from the prefix's lib/,
// serves the embedded UI, reads the example config (and a config file ranks
// below SIGHTLINE_* variables and flags), and takes the official SDK's
// exports: sdk.test.mjs runs against it with SIGHTLINE_BIN set. The systemd
// unit passes `systemd-analyze verify` where that tool exists.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = path.resolve(here, '../..');
const BUILD_DIR = path.join(REPO_ROOT, 'build');
const VERSION = /project\(sightline VERSION (\S+)/.exec(fs.readFileSync(path.join(REPO_ROOT, 'CMakeLists.txt'), 'utf8'))[1];
const NAME = `sightline-${VERSION}-linux-x86_64`;
const SDK_ENGINES = process.env.SIGHTLINE_IT_ENGINES || 'duckdb,sqlite';

//! The environment of a user's shell: no library path, no SIGHTLINE_* settings.
function cleanEnv(extra = {}) {
  const env = Object.fromEntries(Object.entries(process.env)
    .filter(([k]) => !k.startsWith('SIGHTLINE_') && !['LD_LIBRARY_PATH', 'LD_PRELOAD', 'NODE_TEST_CONTEXT'].includes(k)));
  return { ...env, ...extra };
}

async function onPath(tool) {
  try {
    await run('sh', ['-c', `command -v ${tool}`]);
    return true;
  } catch {
    return false;
  }
}

describe('release archive', () => {
  let top;      // temp dir holding the prefix (and nothing of the build tree)
  let prefix;   // the unpacked archive's top directory
  let bin;

  before(async () => {
    let archive = process.env.SIGHTLINE_DIST_ARCHIVE;
    if (!archive) {
      await run('cmake', ['--build', BUILD_DIR, '--target', 'dist'], { timeout: 600_000, maxBuffer: 1 << 26 });
      archive = path.join(BUILD_DIR, `${NAME}.tar.gz`);
    }
    top = await fsp.mkdtemp(path.join(os.tmpdir(), 'sightline-release-'));
    assert.ok(!path.resolve(top).startsWith(REPO_ROOT), `${top} is inside the source tree`);
    await run('tar', ['-xzf', path.resolve(archive), '-C', top]);
    prefix = path.join(top, NAME);
    bin = path.join(prefix, 'bin/sightline');
  });

  after(async () => {
    if (top && !process.env.SIGHTLINE_IT_KEEP) await fsp.rm(top, { recursive: true, force: true });
  });

  it('holds the binary, libduckdb.so, the systemd unit, the example config and the docs, under one directory', async () => {
    assert.deepEqual(await fsp.readdir(top), [NAME]);
    const { stdout } = await run('find', ['.', '-type', 'f'], { cwd: prefix });
    assert.deepEqual(stdout.trim().split('\n').sort(), [
      './bin/sightline',
      './lib/libduckdb.so',
      './share/doc/sightline/OPERATIONS.md',
      './share/doc/sightline/README.md',
      './share/sightline/sightline.service',
      './share/sightline/sightline.toml',
    ]);
    fs.accessSync(bin, fs.constants.X_OK);
  });

  it('--version prints the version and the engine versions', async () => {
    const { stdout } = await run(bin, ['--version'], { env: cleanEnv(), cwd: top });
    const lines = stdout.trim().split('\n');
    assert.equal(lines[0], `sightline ${VERSION}`);
    assert.match(lines[1], /^DuckDB v\d+\.\d+\.\d+/);
    assert.match(lines[2], /^SQLite 3\.\d+\.\d+$/);
  });

  it('finds libduckdb.so through $ORIGIN/../lib, and nothing in the build tree', async () => {
    const { stdout: dyn } = await run('readelf', ['-d', bin]);
    assert.match(dyn, /\((?:RUNPATH|RPATH)\)\s+Library r(?:un)?path: \[\$ORIGIN\/\.\.\/lib\]/);
    assert.match(dyn, /\(NEEDED\)\s+Shared library: \[libduckdb\.so\]/);

    const { stdout: ldd } = await run('ldd', [bin], { env: cleanEnv() });
    const duckdb = /^\s*libduckdb\.so => (\S+)/m.exec(ldd);
    assert.ok(duckdb, ldd);
    assert.equal(fs.realpathSync(duckdb[1]), fs.realpathSync(path.join(prefix, 'lib/libduckdb.so')));
    assert.doesNotMatch(ldd, /not found/);
    for (const [, lib] of ldd.matchAll(/=> (\/\S+)/g)) {
      assert.ok(!fs.realpathSync(lib).startsWith(REPO_ROOT), `${lib} resolves into the source tree`);
    }
  });

  it('ships an example config that lists every serve option at its default and reads back as it is', async () => {
    const example = path.join(prefix, 'share/sightline/sightline.toml');
    const text = fs.readFileSync(example, 'utf8');
    const { stdout: help } = await run(bin, ['serve', '--help'], { env: cleanEnv() });
    const flags = [...help.matchAll(/^\s+--([a-z0-9-]+)/gm)].map((m) => m[1])
      .filter((f) => !['help', 'config', 'print-config'].includes(f));
    assert.ok(flags.length > 40, help);
    for (const flag of flags) {
      assert.match(text, new RegExp(`^(# )?${flag} = `, 'm'), `the example config lacks ${flag}`);
    }
    assert.match(text, /^otlp-grpc = "0\.0\.0\.0:4317"$/m);
    assert.match(text, /^log-level = "info"$/m);
    const { stdout } = await run(bin, ['serve', '--config', example, '--print-config'], { env: cleanEnv() });
    assert.equal(stdout, text);
  });

  it('takes serve options from --config, below SIGHTLINE_* variables, below flags; --log-level after serve too', async () => {
    const file = path.join(top, 'test.toml');
    fs.writeFileSync(file, [
      'max-connections = 11', 'max-query-groups = 12', 'retention-logs = "3d"', 'log-level = "debug"',
      'metrics-require-auth = true', '',
    ].join('\n'));
    const { stdout } = await run(bin, ['serve', '--config', file, '--max-query-groups', '34', '--log-level', 'warn',
      '--print-config'], { env: cleanEnv({ SIGHTLINE_MAX_CONNECTIONS: '21', SIGHTLINE_MAX_QUERY_GROUPS: '22' }) });
    assert.match(stdout, /^max-connections = 21$/m);   // variable over file
    assert.match(stdout, /^max-query-groups = 34$/m);  // flag over variable and file
    assert.match(stdout, /^retention-logs = "3d"$/m);  // file over default
    assert.match(stdout, /^metrics-require-auth = true$/m);
    assert.match(stdout, /^log-level = "warn"$/m);

    fs.writeFileSync(file, 'max-conections = 5\n');
    await assert.rejects(run(bin, ['serve', '--config', file, '--print-config'], { env: cleanEnv() }),
      (err) => /max-conections/.test(err.stderr) || /max-conections/.test(err.stdout));
  });

  it('serves the embedded UI from the unpacked prefix', async () => {
    process.env.SIGHTLINE_BIN = bin;
    const { startServer, request } = await import('./lib/server.mjs');
    const server = await startServer({ engine: 'duckdb' });
    try {
      const page = await request(`${server.apiUrl}/`);
      assert.equal(page.status, 200);
      assert.match(page.headers['content-type'], /text\/html/);
      const script = /<script[^>]+src="([^"]+\.js)"/.exec(page.body.toString());
      assert.ok(script, page.body.toString().slice(0, 500));
      const asset = await request(`${server.apiUrl}${script[1]}`);
      assert.equal(asset.status, 200);
      assert.ok(asset.body.length > 10_000);
      await server.stop();
    } finally {
      await server.cleanup();
    }
  });

  it('takes the OpenTelemetry SDK exports (sdk.test.mjs against the unpacked binary)', async () => {
    const child = spawn(process.execPath, ['--test', '--test-concurrency=1', path.join(here, 'sdk.test.mjs')], {
      cwd: top,
      env: cleanEnv({ SIGHTLINE_BIN: bin, SIGHTLINE_IT_ENGINES: SDK_ENGINES }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (c) => { output += c; });
    child.stderr.on('data', (c) => { output += c; });
    const code = await new Promise((resolve) => child.on('exit', resolve));
    assert.equal(code, 0, output.slice(-6000));
    assert.match(output, /^# fail 0$/m);
    const passed = Number(/^# pass (\d+)$/m.exec(output)?.[1]);
    assert.ok(passed >= 14 * SDK_ENGINES.split(',').length, output.slice(-3000));
  });

  it('has a hardened systemd unit that systemd-analyze accepts', async (t) => {
    const unit = fs.readFileSync(path.join(prefix, 'share/sightline/sightline.service'), 'utf8');
    for (const line of ['DynamicUser=yes', 'ProtectSystem=strict', 'StateDirectory=sightline', 'NoNewPrivileges=yes',
      'PrivateTmp=yes', 'ProtectHome=yes', 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX', 'LimitNOFILE=65536',
      'ExecStart=/opt/sightline/bin/sightline serve --config /etc/sightline/sightline.toml']) {
      assert.ok(unit.split('\n').includes(line), `the unit lacks ${line}`);
    }
    if (!(await onPath('systemd-analyze'))) {
      t.skip('systemd-analyze is not installed');
      return;
    }
    // verify wants ExecStart's binary to exist: point the unit at this prefix.
    const copy = path.join(top, 'sightline.service');
    fs.writeFileSync(copy, unit.replaceAll('/opt/sightline/', `${prefix}/`));
    const verify = await run('systemd-analyze', ['verify', copy]).catch((err) => err);
    assert.equal(verify.code ?? 0, 0, `${verify.stderr}`);
    assert.equal(verify.stderr, '');
    // The threshold is on the tool's internal 0-100 scale: 20 is an exposure of 2.0 ("OK").
    const security = await run('systemd-analyze', ['security', '--offline=true', '--threshold=20', copy])
      .catch((err) => err);
    assert.equal(security.code ?? 0, 0, `${security.stdout}\n${security.stderr}`);
  });
});
