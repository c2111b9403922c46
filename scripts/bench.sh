#!/usr/bin/env bash
# `make bench` (quick) and `make bench-full`: the benchmark suite end to end,
# then one report.
#
#   scripts/bench.sh quick   # all signals, both embedded engines, read levels to 10M (~16 min here)
#   scripts/bench.sh full    # the ladders to 100M and 1B, full-length steps (hours; never in CI)
#
# full: DuckDB's read ladder (1M,10M,100M,1B per signal, --check) runs level by
# level on a kept data directory (probe --keep-data / --resume): before each
# level it estimates the disk the level needs (the previous level's bytes per
# row x the level's rows, +20%) and stops the signal's ladder at the largest
# level that fits, saying so. Run it again with the same FULL_WORK to resume
# where it stopped (Ctrl-C stops resumably). Environment for full:
# FULL_WORK (kept data, default bench/results/full-work), FULL_LEVELS
# (default 1M,10M,100M,1B), STEPS (default "ingest ramp probe oltp"),
# FREE_BYTES (pretend this much disk is free; for tests).
#
# Every run writes its raw JSON under bench/results/<profile>-<UTC time>/ and
# `sightline bench report` turns them into REPORT.md + SVG charts there.
# Copy the tables you keep into docs/BENCHMARKS.md with the machine they ran
# on. Environment: ENGINES (default "duckdb sqlite clickhouse": the last on a clickhouse-server the bench starts), SIGNALS (default "all").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
profile="${1:-quick}"
bin=${SIGHTLINE_BIN:-build/sightline}
[[ -x "$bin" ]] || { echo "missing $bin (make build)" >&2; exit 1; }
engines=${ENGINES:-duckdb sqlite clickhouse}
signals=${SIGNALS:-all}
steps=" ${STEPS:-ingest ramp probe oltp} "
out="${BENCH_OUT:-bench/results/$profile-$(date -u +%Y%m%dT%H%M%SZ)}"
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

# A JSON value by a JavaScript expression over `j` (node is the integration tests' runtime).
json_get() { node -e 'const j = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); const v = ('"$2"'); console.log(v ?? "")' "$1"; }

# Rows of a level such as 10M or 1B.
level_rows() {
  local n=${1%[kKmMbBgG]} m=1
  case "$1" in *[kK]) m=1000 ;; *[mM]) m=1000000 ;; *[bBgG]) m=1000000000 ;; esac
  echo $((n * m))
}

