#!/usr/bin/env bash
# ctest's live check of `sightline bench ingest --protocol grpc`: a few
# requests of each signal over OTLP/gRPC to a spawned DuckDB server; every
# request must be answered OK and every item counted by the server.
# Usage: ingest_grpc_smoke.sh path/to/sightline
set -euo pipefail
bin="$1"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$bin" bench ingest --spawn duckdb --protocol grpc --signal all --batch 100 --requests 30 --warmup 0 \
    --work-dir "$out" --json-out "$out/r.json"
node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
if (r.config.protocol !== "grpc") throw new Error(`protocol ${r.config.protocol}`);
for (const [name, s] of Object.entries(r.runs[0].signals)) {
  if (s.requests === 0 || s.ok_requests !== s.requests) throw new Error(`${name}: ${JSON.stringify(s.status_counts)}`);
  if (s.server_rows_added !== s.items_accepted) {
    throw new Error(`${name}: server added ${s.server_rows_added} rows for ${s.items_accepted} accepted items`);
  }
}
console.log("bench ingest over OTLP/gRPC: every request OK, every item stored");
' "$out/r.json"
