// `sightline bench probe` end to end, for each engine: a short checked ladder
// (--levels 2000,6000 --check) on spawned servers must fill every signal to
// exactly its levels, digest, answer every dashboard call with 200, pass both
// levels and find no difference from the ground truth; the JSON must follow
// bench/README.md. A mixed ladder under a background ingest, run twice, must
// still match the truth, pace that ingest at its target and summarise both
// runs. Then the check must catch a wrong answer: against a
// server that already holds a span the probe did not send, the endpoint
// counts differ and the command exits 3. A kept ladder stopped after its
// first level must refuse other options and, resumed, fill on to the second
// level, rebuild the truth and match it, with the rows of both runs stored once;
// one interrupted by SIGINT in the middle of a fill must save where it got to
// and, resumed, fill on from there. A spawned server killed in the middle of
// a fill (as the OOM killer would) must fail its level at once, not after
// the digestion timeout, and the probe exit 4.

import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import fsp from 'node:fs/promises';
import path from 'node:path';

import { BIN, ENGINES, TOKEN, makeTempDir, request, requireBinary, runSql, startServer } from './lib/server.mjs';
import { encodeTraceRequestJson } from './lib/otlp.mjs';
import { postOtlp } from './lib/api.mjs';

const CALLS = {
  spans: ['endpoints', 'endpoints_series', 'exceptions', 'trace'],
  logs: ['logs_errors', 'logs_search', 'logs_trace'],
  metrics: ['metrics_list', 'metric_series', 'metrics_overview'],
};

//! Runs the probe; resolves {code, stdout, stderr, json}.
function probe(args, jsonOut) {
  requireBinary();
  return new Promise((resolve) => {
    execFile(BIN, ['bench', 'probe', ...args, '--json-out', jsonOut], { timeout: 90_000, maxBuffer: 16 << 20 },
      async (err, stdout, stderr) => {
        let json = null;
        try { json = JSON.parse(await fsp.readFile(jsonOut, 'utf8')); } catch { /* asserted by the caller */ }
        resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr, json });
      });
  });
}

const dirs = [];
after(async () => {
  for (const d of dirs) await fsp.rm(d, { recursive: true, force: true });
});

