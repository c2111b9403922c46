// `scripts/bench.sh full`'s DuckDB ladder (`make bench-full`), on tiny levels:
// with too little disk free for the second level it must stop the ladder at
// the first, saying so; run again on the same work directory it must resume
// on the kept data (not refill the first level), probe the remaining levels
// with --check and find no mismatch.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fsp from 'node:fs/promises';
import path from 'node:path';

import { BIN, REPO_ROOT, makeTempDir, requireBinary } from './lib/server.mjs';

function benchFull(env) {
  requireBinary();
  return new Promise((resolve) => {
    execFile('scripts/bench.sh', ['full'], {
      cwd: REPO_ROOT, timeout: 180_000, maxBuffer: 16 << 20,
      env: { ...process.env, SIGHTLINE_BIN: BIN, STEPS: 'probe', ENGINES: 'duckdb', SIGNALS: 'spans',
        FULL_LEVELS: '20000,50000,100000', ...env },
    }, (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
  });
}

const dirs = [];
after(async () => {
  for (const d of dirs) await fsp.rm(d, { recursive: true, force: true });
});

describe('scripts/bench.sh full: the resumable, disk-checked DuckDB ladder', () => {
  it('stops at the largest level that fits, then resumes on the kept data', async () => {
    const dir = await makeTempDir('sightline-bench-full-it-');
    dirs.push(dir);
    const work = path.join(dir, 'work');
    // 550 MB "free": the first level fits (512 B/row before any measurement, plus the
    // server's 512 MiB floor), the second (its measured bytes per row) does not.
    const first = await benchFull({ FULL_WORK: work, BENCH_OUT: path.join(dir, 'out1'), FREE_BYTES: '550000000' });
    assert.equal(first.code, 0, `exit ${first.code}\n${first.stdout}\n${first.stderr}`);
    assert.match(first.stdout, /level 50000 needs ~\d+ MiB more at [\d.]+ B\/row, 524 MiB free: the spans ladder stops/);
    assert.doesNotMatch(first.stdout, /spans at 65\.5k rows/);
    const kept = (await fsp.readFile(path.join(work, 'spans.kept'), 'utf8')).trim();
    const state = JSON.parse(await fsp.readFile(path.join(kept, 'probe_state.json'), 'utf8'));
    assert.equal(state.probed_rows, 20000);

    const second = await benchFull({ FULL_WORK: work, BENCH_OUT: path.join(dir, 'out2') });
    assert.equal(second.code, 0, `exit ${second.code}\n${second.stdout}\n${second.stderr}`);
    assert.match(second.stdout, /probe duckdb spans 20000: probed before/);
    assert.match(second.stdout, /resumed at request 2: spans 32\.8k rows/);
    assert.match(second.stdout, /resumed at request 4: spans 65\.5k rows/);
    for (const level of ['50000', '100000']) {
      const j = JSON.parse(await fsp.readFile(path.join(dir, 'out2', `probe-duckdb-spans-${level}.json`), 'utf8'));
      const levels = j.runs[0].signals[0].levels;
      assert.deepEqual(levels.map((l) => l.level_rows), [Number(level)]);
      assert.equal(levels[0].pass, true, levels[0].fail_reason);
      for (const c of levels[0].calls) assert.equal(c.check, 'ok', `${level} ${c.call}: ${c.check}`);
    }
    const done = JSON.parse(await fsp.readFile(path.join(kept, 'probe_state.json'), 'utf8'));
    assert.equal(done.probed_rows, 100000);
    await fsp.access(path.join(dir, 'out2', 'REPORT.md'));
  });
});
