// Starts and stops a real two-shard ClickHouse cluster for the end-to-end
// tests: a standalone ZooKeeper (Debian's zookeeper package, run from its jar
// with a config of its own) and two clickhouse-server processes (Debian's
// 18.16), each one shard of CLUSTER, configured as docs/clickhouse-cluster.xml
// describes (remote_servers, zookeeper, distributed_ddl, {shard}/{replica}
// macros). Every process listens on free 127.0.0.1 ports and keeps its files
// in a temp dir; an exit hook kills them if a test process ends without
// calling stop(). A shard can be stopped (SIGTERM) and started again on the
// same ports and data, to test what Sightline does while it is away.
//
// Binaries: $JAVA or /usr/bin/java, $SIGHTLINE_ZOOKEEPER_JAR or
// /usr/share/java/zookeeper.jar, $SIGHTLINE_CLICKHOUSE_SERVER or
// /usr/sbin/clickhouse-server; when one is missing, startCluster() throws, so
// the tests fail rather than skip.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { HOST, freePort, request, sleep } from './server.mjs';

export const CLUSTER = 'sightline_it';

const KEEP = !!process.env.SIGHTLINE_IT_KEEP;
const children = new Set();  // running processes
const dirs = new Set();

process.on('exit', () => {
  for (const c of children) {
    try { c.kill('SIGKILL'); } catch { /* gone */ }
  }
  if (!KEEP) for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

function need(file, what) {
  if (!fs.existsSync(file)) {
    throw new Error(`${what} not found at ${file}: install the Debian packages zookeeper and clickhouse-server `
      + '(third_party/versions.env TEST_APT_PACKAGES, scripts/setup.sh --test)');
  }
  return file;
}

//! A child process with its output in `log`; resolves once spawned.
function launch(cmd, args, log) {
  const fd = fs.openSync(log, 'a');
  const child = spawn(cmd, args, { stdio: ['ignore', fd, fd] });
  fs.closeSync(fd);
  children.add(child);
  const exited = new Promise((resolve) => child.on('exit', (code, signal) => {
    children.delete(child);
    resolve({ code, signal });
  }));
  child.on('error', () => { /* seen as an exit */ });
  return { child, exited };
}

async function terminate(proc, timeoutMs = 20_000) {
  if (!proc || !children.has(proc.child)) return;
  proc.child.kill('SIGTERM');
  const timer = setTimeout(() => proc.child.kill('SIGKILL'), timeoutMs);
  await proc.exited;
  clearTimeout(timer);
}

//! Whether ZooKeeper answers its "srvr" four-letter command.
function zooKeeperAnswers(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: HOST, port }, () => s.write('srvr'));
    let data = '';
    s.setTimeout(1000, () => s.destroy());
    s.on('data', (d) => { data += d; });
    s.on('close', () => resolve(data.includes('Zookeeper version')));
    s.on('error', () => resolve(false));
  });
}

class Shard {
  constructor(cluster, index) {
    this.cluster = cluster;
    this.index = index;                       // 0-based; macro shard = index + 1
    this.dir = path.join(cluster.dir, `shard${index + 1}`);
    this.proc = null;
  }

  get url() { return `http://${HOST}:${this.http}`; }

  async allocatePorts() {
    this.http = await freePort();
    this.tcp = await freePort();
    this.interserver = await freePort();
  }

  writeConfig() {
    const d = this.dir;
    const shards = this.cluster.shards.map((s) => '<shard><internal_replication>true</internal_replication>'
      + `<replica><host>${HOST}</host><port>${s.tcp}</port></replica></shard>`).join('');
    fs.mkdirSync(d, { recursive: true });
    fs.writeFileSync(path.join(d, 'config.xml'), `<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>${d}/server.log</log><errorlog>${d}/error.log</errorlog><console>0</console></logger>
  <http_port>${this.http}</http_port>
  <tcp_port>${this.tcp}</tcp_port>
  <interserver_http_port>${this.interserver}</interserver_http_port>
  <interserver_http_host>${HOST}</interserver_http_host>
  <listen_host>${HOST}</listen_host>
  <path>${d}/data/</path>
  <tmp_path>${d}/tmp/</tmp_path>
  <user_files_path>${d}/user_files/</user_files_path>
  <format_schema_path>${d}/format_schemas/</format_schema_path>
  <users_config>${d}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <remote_servers><${CLUSTER}>${shards}</${CLUSTER}></remote_servers>
  <zookeeper><node><host>${HOST}</host><port>${this.cluster.zkPort}</port></node><session_timeout_ms>30000</session_timeout_ms></zookeeper>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
  <macros><shard>${this.index + 1}</shard><replica>replica${this.index + 1}</replica></macros>
</yandex>
`);
    fs.writeFileSync(path.join(d, 'users.xml'), `<?xml version="1.0"?>
<yandex>
  <profiles><default></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
`);
  }