# full: one signal's DuckDB ladder, level by level, resumable and disk-checked.
full_ladder() {
  local sig=$1 levels=${FULL_LEVELS:-1M,10M,100M,1B} work=${FULL_WORK:-$root/bench/results/full-work}
  mkdir -p "$work"
  local kept_file="$work/$sig.kept" kept="" prev_json=""
  [[ -f "$kept_file" ]] && kept=$(cat "$kept_file")
  local common=(--spawn duckdb --signal "$sig" --levels "$levels" --check)
  for level in ${levels//,/ }; do
    local rows; rows=$(level_rows "$level")
    local json="$out/probe-duckdb-$sig-$level.json"
    if [[ -n "$kept" && -f "$kept/probe_state.json" ]]; then
      local probed; probed=$(json_get "$kept/probe_state.json" 'j.probed_rows')
      if ((probed >= rows)); then log "probe duckdb $sig $level: probed before (in $kept)"; continue; fi
    fi
    # The disk this level still needs: bytes per row as last measured (the
    # larger of the signal's own and the whole database's) x its rows, +20%.
    local last_json; last_json=$(ls -t "$work"/"$sig"-*.json 2>/dev/null | head -1 || true)
    # Before any measurement: 512 B/row, above every signal's at 1M (docs/BENCHMARKS.md).
    local per_row=512 used=0 free need
    if [[ -n "$last_json" ]]; then
      per_row=$(json_get "$last_json" 'Math.max(...j.runs[0].signals[0].levels.map((l) => Math.max(l.bytes_per_row ?? 0, (l.database_bytes + l.wal_bytes) / l.accepted_rows))).toFixed(1)')
    fi
    [[ -n "$kept" ]] && used=$(du -sb "$kept" | cut -f1)
    free=${FREE_BYTES:-$(df -B1 --output=avail "$work" | tail -1)}
    # Plus the server's --min-free-disk (512 MiB), below which it refuses ingest.
    need=$(node -e "console.log(Math.max(0, Math.ceil($per_row * $rows * 1.2 - $used + 512 * 2 ** 20)))")
    if ((need > free)); then
      log "probe duckdb $sig: level $level needs ~$((need >> 20)) MiB more at $per_row B/row, $((free >> 20)) MiB free: the $sig ladder stops at the largest level that fits, the one before"
      break
    fi
    log "probe duckdb $sig $level: ~$((need >> 20)) MiB needed at $per_row B/row, $((free >> 20)) MiB free"
    local rc=0
    if [[ -z "$kept" ]]; then
      "$bin" bench probe "${common[@]}" --keep-data --work-dir "$work" --stop-after "$level" --json-out "$json" |
        tee "$work/$sig.log" || rc=$?
      kept=$(sed -n 's/^data kept in //p' "$work/$sig.log" | tail -1)
      [[ -n "$kept" ]] && echo "$kept" > "$kept_file"
    else
      "$bin" bench probe "${common[@]}" --resume "$kept" --stop-after "$level" --json-out "$json" || rc=$?
    fi
    [[ -f "$json" ]] && cp "$json" "$work/$sig-$(printf %013d "$rows").json"
    if ((rc == 130)); then log "probe duckdb $sig: stopped; run again with FULL_WORK=$work to resume"; exit 130; fi
    if ((rc != 0)); then log "probe duckdb $sig $level: exit $rc (see $json)"; break; fi
    if [[ "$(json_get "$json" 'j.runs[0].signals[0].levels.every((l) => l.pass)')" != true ]]; then
      log "probe duckdb $sig $level: failed (the read cliff is below it); the ladder stops"
      break
    fi
  done
}
log "profile $profile -> $out (engines: $engines; signals: $signals)"
for engine in $engines; do
  # Ours vs the raw engine on the same rows, at the two batch sizes the issue names.
  [[ "$steps" == *" ingest "* ]] && for batch in 16384 100; do
    log "ingest $engine $signals batch $batch"
    "$bin" bench ingest --spawn "$engine" --signal "$signals" --batch "$batch" --duration "$ingest_duration" \
      --repeat "$ingest_repeat" --raw --json-out "$out/ingest-$engine-$batch.json"
  done
  [[ "$steps" == *" ramp "* ]] && log "ramp $engine" && "$bin" bench ramp --spawn "$engine" --signal "$signals" "${ramp_args[@]}" --json-out "$out/ramp-$engine.json"
  [[ "$steps" == *" probe "* ]] || continue
  if [[ "$profile" == full && "$engine" == duckdb ]]; then
    for sig in $([[ "$signals" == all ]] && echo spans logs metrics || echo "$signals"); do full_ladder "$sig"; done
    continue
  fi
  log "probe $engine"
  "$bin" bench probe --spawn "$engine" --signal "$signals" "${probe_args[@]}" --json-out "$out/probe-$engine.json" ||
    log "probe $engine: exit $? (a failing level is a result, not an error; see the JSON)"
done
if [[ " $engines " == *" clickhouse "* && "$steps" == *" ingest "* ]]; then
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
if [[ "$steps" == *" oltp "* ]]; then
  log "oltp (SQLite, production pragmas)"
  "$bin" bench oltp "${oltp_args[@]}" --json-out "$out/oltp.json"
fi
log "report"
"$bin" bench report "$out"/*.json --out "$out"
log "done: $out/REPORT.md"
