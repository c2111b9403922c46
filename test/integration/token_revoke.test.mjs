// Token lifecycle on a running server: a token minted with `sightline token
// create` while the server runs works at once, an ingest token on OTLP ingest
// and a read token on the query API, and neither on the other (403);
// `sightline token list` names it by id and scope without showing it; after
// `sightline token revoke` it gets 401 on both within the token cache's TTL
// (--auth-cache-ttl-ms), while other tokens keep working; a read token of one
// project gets the same 404 for another project whether that one exists or
// not; and a revoked SIGHTLINE_INGEST_TOKEN stays revoked across a restart
// that still sets it.
// Auth does not depend on the telemetry engine, so one engine is enough.

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';

import { BIN, ENGINES, TOKEN, request, sleep, startServer } from './lib/server.mjs';
import { encodeTraceRequestProto, makeRunTag, makeSpanBatch } from './lib/otlp.mjs';
import { api } from './lib/api.mjs';

const TTL_MS = 300;
// Slack for a loaded 2-core box: the revocation must be seen within TTL + this.
const SLACK_MS = 2000;

const runTag = makeRunTag();
let requestNo = 0;

//! Runs `sightline token ...`; resolves {code, stdout, stderr}.
function tokenCli(...args) {
  return new Promise((resolve) => {
    execFile(BIN, ['token', ...args], { timeout: 30_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr });
    });
  });
}

//! The id `token list` prints for a token: the start of its SHA-256, independently computed.
function tokenId(token) {
  return crypto.createHash('sha256').update(token).digest('hex').slice(0, 12);
}

//! Status of one OTLP/HTTP trace export with the token.
async function ingestStatus(server, token) {
  const body = encodeTraceRequestProto(makeSpanBatch(runTag, ++requestNo, 1));
  const res = await request(`${server.otlpUrl}/v1/traces`, {
    method: 'POST',
    body,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/x-protobuf', 'Content-Length': body.length },
  });
  return res.status;
}

async function apiStatus(server, token, project = 'default') {
  return (await api(server, 'services', { project }, { token })).status;
}

//! Parses `token list` output into [{id, scope, created}].
function parseList(stdout) {
  const lines = stdout.trim().split('\n');
  assert.match(lines[0], /^ID\s+SCOPE\s+CREATED \(UTC\)$/);
  return lines.slice(1).map((l) => {
    const [id, scope, created] = l.trim().split(/\s+/);
    return { id, scope, created };
  });
}

