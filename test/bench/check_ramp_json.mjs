// Validates the JSON of `sightline bench ramp` the way a reader of the
// report would: every step has its fields, the numbers agree with each other
// (status counts vs error %, pass flag vs the published rule, best step and
// maxima vs the steps), ladders stop at their first failure, and something
// was accepted.
//
// Usage: node check_ramp_json.mjs RESULT.json [expected signal ...]
import { readFileSync } from 'node:fs';
import assert from 'node:assert/strict';

const [file, ...expectedSignals] = process.argv.slice(2);
assert.ok(file, 'usage: node check_ramp_json.mjs RESULT.json [signal ...]');
const doc = JSON.parse(readFileSync(file, 'utf8'));

const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
const near = (a, b, what) => assert.ok(Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a), Math.abs(b)), `${what}: ${a} vs ${b}`);

assert.equal(doc.benchmark, 'ramp');
assert.equal(doc.version, 1);
assert.match(doc.started_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
for (const k of ['cores', 'mem_bytes']) assert.ok(isNum(doc.machine[k]) && doc.machine[k] > 0, `machine.${k}`);
for (const k of ['cpu_model', 'kernel']) assert.equal(typeof doc.machine[k], 'string', `machine.${k}`);
const cfg = doc.config;
for (const k of ['batches', 'rates', 'fleet_rates', 'phases']) assert.ok(Array.isArray(cfg[k]), `config.${k}`);
const maxErr = cfg.max_error_pct, minFrac = cfg.min_achieved_fraction;
assert.equal(maxErr, 5);
assert.equal(minFrac, 0.7);

assert.ok(Array.isArray(doc.signals) && doc.signals.length > 0, 'signals');
if (expectedSignals.length > 0) assert.deepEqual(doc.signals.map((s) => s.signal), expectedSignals);

let accepted = 0;
for (const sig of doc.signals) {
  const where = sig.signal;
  assert.equal(typeof sig.engine, 'string');
  assert.deepEqual(sig.phases.map((p) => p.phase), cfg.phases.filter((p) => ['batch', 'rate', 'fleet'].includes(p)));
  let max = 0, fleetMax = 0, winningBatch = cfg.batches[0];
  for (const phase of sig.phases) {
    const at = `${where}/${phase.phase}`;
    assert.ok(phase.steps.length > 0, `${at}: no steps`);
    phase.steps.forEach((s, i) => {
      const st = `${at} step ${i}`;
      for (const k of ['batch', 'target_rps', 'target_items_per_s', 'achieved_rps', 'accepted_items_per_s', 'error_pct',
        'server_rss_bytes', 'server_cpu_cores', 'requests', 'items_accepted']) {
        assert.ok(isNum(s[k]), `${st}: ${k} missing or not a number`);
      }
      for (const k of ['p50', 'p95', 'p99', 'max']) assert.ok(isNum(s.latency_ms[k]), `${st}: latency_ms.${k}`);
      assert.ok(s.latency_ms.p50 <= s.latency_ms.p95 && s.latency_ms.p95 <= s.latency_ms.p99 &&
        s.latency_ms.p99 <= s.latency_ms.max, `${st}: percentiles out of order`);
      assert.equal(typeof s.pass, 'boolean');
      assert.equal(typeof s.fail_reason, 'string');
      near(s.target_items_per_s, s.batch * s.target_rps, `${st}: target items/s`);
      // The status counts add up to the requests sent; error % follows from them.
      const counts = Object.entries(s.status_counts);
      const total = counts.reduce((a, [, n]) => a + n, 0);
      const ok = counts.filter(([c]) => /^2\d\d$/.test(c)).reduce((a, [, n]) => a + n, 0);
      assert.equal(total, s.requests, `${st}: status counts vs requests`);
      if (s.requests > 0) near(s.error_pct, (100 * (s.requests - ok)) / s.requests, `${st}: error_pct`);
      assert.equal(s.items_accepted, ok * s.batch, `${st}: only 2xx items count`);
      near(s.accepted_items_per_s, s.achieved_rps * s.batch, `${st}: accepted items/s vs achieved req/s`);
      const pass = s.requests > 0 && s.error_pct < maxErr && s.achieved_rps >= minFrac * s.target_rps * (1 - 1e-9);
      assert.equal(s.pass, pass, `${st}: pass flag disagrees with the rule (${JSON.stringify(s)})`);
      assert.equal(s.fail_reason === '', s.pass, `${st}: fail_reason must be empty exactly when passed`);
      if (phase.phase === 'batch') assert.equal(s.target_rps, cfg.batch_rate, `${st}: batch phase rate`);
      if (phase.phase === 'rate') assert.equal(s.batch, winningBatch, `${st}: rate phase must use the winning batch`);
      if (phase.phase === 'fleet') assert.equal(s.batch, cfg.fleet_batch, `${st}: fleet batch`);
      accepted += s.items_accepted;
      if (s.pass) max = Math.max(max, s.accepted_items_per_s);
      if (s.pass && phase.phase === 'fleet') fleetMax = Math.max(fleetMax, s.accepted_items_per_s);
    });
    // Ladders run in order and stop at the first failure; only the rate
    // phase continues, with bisection values inside the bracket.
    const ladder = { batch: cfg.batches, rate: cfg.rates, fleet: cfg.fleet_rates }[phase.phase];
    const valueOf = (s) => (phase.phase === 'batch' ? s.batch : s.target_rps);
    const firstFail = phase.steps.findIndex((s) => !s.pass);
    const ladderSteps = firstFail < 0 ? phase.steps : phase.steps.slice(0, firstFail + 1);
    assert.deepEqual(ladderSteps.map(valueOf), ladder.slice(0, ladderSteps.length), `${at}: ladder order`);
    const rest = phase.steps.slice(ladderSteps.length);
    if (phase.phase !== 'rate' || firstFail <= 0) assert.equal(rest.length, 0, `${at}: steps after the first failure`);
    assert.ok(rest.length <= cfg.bisect_steps, `${at}: too many bisection steps`);
    let lo = firstFail > 0 ? valueOf(phase.steps[firstFail - 1]) : 0, hi = firstFail >= 0 ? valueOf(phase.steps[firstFail]) : 0;
    for (const s of rest) {
      assert.ok(s.target_rps > lo && s.target_rps < hi, `${at}: bisection ${s.target_rps} outside (${lo}, ${hi})`);
      if (s.pass) lo = s.target_rps; else hi = s.target_rps;
    }
    // best: the passing step with the most accepted items/s, earliest on ties.
    let best = -1;
    phase.steps.forEach((s, i) => {
      if (s.pass && (best < 0 || s.accepted_items_per_s > phase.steps[best].accepted_items_per_s)) best = i;
    });
    assert.equal(phase.best, best, `${at}: best`);
    if (phase.phase === 'batch' && best >= 0) winningBatch = phase.steps[best].batch;
  }
  near(sig.max_items_per_s, max, `${where}: max_items_per_s`);
  near(sig.fleet_max_items_per_s, fleetMax, `${where}: fleet_max_items_per_s`);
}
assert.ok(accepted > 0, 'no item was accepted in any step');
console.log(`ok: ${doc.signals.length} signal(s), ${accepted} items accepted`);
