#!/usr/bin/env bash
# ctest's live check of `sightline bench ramp`: a short ramp of logs against
# a spawned SQLite server (well under a minute), then the JSON validated by
# check_ramp_json.mjs. Usage: ramp_smoke.sh path/to/sightline
set -euo pipefail
bin="$1"
here="$(cd "$(dirname "$0")" && pwd)"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$bin" bench ramp --spawn sqlite --signal logs --step-duration 1 --rates 1,2 --fleet-rates 20,40 \
    --batches 100,1000 --work-dir "$out" --json-out "$out/r.json"
node "$here/check_ramp_json.mjs" "$out/r.json" logs