for (const engine of ENGINES) {
  describe(`bench probe --spawn ${engine}`, () => {
    it('fills, digests, probes and checks every signal at 2000 and 6000 rows', async () => {
      const dir = await makeTempDir('sightline-probe-it-');
      dirs.push(dir);
      const out = path.join(dir, 'probe.json');
      const r = await probe(['--spawn', engine, '--signal', 'all', '--levels', '2000,6000', '--check',
        '--digest-interval', '0.3', '--work-dir', dir], out);
      assert.equal(r.code, 0, `exit ${r.code}\n${r.stdout}\n${r.stderr}`);
      const j = r.json;
      assert.ok(j, 'JSON written');
      assert.equal(j.benchmark, 'probe');
      assert.equal(j.version, 1);
      assert.deepEqual(j.config.levels, [2000, 6000]);
      assert.equal(j.config.check, true);
      assert.ok(j.machine.cores > 0 && j.machine.mem_bytes > 0 && j.machine.kernel.length > 0);
      assert.match(j.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
      assert.equal(j.runs.length, 1);
      const run = j.runs[0];
      assert.equal(run.run, 1);
      assert.equal(run.engine, engine);
      assert.equal(run.under_ingest, null);
      assert.deepEqual(run.signals.map((s) => s.signal), ['spans', 'logs', 'metrics']);
      for (const s of run.signals) {
        assert.deepEqual(s.levels.map((l) => l.level_rows), [2000, 6000], s.signal);
        for (const l of s.levels) {
          const where = `${engine} ${s.signal} @${l.level_rows}`;
          // The batch is capped at the first level, so every level is reached exactly.
          assert.equal(l.accepted_rows, l.level_rows, where);
          assert.ok(l.fill_s > 0 && l.fill_items_per_s > 0, where);
          assert.equal(l.digested, true, where);
          assert.ok(l.digest_wait_s >= 0 && l.database_bytes > 0, where);
          // SQLite's pages hold every row; DuckDB's blocks only the checkpointed ones (none yet at these sizes).
          if (engine === 'sqlite') {
            assert.equal(l.signal_stored_rows, l.accepted_rows, where);
            assert.ok(l.signal_bytes > 0 && Math.abs(l.bytes_per_row - l.signal_bytes / l.accepted_rows) < 1e-6, where);
          } else {
            assert.ok(l.bytes_per_row === null || l.bytes_per_row > 0, where);
          }
          assert.deepEqual(l.calls.map((c) => c.call), CALLS[s.signal], where);
          for (const c of l.calls) {
            assert.equal(c.check, 'ok', `${where} ${c.call}: ${c.check}`);
            assert.deepEqual(c.http_status, [200, 200, 200], `${where} ${c.call}`);
            assert.equal(c.samples_ms.length, 3);
            assert.equal(c.timeouts, 0);
            assert.ok(c.min_ms <= c.median_ms && c.median_ms <= c.max_ms, `${where} ${c.call}`);
            assert.ok(c.path.startsWith('/api/v1/'), c.path);
          }
          assert.equal(l.pass, true, `${where}: ${l.fail_reason}`);
          assert.equal(l.fail_reason, '');
          // A server holds more than a megabyte, and far less than this box.
          assert.ok(l.server_peak_rss_bytes > 1 << 20 && l.server_peak_rss_bytes < j.machine.mem_bytes, where);
        }
        assert.equal(s.read_cliff_rows, 6000, s.signal);
        assert.equal(j.summary[s.signal].read_cliff_rows, 6000);
        for (const call of CALLS[s.signal]) {
          const byLevel = j.summary[s.signal].calls[call];
          assert.deepEqual(Object.keys(byLevel), ['2000', '6000'], call);
          assert.ok(byLevel['6000'].median_ms > 0);
        }
      }
      assert.match(r.stdout, /check: 0 mismatching answers/);
    });
  });
}

describe(`bench probe --mixed --under-ingest --repeat 2 (${ENGINES[0]})`, () => {
  it('probes all signals of one server while a fleet writes, twice, and still matches the truth', async () => {
    const dir = await makeTempDir('sightline-probe-it-');
    dirs.push(dir);
    const out = path.join(dir, 'probe.json');
    const r = await probe(['--spawn', ENGINES[0], '--mixed', '--levels', '2000,6000', '--check', '--under-ingest', '1000',
      '--repeat', '2', '--digest-interval', '0.3', '--work-dir', dir], out);
    assert.equal(r.code, 0, `exit ${r.code}\n${r.stdout}\n${r.stderr}`);
    const j = r.json;
    assert.equal(j.config.mixed, true);
    assert.deepEqual(j.runs.map((x) => x.run), [1, 2]);
    for (const run of j.runs) {
      assert.deepEqual(run.signals.map((s) => s.signal), ['spans', 'logs', 'metrics']);
      // The background load is paced at its target; its rows lie outside the queried range.
      assert.equal(run.under_ingest.target_items_per_s, 1000);
      assert.ok(run.under_ingest.achieved_items_per_s > 500 && run.under_ingest.achieved_items_per_s < 1500,
        `achieved ${run.under_ingest.achieved_items_per_s}`);
      for (const s of run.signals) {
        // One fill for all signals: every signal's level shares its fill time.
        assert.equal(s.levels[0].fill_s, run.signals[0].levels[0].fill_s);
        for (const l of s.levels) {
          assert.equal(l.accepted_rows, l.level_rows);
          for (const c of l.calls) assert.equal(c.check, 'ok', `run ${run.run} ${s.signal} ${c.call}: ${c.check}`);
        }
        assert.equal(s.read_cliff_rows, 6000);
      }
    }
    for (const signal of ['spans', 'logs', 'metrics']) {
      assert.equal(j.summary[signal].read_cliff_rows, 6000);
      for (const [call, byLevel] of Object.entries(j.summary[signal].calls)) {
        // min/max are over every sample of both runs; the median is the median of the two runs' medians.
        const calls = j.runs.map((run) => run.signals.find((s) => s.signal === signal).levels[1].calls
          .find((c) => c.call === call));
        const samples = calls.flatMap((c) => c.samples_ms);
        assert.equal(byLevel['6000'].min_ms, Math.min(...samples), call);
        assert.equal(byLevel['6000'].max_ms, Math.max(...samples), call);
        const medians = calls.map((c) => c.median_ms);
        assert.ok(Math.abs(byLevel['6000'].median_ms - (medians[0] + medians[1]) / 2) < 1e-6, call);
      }
    }
  });
});

describe('bench probe --check against a server holding a foreign span', () => {
  it('reports the endpoint mismatch and exits 3', async () => {
    const server = await startServer({ engine: ENGINES[0] });
    try {
      const now = BigInt(Date.now()) * 1_000_000n;
      const body = encodeTraceRequestJson({
        resource: { 'service.name': 'intruder' },
        spans: [{ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', name: 'GET /x', kind: 2,
          start: now - 3_600_000_000_000n, end: now - 3_599_000_000_000n }],
      });
      await postOtlp(server, 'traces', body, { json: true });
      const dir = await makeTempDir('sightline-probe-it-');
      dirs.push(dir);
      const out = path.join(dir, 'probe.json');
      const r = await probe(['--endpoint', server.otlpUrl, '--api', server.apiUrl, '--token', TOKEN, '--read-token', server.readToken, '--signal', 'spans',
        '--levels', '1000', '--check', '--digest-interval', '0.3'], out);
      assert.equal(r.code, 3, `exit ${r.code}\n${r.stdout}\n${r.stderr}`);
      const calls = r.json.runs[0].signals[0].levels[0].calls;
      const endpoints = calls.find((c) => c.call === 'endpoints');
      assert.match(endpoints.check, /^mismatch: .*total/, endpoints.check);
      assert.equal(r.json.runs[0].engine, 'external');
    } finally {
      await server.stop();
      await server.cleanup();
    }
  });
});

describe(`bench probe --keep-data --stop-after, then --resume (${ENGINES[0]})`, () => {
  it('continues a stopped ladder on its kept data and still matches the truth', async () => {
    const dir = await makeTempDir('sightline-probe-it-');
    dirs.push(dir);
    const common = ['--spawn', ENGINES[0], '--signal', 'spans', '--levels', '20000,50000', '--batch', '10000', '--check',
      '--digest-interval', '0.3'];
    // A --work-dir that does not exist yet is made.
    const first = await probe([...common, '--keep-data', '--stop-after', '20000', '--work-dir', path.join(dir, 'new', 'work')],
      path.join(dir, 'first.json'));
    assert.equal(first.code, 0, `exit ${first.code}\n${first.stdout}\n${first.stderr}`);
    const kept = first.stdout.match(/--resume (\S+)/)?.[1];
    assert.ok(kept?.startsWith(path.join(dir, 'new', 'work', 'sightline-bench-')), first.stdout);
    assert.deepEqual(first.json.runs[0].signals[0].levels.map((l) => l.level_rows), [20000]);
    const state = JSON.parse(await fsp.readFile(path.join(kept, 'probe_state.json'), 'utf8'));
    assert.equal(state.probed_rows, 20000);
    assert.deepEqual(state.accepted, [20000, 0, 0]);
    assert.equal(state.sent, 2);
    assert.equal(state.in_flight_until, 0);

    // Other settings than the kept ladder's are refused, naming the setting.
    const other = await probe(['--spawn', ENGINES[0], '--signal', 'spans', '--levels', '20000,60000', '--batch', '10000',
      '--resume', kept], path.join(dir, 'other.json'));
    assert.equal(other.code, 1, other.stdout);
    assert.match(other.stderr, /--levels: the kept ladder has '20000,50000', this run asks for '20000,60000'/);

    const second = await probe([...common, '--resume', kept], path.join(dir, 'second.json'));
    assert.equal(second.code, 0, `exit ${second.code}\n${second.stdout}\n${second.stderr}`);
    assert.match(second.stdout, /resumed at request 2: spans 20.0k rows, levels up to 20.0k probed/);
    assert.match(second.stdout, /truth rebuilt from 2 requests/);
    const levels = second.json.runs[0].signals[0].levels;
    assert.deepEqual(levels.map((l) => l.level_rows), [50000]);
    assert.equal(levels[0].accepted_rows, 50000);
    for (const c of levels[0].calls) assert.equal(c.check, 'ok', `${c.call}: ${c.check}`);
    assert.equal(levels[0].pass, true, levels[0].fail_reason);
    assert.match(second.stdout, /check: 0 mismatching answers/);
    assert.equal(second.json.runs[0].signals[0].read_cliff_rows, 50000, 'the levels probed before the resume count');
    const after = JSON.parse(await fsp.readFile(path.join(kept, 'probe_state.json'), 'utf8'));
    assert.equal(after.probed_rows, 50000);
    assert.deepEqual(after.accepted, [50000, 0, 0]);
    // The first run's rows and the second's, each stored once.
    const count = await runSql(path.join(kept, 'data'), ENGINES[0], 'SELECT count(*) AS n FROM spans');
    assert.equal(count.rows[0][0], '50000');

    // --reprobe: the top level again, filling nothing, now beside a background ingest.
    const third = await probe([...common, '--resume', kept, '--reprobe', '--under-ingest', '200', '--under-ingest-batch', '20'],
      path.join(dir, 'third.json'));
    assert.equal(third.code, 0, `exit ${third.code}\n${third.stdout}\n${third.stderr}`);
    const again = third.json.runs[0].signals[0].levels;
    assert.deepEqual(again.map((l) => l.level_rows), [50000]);
    assert.equal(again[0].accepted_rows, 50000);
    assert.equal(again[0].fill_items_per_s, 0);
    for (const c of again[0].calls) assert.equal(c.check, 'ok', `${c.call}: ${c.check}`);
    assert.equal(third.json.runs[0].signals[0].read_cliff_rows, 50000);
    assert.ok(third.json.runs[0].under_ingest.achieved_items_per_s > 0, JSON.stringify(third.json.runs[0].under_ingest));
  });
});

for (const engine of ENGINES) {
  describe(`deep health: bytes per row (${engine})`, () => {
    it('reports each signal\'s rows, bytes on disk and bytes per stored row', async () => {
      const server = await startServer({ engine });
      try {
        const now = BigInt(Date.now()) * 1_000_000n;
        const spans = [];
        for (let i = 0; i < 200; ++i) {
          spans.push({ traceId: `0af7651916cd43dd8448eb211c8${String(i).padStart(5, '0')}`, spanId: `b7ad6b71692${String(i).padStart(5, '0')}`,
            name: 'GET /x', kind: 2, start: now - 1_000_000_000n, end: now });
        }
        await postOtlp(server, 'traces', encodeTraceRequestJson({ resource: { 'service.name': 'sized' }, spans }), { json: true });
        // A restart checkpoints DuckDB, so its blocks hold the rows.
        await server.stop();
        await server.restart();
        // Nothing measured since the restart: a plain deep health answers
        // without waiting and starts a measurement that a later call shows.
        let measured;
        for (const deadline = Date.now() + 10_000; Date.now() < deadline;) {
          measured = JSON.parse((await request(`${server.apiUrl}/api/health/deep`)).body.toString());
          if (measured.engine.signals.spans.bytes !== null) break;
          assert.equal(measured.engine.signals_measured_seconds_ago, null);
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.equal(measured.engine.signals.spans.stored_rows, 200);
        const r = await request(`${server.apiUrl}/api/health/deep?fresh=1`);
        assert.equal(r.status, 200);
        const health = JSON.parse(r.body.toString());
        const sig = health.engine.signals;
        assert.deepEqual(Object.keys(sig), ['spans', 'logs', 'metrics']);
        assert.equal(sig.spans.rows, 200);
        assert.equal(sig.spans.stored_rows, 200);
        assert.ok(sig.spans.bytes > 0 && sig.spans.bytes <= health.database_bytes + health.wal_bytes, JSON.stringify(sig));
        assert.ok(Math.abs(sig.spans.bytes_per_row - sig.spans.bytes / 200) < 1e-9);
        for (const s of ['logs', 'metrics']) {
          assert.equal(sig[s].rows, 0, s);
          assert.equal(sig[s].stored_rows, 0, s);
          assert.equal(sig[s].bytes_per_row, null, s);
        }
        assert.ok(health.engine.signals_measured_seconds_ago >= 0 && health.engine.signals_measured_seconds_ago < 5);
        // Without ?fresh=1 the answer never waits for a measurement: it gives
        // the last one and, once that is old, starts the next in the background.
        const plain = JSON.parse((await request(`${server.apiUrl}/api/health/deep`)).body.toString());
        assert.deepEqual(plain.engine.signals, sig);
        assert.ok(plain.engine.signals_measured_seconds_ago >= health.engine.signals_measured_seconds_ago);
      } finally {
        await server.stop();
        await server.cleanup();
      }
    });
  });
}

describe(`bench probe --keep-data stopped by SIGINT mid-fill, then --resume (${ENGINES[0]})`, () => {
  it('saves the state after the chunk in flight and fills on from it', async () => {
    requireBinary();
    const dir = await makeTempDir('sightline-probe-it-');
    dirs.push(dir);
    const common = ['bench', 'probe', '--spawn', ENGINES[0], '--signal', 'spans', '--levels', '20000,400000',
      '--batch', '10000', '--check', '--digest-interval', '0.3'];
    const child = spawn(BIN, [...common, '--keep-data', '--work-dir', dir]);
    let stdout = '';
    let signalled = false;
    child.stdout.on('data', (d) => {
      stdout += d;
      // Interrupt as soon as the second level's fill reports progress.
      if (!signalled && /level 400\.0k: +\d+% filled/.test(stdout)) {
        signalled = true;
        child.kill('SIGINT');
      }
    });
    const code = await new Promise((resolve) => child.on('exit', (c) => resolve(c)));
    assert.equal(signalled, true, stdout);
    assert.equal(code, 130, stdout);
    const kept = stdout.match(/--resume (\S+)/)?.[1];
    assert.ok(kept, stdout);
    assert.match(stdout, /stopped by a signal/);
    const state = JSON.parse(await fsp.readFile(path.join(kept, 'probe_state.json'), 'utf8'));
    assert.equal(state.probed_rows, 20000);
    assert.equal(state.in_flight_until, 0);
    assert.equal(state.accepted[0], state.sent * 10000);
    assert.ok(state.accepted[0] > 20000 && state.accepted[0] < 400000, `accepted ${state.accepted[0]}`);

    const out = path.join(dir, 'resumed.json');
    const resumed = await probe([...common.slice(2), '--resume', kept], out);
    assert.equal(resumed.code, 0, `exit ${resumed.code}\n${resumed.stdout}\n${resumed.stderr}`);
    assert.match(resumed.stdout, new RegExp(`resumed at request ${state.sent}:`));
    const level = resumed.json.runs[0].signals[0].levels[0];
    assert.equal(level.level_rows, 400000);
    assert.equal(level.accepted_rows, 400000);
    for (const c of level.calls) assert.equal(c.check, 'ok', `${c.call}: ${c.check}`);
    const count = await runSql(path.join(kept, 'data'), ENGINES[0], 'SELECT count(*) AS n FROM spans');
    assert.equal(count.rows[0][0], '400000');
  });
});

describe(`bench probe with its spawned server killed mid-fill (${ENGINES[0]})`, () => {
  it('fails the level at once, says the server died and exits 4', async () => {
    requireBinary();
    const dir = await makeTempDir('sightline-probe-it-');
    dirs.push(dir);
    const out = path.join(dir, 'killed.json');
    const child = spawn(BIN, ['bench', 'probe', '--spawn', ENGINES[0], '--signal', 'spans', '--levels',
      '20000,4000000', '--batch', '10000', '--digest-interval', '0.3', '--work-dir', dir, '--json-out', out]);
    let stdout = '';
    let stderr = '';
    let killedAt = 0;
    child.stderr.on('data', (d) => { stderr += d; });
    child.stdout.on('data', (d) => {
      stdout += d;
      if (!killedAt && /level 4\.00M: +\d+% filled/.test(stdout)) {
        killedAt = Date.now();
        // The server is the one child of the probe serving a data directory under `dir`.
        execFile('pkill', ['-KILL', '-f', `serve --data ${dir}/`]);
      }
    });
    const code = await new Promise((resolve) => child.on('exit', (c) => resolve(c)));
    assert.ok(killedAt > 0, stdout);
    // The digestion timeout is 300 s; a dead server is seen within a chunk.
    assert.ok(Date.now() - killedAt < 60_000, `took ${Date.now() - killedAt} ms after the kill`);
    assert.equal(code, 4, `${stdout}\n${stderr}`);
    assert.match(stderr, /the spawned server \(pid \d+\) is gone/);
    const j = JSON.parse(await fsp.readFile(out, 'utf8'));
    const levels = j.runs[0].signals[0].levels;
    assert.deepEqual(levels.map((l) => l.level_rows), [20000, 4000000]);
    assert.equal(levels[0].pass, true);
    assert.equal(levels[1].pass, false);
    assert.match(levels[1].fail_reason, /^the server died at /);
    assert.ok(levels[1].accepted_rows < 4000000);
    assert.deepEqual(levels[1].calls, []);
    assert.equal(j.runs[0].signals[0].read_cliff_rows, 20000);
  });
});