describe('token create, list and revoke on a running server', () => {
  let server;

  before(async () => {
    server = await startServer({ engine: ENGINES[0], args: ['--auth-cache-ttl-ms', String(TTL_MS)] });
  });

  after(async () => {
    if (server) {
      if (server.alive()) await server.stop();
      await server.cleanup();
    }
  });

  it('a minted token works at once; a revoked one gets 401 within the TTL', async () => {
    const created = await tokenCli('create', '--project', 'default', '--data', server.dataDir);
    assert.equal(created.code, 0, created.stderr);
    const minted = created.stdout.trim();
    assert.match(minted, /^sl_[0-9a-f]{64}$/);

    assert.equal(await ingestStatus(server, minted), 200, 'ingest with the token minted while running');
    assert.equal(await apiStatus(server, minted), 403, 'an ingest token cannot read the API');
    const reader = (await tokenCli('create', '--project', 'default', '--scope', 'read', '--data', server.dataDir))
      .stdout.trim();
    assert.match(reader, /^sl_[0-9a-f]{64}$/);
    assert.equal(await apiStatus(server, reader), 200, 'API with the read token minted while running');
    assert.equal(await ingestStatus(server, reader), 403, 'a read token cannot send');

    const listed = await tokenCli('list', '--project', 'default', '--data', server.dataDir);
    assert.equal(listed.code, 0, listed.stderr);
    assert.ok(!listed.stdout.includes(minted.slice(3)), 'list never shows a token');
    const rows = parseList(listed.stdout);
    assert.deepEqual(rows.map((r) => `${r.id} ${r.scope}`).sort(), [
      `${tokenId(TOKEN)} ingest`, `${tokenId(server.readToken)} read`, `${tokenId(minted)} ingest`,
      `${tokenId(reader)} read`].sort());
    for (const r of rows) {
      const age = Date.now() - Date.parse(r.created);
      assert.ok(r.created.endsWith('Z') && age >= -5_000 && age < 600_000, `created ${r.created}`);
    }

    const revoked = await tokenCli('revoke', tokenId(minted), '--data', server.dataDir);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, new RegExp(`revoked token ${tokenId(minted)} of project 'default'`));
    const revokedAt = Date.now();

    assert.equal((await tokenCli('revoke', tokenId(reader), '--data', server.dataDir)).code, 0);
    // Both paths must refuse them by TTL + slack; poll until they do.
    let ingest, query;
    do {
      ingest = await ingestStatus(server, minted);
      query = await apiStatus(server, reader);
      if (ingest === 401 && query === 401) break;
      await sleep(50);
    } while (Date.now() - revokedAt < TTL_MS + SLACK_MS);
    const took = Date.now() - revokedAt;
    assert.equal(ingest, 401, `ingest still accepts the revoked token ${took} ms after revoke`);
    assert.equal(query, 401, `API still accepts the revoked read token ${took} ms after revoke`);
    // And they stay refused.
    await sleep(TTL_MS + 50);
    assert.equal(await ingestStatus(server, minted), 401);
    assert.equal(await apiStatus(server, minted), 401);
    assert.equal(await apiStatus(server, reader), 401);

    // The other tokens of the project were not touched.
    assert.equal(await ingestStatus(server, TOKEN), 200);
    assert.equal(await apiStatus(server, server.readToken), 200);
    const after = parseList((await tokenCli('list', '--project', 'default', '--data', server.dataDir)).stdout);
    assert.deepEqual(after.map((r) => r.id).sort(), [tokenId(TOKEN), tokenId(server.readToken)].sort());
  });

  it('tokens of another project are scoped to it and revoked alone', async () => {
    const created = await tokenCli('create', '--project', 'shop', '--data', server.dataDir);
    assert.equal(created.code, 0, created.stderr);
    const shop = created.stdout.trim();
    assert.equal(await ingestStatus(server, shop), 200);
    const shopReader = (await tokenCli('create', '--project', 'shop', '--scope', 'read', '--data', server.dataDir))
      .stdout.trim();
    const projects = await api(server, 'projects', {}, { token: shopReader });
    assert.equal(projects.status, 200);
    assert.deepEqual(projects.json.projects.map((p) => p.name), ['shop']);
    // Another project that exists and one that does not get the same answer:
    // a token cannot tell which projects exist.
    const existing = await api(server, 'services', { project: 'default' }, { token: shopReader });
    const missing = await api(server, 'services', { project: 'no-such-project' }, { token: shopReader });
    assert.equal(existing.status, 404, 'a shop token reads no other project');
    assert.equal(missing.status, 404);
    assert.equal(existing.text.replace('default', 'P'), missing.text.replace('no-such-project', 'P'),
      'the same answer whether the other project exists or not');

    const bad = await tokenCli('revoke', 'not-an-id', '--data', server.dataDir);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /INVALID_ARGUMENT/);
    const unknown = await tokenCli('revoke', '0123456789ab', '--data', server.dataDir);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /NOT_FOUND/);
    const noProject = await tokenCli('list', '--project', 'no-such-project', '--data', server.dataDir);
    assert.equal(noProject.code, 1);
    assert.match(noProject.stderr, /no project 'no-such-project'/);

    assert.equal((await tokenCli('revoke', tokenId(shop), '--data', server.dataDir)).code, 0);
    await sleep(TTL_MS + 100);
    assert.equal(await ingestStatus(server, shop), 401);
    assert.equal(await apiStatus(server, shop, 'shop'), 401);
    assert.equal(await apiStatus(server, shopReader, 'shop'), 200, 'the read token was not revoked');
    assert.equal(await ingestStatus(server, TOKEN), 200);
  });

  it('a revoked SIGHTLINE_INGEST_TOKEN stays revoked after a restart that still sets it', async () => {
    const revoked = await tokenCli('revoke', tokenId(TOKEN), '--data', server.dataDir);
    assert.equal(revoked.code, 0, revoked.stderr);
    await server.stop();
    await server.restart();  // SIGHTLINE_INGEST_TOKEN=TOKEN again
    assert.equal(await ingestStatus(server, TOKEN), 401);
    assert.equal(await apiStatus(server, TOKEN), 401);
    assert.match(server.logTail(), /SIGHTLINE_INGEST_TOKEN ignored/);
    const listed = await tokenCli('list', '--project', 'default', '--data', server.dataDir);
    assert.deepEqual(parseList(listed.stdout).map((r) => r.id), [tokenId(server.readToken)], 'no token came back');
  });
});
