#!/usr/bin/env bash
# `make bench` (quick) and `make bench-full`: the benchmark suite end to end,
# then one report.
#
#   scripts/bench.sh quick   # all signals, both embedded engines, read levels to 10M (~16 min here)
#   scripts/bench.sh full    # the ladders to 100M and 1B, full-length steps (hours; never in CI)
#
# Every run writes its raw JSON under bench/results/<profile>-<UTC time>/ and
# `sightline bench report` turns them into REPORT.md + SVG charts there.
# Copy the tables you keep into docs/BENCHMARKS.md with the machine they ran
# on. Environment: ENGINES (default "duckdb sqlite clickhouse": the last on a clickhouse-server the bench starts), SIGNALS (default "all").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
profile="${1:-quick}"
bin=build/sightline
[[ -x "$bin" ]] || { echo "missing $bin (make build)" >&2; exit 1; }
engines=${ENGINES:-duckdb sqlite clickhouse}
signals=${SIGNALS:-all}
out="bench/results/$profile-$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$out"

case "$profile" in
  quick)
    ingest_duration=10; ingest_repeat=1
    # 4 s steps: a DuckDB checkpoint stalls one commit for up to ~1 s, which
    # would fail a 2 s step at any rate; rates to 48 req/s reach past 500k
    # metric points/s at batch 16384.
    ramp_args=(--step-duration 4 --warmup 1 --batches 100,1000,16384 --rates 1,2,4,8,16,25,32,48 --bisect-steps 2
               --fleet-rates 100,200,400,800,1200,1600,2400)
    probe_args=(--levels 1M,10M)
    oltp_args=(--rows 1000000 --phase-seconds 3)
    ;;
  full)
    ingest_duration=30; ingest_repeat=3
    ramp_args=()
    probe_args=(--levels 1M,10M,100M,1B --repeat 1)
    oltp_args=()
    ;;
  *) echo "usage: $0 quick|full" >&2; exit 1 ;;
esac

log() { echo "[$(date -u +%T)] $*"; }
log "profile $profile -> $out (engines: $engines; signals: $signals)"
for engine in $engines; do
  # Ours vs the raw engine on the same rows, at the two batch sizes the issue names.
  for batch in 16384 100; do
    log "ingest $engine $signals batch $batch"
    "$bin" bench ingest --spawn "$engine" --signal "$signals" --batch "$batch" --duration "$ingest_duration" \
      --repeat "$ingest_repeat" --raw --json-out "$out/ingest-$engine-$batch.json"
  done
  log "ramp $engine"
  "$bin" bench ramp --spawn "$engine" --signal "$signals" "${ramp_args[@]}" --json-out "$out/ramp-$engine.json"
  log "probe $engine"
  "$bin" bench probe --spawn "$engine" --signal "$signals" "${probe_args[@]}" --json-out "$out/probe-$engine.json" ||
    log "probe $engine: exit $? (a failing level is a result, not an error; see the JSON)"
done
if [[ " $engines " == *" clickhouse "* ]]; then
  # The same on a two-shard ClickHouse cluster (ZooKeeper + two servers on
  # loopback, bench/clickhouse_cluster.mjs), a fresh one per command.
  cluster=(node bench/clickhouse_cluster.mjs "$bin")
  on_cluster=(--spawn clickhouse --clickhouse-url {url} --server-arg=--clickhouse-cluster={cluster})
  for batch in 16384 100; do
    log "ingest clickhouse-cluster $signals batch $batch"
    "${cluster[@]}" bench ingest "${on_cluster[@]}" --signal "$signals" --batch "$batch" \
      --duration "$ingest_duration" --repeat "$ingest_repeat" --raw --json-out "$out/ingest-clickhouse-cluster-$batch.json"
  done
  log "probe clickhouse-cluster"
  "${cluster[@]}" bench probe "${on_cluster[@]}" --signal "$signals" "${probe_args[@]}" \
    --json-out "$out/probe-clickhouse-cluster.json" || log "probe clickhouse-cluster: exit $?"
fi
log "oltp (SQLite, production pragmas)"
"$bin" bench oltp "${oltp_args[@]}" --json-out "$out/oltp.json"
log "report"
"$bin" bench report "$out"/*.json --out "$out"
log "done: $out/REPORT.md"
