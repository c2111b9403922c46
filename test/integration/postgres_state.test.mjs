// Two Sightline nodes on one PostgreSQL state store (--state postgres://...),
// each with a telemetry data dir of its own, as behind a load balancer. What
// one node (or `sightline token|project --state`) changes, the other honours
// within seconds: a token minted anywhere works on both at once; a revoked
// token gets 401 on both within the token cache's TTL (--auth-cache-ttl-ms);
// a session from a login on one node works on the other, and a logout on
// either ends it on both at once (sessions are not cached); a new admin
// password set through one node ends the admin's sessions on the other and
// only the new password logs in anywhere. Nothing lands in the nodes'
// state.sqlite. The PostgreSQL server is real and the test's own
// (lib/postgres.mjs).

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { BIN, ENGINES, TOKEN, request, sleep, startServer } from './lib/server.mjs';
import { startPostgres } from './lib/postgres.mjs';
import { encodeTraceRequestProto, makeRunTag, makeSpanBatch } from './lib/otlp.mjs';
import { api, login } from './lib/api.mjs';

const TTL_MS = 500;
// Slack for a loaded 2-core box: a revocation must be seen within TTL + this.
const SLACK_MS = 2000;
const PASSWORD_1 = 'first-admin-password-7c1e';
const PASSWORD_2 = 'second-admin-password-93ab';

const runTag = makeRunTag();
let requestNo = 0;

//! Runs `sightline <args>`; resolves {code, stdout, stderr}.
function cli(...args) {
  return new Promise((resolve) => {
    execFile(BIN, args, { timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr });
    });
  });
}

function tokenId(token) {
  return crypto.createHash('sha256').update(token).digest('hex').slice(0, 12);
}

async function ingestStatus(server, token) {
  const body = encodeTraceRequestProto(makeSpanBatch(runTag, ++requestNo, 1));
  const res = await request(`${server.otlpUrl}/v1/traces`, {
    method: 'POST',
    body,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/x-protobuf', 'Content-Length': body.length },
  });
  return res.status;
}

async function apiStatus(server, auth) {
  return (await api(server, 'projects', {}, auth)).status;
}

//! Polls `probe` until it returns `want` or TTL + slack passed since `since`; the last value and the time taken.
async function within(since, want, probe) {
  let got;
  do {
    got = await probe();
    if (got === want) break;
    await sleep(50);
  } while (Date.now() - since < TTL_MS + SLACK_MS);
  return { got, took: Date.now() - since };
}

