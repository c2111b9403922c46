#!/usr/bin/env node
// A two-shard ClickHouse cluster on loopback for the benchmarks: ZooKeeper and
// two clickhouse-server shards started as the end-to-end tests start them
// (test/integration/lib/clickhouse.mjs), then one command run against them,
// then everything stopped. In the command's arguments {url} becomes shard 1's
// HTTP URL and {cluster} the cluster's name:
//
//   node bench/clickhouse_cluster.mjs build/sightline bench ingest --spawn clickhouse \
//     --clickhouse-url {url} --server-arg=--clickhouse-cluster={cluster} --signal spans --batch 16384
//
// Exits with the command's status.
import { spawn } from 'node:child_process';

import { CLUSTER, startClickHouseCluster } from '../test/integration/lib/clickhouse.mjs';

const args = process.argv.slice(2);
if (args.length === 0) {
  console.error('usage: node bench/clickhouse_cluster.mjs COMMAND [ARGS...]  ({url}, {cluster} are replaced)');
  process.exit(2);
}
const cluster = await startClickHouseCluster();
const url = cluster.urls()[0];
console.log(`clickhouse cluster ${CLUSTER}: shards ${cluster.urls().join(', ')}`);
const argv = args.map((a) => a.replaceAll('{url}', url).replaceAll('{cluster}', CLUSTER));
const code = await new Promise((resolve) => {
  const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit' });
  child.on('exit', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
  child.on('error', (err) => {
    console.error(`${argv[0]}: ${err.message}`);
    resolve(127);
  });
});
await cluster.stop();
process.exit(code);