  //! Starts the server (again, on the same ports and data) and waits until it answers.
  async start() {
    this.proc = launch(this.cluster.server, [`--config-file=${path.join(this.dir, 'config.xml')}`],
      path.join(this.dir, 'stdout.log'));
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      if (!children.has(this.proc.child)) throw new Error(`clickhouse shard ${this.index + 1} exited at start:\n${this.logTail()}`);
      try {
        if ((await this.query('SELECT 1')).trim() === '1') return;
      } catch { /* not up yet */ }
      await sleep(100);
    }
    throw new Error(`clickhouse shard ${this.index + 1} did not answer within 60 s:\n${this.logTail()}`);
  }

  //! SIGTERM, and waits for the exit.
  async stop() {
    await terminate(this.proc);
    this.proc = null;
  }

  alive() { return this.proc !== null && children.has(this.proc.child); }

  //! One statement over HTTP; resolves the answer text, rejects on an error status.
  async query(sql, database = 'default') {
    const res = await request(`${this.url}/?database=${encodeURIComponent(database)}`, {
      method: 'POST', body: sql, timeoutMs: 30_000,
    });
    if (res.status !== 200) throw new Error(`clickhouse ${res.status}: ${res.body.toString().slice(0, 500)}`);
    return res.body.toString();
  }

  logTail(bytes = 3000) {
    for (const f of ['error.log', 'stdout.log']) {
      try {
        const buf = fs.readFileSync(path.join(this.dir, f));
        if (buf.length) return buf.subarray(Math.max(0, buf.length - bytes)).toString();
      } catch { /* next */ }
    }
    return '(no log)';
  }
}

export class ClickHouseCluster {
  constructor(dir) {
    this.dir = dir;
    this.java = process.env.JAVA || '/usr/bin/java';
    this.jar = process.env.SIGHTLINE_ZOOKEEPER_JAR || '/usr/share/java/zookeeper.jar';
    this.server = process.env.SIGHTLINE_CLICKHOUSE_SERVER || '/usr/sbin/clickhouse-server';
    this.shards = [new Shard(this, 0), new Shard(this, 1)];
    this.zk = null;
  }

  async start() {
    need(this.java, 'java');
    need(this.jar, 'the ZooKeeper jar');
    need(this.server, 'clickhouse-server');
    this.zkPort = await freePort();
    const zkDir = path.join(this.dir, 'zookeeper');
    fs.mkdirSync(zkDir, { recursive: true });
    fs.writeFileSync(path.join(zkDir, 'zoo.cfg'), [
      'tickTime=500', 'initLimit=10', 'syncLimit=5', `dataDir=${zkDir}/data`, `clientPort=${this.zkPort}`,
      `clientPortAddress=${HOST}`, 'admin.enableServer=false', 'maxClientCnxns=0', '4lw.commands.whitelist=srvr', '',
    ].join('\n'));
    this.zk = launch(this.java, ['-Xmx256m', '-cp', this.jar, 'org.apache.zookeeper.server.ZooKeeperServerMain',
      path.join(zkDir, 'zoo.cfg')], path.join(zkDir, 'zookeeper.log'));
    const deadline = Date.now() + 60_000;
    while (!(await zooKeeperAnswers(this.zkPort))) {
      if (!children.has(this.zk.child)) throw new Error('zookeeper exited at start; see ' + path.join(zkDir, 'zookeeper.log'));
      if (Date.now() > deadline) throw new Error('zookeeper did not answer within 60 s');
      await sleep(100);
    }
    for (const s of this.shards) await s.allocatePorts();
    for (const s of this.shards) s.writeConfig();
    await Promise.all(this.shards.map((s) => s.start()));
    return this;
  }

  urls() { return this.shards.map((s) => s.url); }

  //! Stops every process and removes the temp dir (unless SIGHTLINE_IT_KEEP).
  async stop() {
    for (const s of this.shards) await s.stop();
    await terminate(this.zk);
    this.zk = null;
    if (KEEP) console.log(`# kept ${this.dir}`);
    else {
      await fsp.rm(this.dir, { recursive: true, force: true });
      dirs.delete(this.dir);
    }
  }
}

//! ZooKeeper and a two-shard ClickHouse cluster in a fresh temp dir, started.
export async function startClickHouseCluster() {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'sightline-it-ch-'));
  dirs.add(dir);
  const cluster = new ClickHouseCluster(dir);
  try {
    await cluster.start();
  } catch (err) {
    await cluster.stop().catch(() => {});
    throw err;
  }
  return cluster;
}