describe('two nodes sharing one PostgreSQL state store', () => {
  let pg, state, a, b;

  before(async () => {
    pg = await startPostgres();
    state = await pg.createDatabase('sightline');
    const opts = {
      engine: ENGINES[0],
      state,
      args: ['--auth-cache-ttl-ms', String(TTL_MS)],
      env: { SIGHTLINE_ADMIN_PASSWORD: PASSWORD_1 },
    };
    // One after the other: the first migrates and creates the default
    // project; the second must find both (concurrent opens are a unit test).
    a = await startServer(opts);
    b = await startServer(opts);
  });

  after(async () => {
    for (const s of [a, b]) {
      if (!s) continue;
      if (s.alive()) await s.stop();
      await s.cleanup();
    }
    if (pg) await pg.stop();
  });

  it('keeps its state in PostgreSQL, not in the data dirs', async () => {
    assert.notEqual(a.dataDir, b.dataDir);
    for (const s of [a, b]) {
      assert.ok(!fs.existsSync(path.join(s.dataDir, 'state.sqlite')), `${s.dataDir} has a state.sqlite`);
    }
    const version = (await pg.psql('sightline', 'SELECT version FROM schema_version')).trim();
    assert.match(version, /^\d+$/);
    const projects = (await pg.psql('sightline', 'SELECT name FROM projects ORDER BY name')).trim();
    assert.equal(projects, 'default', 'one default project, not one per node');
    // Both nodes take the ingest token set at first start, and each other's read token.
    for (const s of [a, b]) {
      assert.equal(await ingestStatus(s, TOKEN), 200);
      assert.equal(await apiStatus(s, { token: a.readToken }), 200);
      assert.equal(await apiStatus(s, { token: b.readToken }), 200);
    }
  });

  it('a token minted by the CLI works on both nodes; revoked, both refuse it within the TTL', async () => {
    const created = await cli('token', 'create', '--project', 'default', '--state', state);
    assert.equal(created.code, 0, created.stderr);
    const minted = created.stdout.trim();
    assert.match(minted, /^sl_[0-9a-f]{64}$/);
    // Both nodes now hold it in their token cache.
    assert.equal(await ingestStatus(a, minted), 200);
    assert.equal(await ingestStatus(b, minted), 200);

    const listed = await cli('token', 'list', '--project', 'default', '--state', state);
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(listed.stdout.includes(tokenId(minted)), listed.stdout);
    assert.ok(!listed.stdout.includes(minted.slice(3)), 'list never shows a token');

    const revoked = await cli('token', 'revoke', tokenId(minted), '--state', state);
    assert.equal(revoked.code, 0, revoked.stderr);
    const revokedAt = Date.now();
    const [onA, onB] = await Promise.all([
      within(revokedAt, 401, () => ingestStatus(a, minted)),
      within(revokedAt, 401, () => ingestStatus(b, minted)),
    ]);
    assert.equal(onA.got, 401, `node a still accepts the revoked token ${onA.took} ms after revoke`);
    assert.equal(onB.got, 401, `node b still accepts the revoked token ${onB.took} ms after revoke`);
    // The others were not touched.
    assert.equal(await ingestStatus(a, TOKEN), 200);
    assert.equal(await ingestStatus(b, TOKEN), 200);
  });

  it('a read token minted through one node\'s CLI and revoked by SIGHTLINE_STATE is refused by the other', async () => {
    const reader = (await cli('token', 'create', '--project', 'default', '--scope', 'read', '--state', state))
      .stdout.trim();
    assert.equal(await apiStatus(b, { token: reader }), 200);
    const revoked = await new Promise((resolve) => {
      execFile(BIN, ['token', 'revoke', tokenId(reader)], { timeout: 30_000, env: { ...process.env, SIGHTLINE_STATE: state } },
        (err, stdout, stderr) => resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr }));
    });
    assert.equal(revoked.code, 0, revoked.stderr);
    const onB = await within(Date.now(), 401, () => apiStatus(b, { token: reader }));
    assert.equal(onB.got, 401, `node b still reads with the revoked token after ${onB.took} ms`);
  });

  it('a login on one node works on the other; a logout on either ends it on both at once', async () => {
    const session = await login(a, 'admin', PASSWORD_1);
    assert.equal(session.status, 200, JSON.stringify(session.json));
    assert.ok(session.cookie);
    assert.equal(await apiStatus(a, { cookie: session.cookie }), 200);
    assert.equal(await apiStatus(b, { cookie: session.cookie }), 200, 'the session is valid on the other node');

    const out = await api(b, 'logout', {}, { method: 'POST', cookie: session.cookie });
    assert.ok(out.status === 200 || out.status === 204, `logout: ${out.status} ${out.text}`);
    // No cache: the very next call on the other node is refused.
    assert.equal(await apiStatus(a, { cookie: session.cookie }), 401, 'node a after a logout on node b');
    assert.equal(await apiStatus(b, { cookie: session.cookie }), 401);
  });

  it('a new admin password set through one node ends the sessions on the other', async () => {
    const session = await login(b, 'admin', PASSWORD_1);
    assert.equal(session.status, 200);
    assert.equal(await apiStatus(a, { cookie: session.cookie }), 200);

    // Node a restarts with a new SIGHTLINE_ADMIN_PASSWORD, which replaces the
    // admin's password and ends every admin session in the shared store.
    await a.stop();
    a.env = { ...a.env, SIGHTLINE_ADMIN_PASSWORD: PASSWORD_2 };
    await a.restart();
    assert.equal(await apiStatus(b, { cookie: session.cookie }), 401, 'node b after the password change on node a');
    assert.equal((await login(b, 'admin', PASSWORD_1)).status, 401, 'the old password on node b');
    const fresh = await login(b, 'admin', PASSWORD_2);
    assert.equal(fresh.status, 200, 'the new password on node b');
    assert.equal(await apiStatus(a, { cookie: fresh.cookie }), 200);
    // Node a still takes the tokens it had: its restart did not re-add or drop any.
    assert.equal(await ingestStatus(a, TOKEN), 200);
  });

  it('project retention set with --state is listed from the shared store', async () => {
    const set = await cli('project', 'retention', '--project', 'default', '--signal', 'logs', '3d', '--state', state);
    assert.equal(set.code, 0, set.stderr);
    const listed = await cli('project', 'list', '--state', state);
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, /^default\s+-\s+3d\s+-\s*$/m);
    const rows = (await pg.psql('sightline', 'SELECT signal, retention_seconds FROM project_retention')).trim();
    assert.equal(rows, `logs|${3 * 86400}`);
  });
});
