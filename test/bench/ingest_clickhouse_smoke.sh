#!/usr/bin/env bash
# ctest's live check of `sightline bench ingest --spawn clickhouse --raw`: the
# bench starts its own clickhouse-server, a Sightline on it, sends a few
# requests of each signal, then times ClickHouse's raw insert of the same
# rows. Every request must be answered OK, every item counted by the server,
# and the raw engine must have inserted as many rows.
# Usage: ingest_clickhouse_smoke.sh path/to/sightline
set -euo pipefail
bin="$1"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
"$bin" bench ingest --spawn clickhouse --raw --signal all --batch 100 --requests 30 --warmup 0 \
    --work-dir "$out" --json-out "$out/r.json"
node -e '
const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
const run = r.runs[0];
if (run.raw_error) throw new Error(`raw: ${run.raw_error}`);
for (const [name, s] of Object.entries(run.signals)) {
  if (s.requests === 0 || s.ok_requests !== s.requests) throw new Error(`${name}: ${JSON.stringify(s.status_counts)}`);
  if (s.server_rows_added !== s.items_accepted) {
    throw new Error(`${name}: server added ${s.server_rows_added} rows for ${s.items_accepted} accepted items`);
  }
  if (!s.raw || s.raw.rows !== s.items_accepted || !(s.raw.items_per_s > 0)) {
    throw new Error(`${name}: raw ClickHouse inserted ${JSON.stringify(s.raw)} for ${s.items_accepted} items`);
  }
}
console.log("bench ingest on ClickHouse: every request OK, every item stored, the raw insert timed");
' "$out/r.json"
