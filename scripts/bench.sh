#!/usr/bin/env bash
# `make bench` (quick) and `make bench-full`: ingest throughput per signal and
# engine at batch 16384 and 100 (ours vs the raw engine, medians of 3), then
# the dashboard read latencies. Results go to bench/results/; copy the tables
# you keep into docs/BENCHMARKS.md with the machine they ran on.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
profile="${1:-quick}"
out="bench/results"
mkdir -p "$out"
bin=build/sightline
duration=10
levels="1000000"
if [[ "$profile" == "full" ]]; then
  duration=30
  levels="1000000 10000000 100000000"
fi
for engine in duckdb sqlite; do
  for signal in spans logs metrics; do
    for batch in 16384 100; do
      echo "=== ingest $engine $signal batch $batch"
      "$bin" bench ingest --spawn "$engine" --signal "$signal" --batch "$batch" --duration "$duration" \
        --raw --repeat 3 --json-out "$out/$engine-$signal-$batch.json"
    done
  done
done
for rows in $levels; do
  for engine in duckdb sqlite; do
    echo "=== dashboards $engine $rows"
    bench/dashboards.sh "$engine" "$rows"
  done
done
