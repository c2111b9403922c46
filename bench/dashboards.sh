#!/usr/bin/env bash
# Dashboard read latency at scale.
#
#   bench/dashboards.sh ENGINE ROWS        # ENGINE: duckdb | sqlite; ROWS per signal, e.g. 1000000
#
# For ENGINE and ROWS: a fresh data dir; `sightline serve` ingests one small real
# OTLP/JSON request per signal (project "default" = id 1, real schema, a real
# metric series) and is stopped with SIGTERM; then ROWS spans, ROWS logs and
# ROWS metric points (over 200 synthetic series) are bulk-filled with SQL
# (DuckDB: `sightline sql ... FROM range(N)`; SQLite: the sqlite3 CLI with
# generate_series, 1M-row transactions), spread uniformly over the last 24 h.
# The server is restarted on that data and each dashboard call is timed 3 times
# with curl over the same 24 h (page size 50); medians, min and max go to a
# Markdown table on stdout and to bench/results/dashboards-ENGINE-ROWS.md.
#
# The synthetic values come from a deterministic hash of the row number, so both
# engines hold the same data at the same ROWS.
#
# Environment: WORK_DIR (default /tmp/sl-dash-ENGINE-ROWS; deleted at the end
# unless KEEP_DATA=1), REPEAT (3), QUERY_TIMEOUT_MS (60000).
set -euo pipefail

ENGINE=${1:?usage: $0 duckdb|sqlite ROWS}
ROWS=${2:?usage: $0 duckdb|sqlite ROWS}
case "$ENGINE" in duckdb | sqlite) ;; *) echo "engine must be duckdb or sqlite" >&2; exit 1 ;; esac
[[ "$ROWS" =~ ^[0-9]+$ ]] && ((ROWS >= 1000)) || { echo "ROWS must be an integer >= 1000" >&2; exit 1; }

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/build/sightline
RESULTS=$ROOT/bench/results
WORK=${WORK_DIR:-/tmp/sl-dash-$ENGINE-$ROWS}
DATA=$WORK/data
REPEAT=${REPEAT:-3}
QUERY_TIMEOUT_MS=${QUERY_TIMEOUT_MS:-60000}
CURL_TIMEOUT=$((QUERY_TIMEOUT_MS / 1000 + 5))
export SIGHTLINE_INGEST_TOKEN="dash-bench-$$-$RANDOM"
OUT=$RESULTS/dashboards-$ENGINE-$ROWS.md
mkdir -p "$RESULTS"

[[ -x "$BIN" ]] || { echo "missing $BIN (build first)" >&2; exit 1; }
if [[ $ENGINE == sqlite ]]; then command -v sqlite3 >/dev/null || { echo "needs the sqlite3 CLI (apt-get install -y sqlite3)" >&2; exit 1; }; fi

rm -rf "$WORK"
mkdir -p "$DATA"
SERVER_PID=""
cleanup() {
  if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -TERM "$SERVER_PID"; wait "$SERVER_PID" || true; fi
  if [[ "${KEEP_DATA:-0}" != 1 ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

log() { echo "[$(date +%T)] $*" >&2; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
OTLP_PORT=$(free_port)
API_PORT=$(free_port)
API=http://127.0.0.1:$API_PORT
AUTH="Authorization: Bearer $SIGHTLINE_INGEST_TOKEN"

start_server() {
  "$BIN" serve --storage "$ENGINE" --data "$DATA" --otlp-http "127.0.0.1:$OTLP_PORT" --listen "127.0.0.1:$API_PORT" \
    --query-timeout-ms "$QUERY_TIMEOUT_MS" >"$WORK/server-$1.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 600); do
    if curl -fsS -o /dev/null "$API/readyz" 2>/dev/null; then return 0; fi
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server-$1.log" >&2; echo "server died" >&2; exit 1; }
    sleep 0.2
  done
  echo "server not ready after 120 s" >&2; exit 1
}
stop_server() {
  kill -TERM "$SERVER_PID"
  wait "$SERVER_PID" || { echo "server exited non-zero" >&2; cat "$WORK/server-$1.log" >&2; exit 1; }
  SERVER_PID=""
}

# ------------------------------------------------------------------ time base
# Data lies in [FROM, TO - 2 min); the queries ask for exactly [FROM, TO) = 24 h.
TO_MS=$(($(date +%s%3N) + 60000))
FROM_MS=$((TO_MS - 86400000))
T0=$((FROM_MS * 1000000))
SPAN_NS=$(((86400000 - 120000) * 1000000))
STEP_S=$((SPAN_NS / ROWS))            # ns between consecutive spans / logs
NPTS_PER_SERIES=$((ROWS / 200))
STEP_M=$((SPAN_NS / NPTS_PER_SERIES)) # ns between points of one metric series

# --------------------------------------------------- 1. real OTLP/JSON ingest
log "$ENGINE $ROWS: seeding $DATA with one OTLP/JSON request per signal"
start_server seed
NOW_NS=$(date +%s%N)
post() {
  local code
  code=$(curl -sS -o "$WORK/post.out" -w '%{http_code}' -X POST -H "$AUTH" -H 'Content-Type: application/json' \
    --data-binary "$2" "http://127.0.0.1:$OTLP_PORT/v1/$1")
  [[ $code == 200 ]] || { echo "ingest $1 -> $code: $(cat "$WORK/post.out")" >&2; exit 1; }
}
RES='{"attributes":[{"key":"service.name","value":{"stringValue":"frontend"}},{"key":"service.version","value":{"stringValue":"1.0.0"}}]}'
post traces '{"resourceSpans":[{"resource":'"$RES"',"scopeSpans":[{"scope":{"name":"otelhttp","version":"0.49.0"},"spans":[{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","name":"GET /frontend/items/{id}","kind":2,"startTimeUnixNano":"'$((NOW_NS - 5000000))'","endTimeUnixNano":"'$NOW_NS'","attributes":[{"key":"http.route","value":{"stringValue":"/frontend/items/{id}"}},{"key":"http.request.method","value":{"stringValue":"GET"}},{"key":"http.response.status_code","value":{"intValue":"200"}}],"status":{"code":1}}]}]}]}'
post logs '{"resourceLogs":[{"resource":'"$RES"',"scopeLogs":[{"scope":{"name":"logger"},"logRecords":[{"timeUnixNano":"'$NOW_NS'","severityNumber":9,"severityText":"INFO","body":{"stringValue":"request served"},"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","attributes":[{"key":"thread","value":{"stringValue":"main"}}]}]}]}]}'
post metrics '{"resourceMetrics":[{"resource":'"$RES"',"scopeMetrics":[{"scope":{"name":"runtime"},"metrics":[{"name":"process.runtime.goroutines","unit":"{goroutine}","gauge":{"dataPoints":[{"timeUnixNano":"'$NOW_NS'","asInt":"42"}]}}]}]}]}'
stop_server seed
# The ingest token cannot read the API: the timed calls use a read token.
READ_AUTH="Authorization: Bearer $("$BIN" token create --project default --scope read --data "$DATA")"

# ------------------------------------------------------------ 2. SQL bulk fill
if [[ $ENGINE == duckdb ]]; then
  DIV='//'; CTE_AS='AS'
else
  DIV='/'; CTE_AS='AS MATERIALIZED'
fi
P=2147483647
# hv X A: a pseudo-random integer in [0, 2^31-1) from integer expression X:
# ((X*A + B) mod P)^2 mod P; every intermediate stays below 2^62.
hv() { local y="(((($1) % $P) * $2 + 12345) % $P)"; echo "(($y * $y) % $P)"; }
# mx X A: a bijection of [0, 2^32) (odd multiplier), for unique ids.
mx() { echo "((($1) * $2 + 977) % 4294967296)"; }
# id63 X A B: a unique non-negative 63-bit id half (ids are stored as 64-bit halves).
id63() { echo "($(mx "$1" "$2") * 2147483648 + $(mx "$1" "$3") % 2147483648)"; }
trace_high() { id63 "$1" 2246822519 3266489917; }
trace_low() { id63 "$1" 668265263 374761393; }
span_int() { id63 "$1" 2654435761 1597334677; }
HEX_TRACE="printf('%016x%016x', trace_id_high, trace_id_low)"
# fixed-width word lists (0-based index)
SVCS="'frontend       checkout       cart           payment        shipping       email          currency       catalog        recommendation ad             '"
svc() { echo "rtrim(substr($SVCS, ($1) * 15 + 1, 15))"; }
RES_W="'items   orders  users   search  health  '"
resw() { echo "rtrim(substr($RES_W, ($1) * 8 + 1, 8))"; }
METH="'GET GET POSTGET PUT '"
EXC_T="'java.net.SocketTimeoutException   java.lang.NullPointerException    io.grpc.StatusRuntimeException    java.sql.SQLTransientException    java.lang.IllegalStateException   redis.clients.JedisConnException  java.io.IOException               com.example.PaymentDeclined       '"
WORDS="'request served  user login      cache miss      timeout         retrying        connection resetquery slow      payment ok      order created   item added      stock low       rate limited    session expired token refreshed db pool wait    upstream 503    checkout start  shipping quote  email queued    config reloaded '"
word() { echo "rtrim(substr($WORDS, ($1) * 16 + 1, 16))"; }

spans_sql() { # $1 = FROM clause yielding column i
  local sv e k p r err exc
  e="(h1 % 50)"; k="((h1 % 50) $DIV 10)"; p="(i % 10)"; r="(i - (i % 10) + 6)"
  sv=$(svc "(h1 % 10)")
  err="(h2 % 100 < 5)"
  exc="(h2 % 100 < 5 AND h3 % 5 = 0)"
  local route="('/' || $sv || '/' || $(resw "$k") || '/{id}')"
  local meth="rtrim(substr($METH, $k * 4 + 1, 4))"
  local etype="rtrim(substr($EXC_T, (h3 $DIV 5) % 8 * 34 + 1, 34))"
  local emsg="('upstream ' || $(svc "(h4 % 10)") || ' failed: ' || $(word "(h4 $DIV 10 % 20)"))"
  local z="(((h5 % 1000) + ((h5 $DIV 1000) % 1000) + ((h5 $DIV 1000000) % 1000)) / 1000.0 - 1.5) * 2.0"
  local dur="CAST((3 + ($e * 37) % 120) * (CASE WHEN $p < 7 THEN 1.0 ELSE 0.3 END) * exp(0.7 * $z) * 1000000 AS BIGINT)"
  local start="($T0 + i * $STEP_S + h4 % $STEP_S)"
  cat <<SQL
WITH g $CTE_AS (
  SELECT i, $(hv i 1103515245) AS h1, $(hv i 134775813) AS h2, $(hv i 22695477) AS h3,
         $(hv i 1664525) AS h4, $(hv i 69069) AS h5
  FROM $1
), s $CTE_AS (
  SELECT *, $dur AS dur, $start AS st FROM g
)
INSERT INTO spans SELECT
  1, $(trace_high "CASE WHEN $p < 7 THEN i ELSE $r END"), $(trace_low "CASE WHEN $p < 7 THEN i ELSE $r END"),
  $(span_int i), CASE WHEN $p < 7 THEN NULL ELSE $(span_int "$r") END,
  '', 1,
  CASE WHEN $p < 7 THEN $meth || ' ' || $route WHEN $p < 9 THEN 'SELECT ' || $(resw "$k") ELSE 'render ' || $(resw "$k") END,
  CASE WHEN $p < 7 THEN 2 WHEN $p < 9 THEN 3 ELSE 1 END,
  st, st + dur, dur,
  CASE WHEN $err THEN 2 WHEN h2 % 100 < 50 THEN 1 ELSE 0 END,
  CASE WHEN $err THEN 'internal error' ELSE '' END,
  $sv,
  CASE WHEN $p < 7 THEN $route ELSE '' END,
  CASE WHEN $p < 7 THEN $meth ELSE '' END,
  CASE WHEN $p >= 7 THEN 0 WHEN $err THEN 500 ELSE 200 END,
  CASE WHEN $p IN (7, 8) THEN 'postgresql' ELSE '' END,
  CASE WHEN $exc THEN $etype ELSE '' END,
  CASE WHEN $exc THEN $emsg ELSE '' END,
  CASE WHEN $p < 7 THEN '{"http.route":"' || $route || '","http.request.method":"' || $meth || '","http.response.status_code":' || (CASE WHEN $err THEN 500 ELSE 200 END) || ',"net.host.name":"' || $sv || '.internal","user_agent.original":"Mozilla/5.0 (X11; Linux x86_64)","enduser.id":"u' || (h4 % 100000) || '"}'
       ELSE '{"db.system":"postgresql","db.statement":"SELECT * FROM ' || $(resw "$k") || ' WHERE id = ?","db.rows":' || (h3 % 100) || '}' END,
  CASE WHEN $exc THEN '[{"time_unix_nano":' || (st + dur) || ',"name":"exception","attributes":{"exception.type":"' || $etype || '","exception.message":"' || $emsg || '","exception.stacktrace":"at com.example.Handler.handle(Handler.java:' || (h4 % 900) || ')\\n\\tat com.example.Server.dispatch(Server.java:88)"},"dropped_attributes_count":0}]' ELSE '[]' END,
  '[]', 0, 0, 0,
  (h1 % 10) * 3 + h5 % 3,  -- resource_id: service (and its version) x host, a row of span_resources
  -- derived columns (endpoint = route else name; is_entry; has_exception), as the writer fills them
  CASE WHEN $p < 7 THEN $route WHEN $p < 9 THEN 'SELECT ' || $(resw "$k") ELSE 'render ' || $(resw "$k") END,
  CASE WHEN $p < 7 THEN 1 ELSE 0 END,
  CASE WHEN $exc THEN 1 ELSE 0 END
FROM s
SQL
}

logs_sql() {
  local sv sev base t
  sv=$(svc "(h4 % 10)")
  base="(CASE WHEN h1 % 1000 < 15 THEN 1 WHEN h1 % 1000 < 215 THEN 5 WHEN h1 % 1000 < 815 THEN 9 WHEN h1 % 1000 < 935 THEN 13 WHEN h1 % 1000 < 995 THEN 17 ELSE 21 END)"
  sev="($base + (CASE WHEN h2 % 10 = 0 THEN 1 ELSE 0 END))"
  t="($T0 + i * $STEP_S + h5 % $STEP_S)"
  local rr="((h5 % ($ROWS $DIV 10)) * 10 + 6)"   # an entry span row of the spans table
  cat <<SQL
WITH g $CTE_AS (
  SELECT i, $(hv i 1103515245) AS h1, $(hv i 134775813) AS h2, $(hv i 22695477) AS h3,
         $(hv i 1664525) AS h4, $(hv i 69069) AS h5
  FROM $1
)
INSERT INTO logs SELECT
  1, $t, $t + 1500000, $sev,
  CASE $base WHEN 1 THEN 'TRACE' WHEN 5 THEN 'DEBUG' WHEN 9 THEN 'INFO' WHEN 13 THEN 'WARN' WHEN 17 THEN 'ERROR' ELSE 'FATAL' END,
  $(word "(h3 % 20)") || ' ' || $(word "(h3 $DIV 20 % 20)") || ' user=u' || (h4 % 100000) || ' order=' || (h2 % 1000000) || ' took ' || (h5 % 2000) || 'ms on ' || $sv || '-' || (h1 % 3),
  1,
  CASE WHEN h2 % 10 < 3 THEN $(trace_high "$rr") END,
  CASE WHEN h2 % 10 < 3 THEN $(trace_low "$rr") END,
  CASE WHEN h2 % 10 < 3 THEN $(span_int "$rr") END,
  CASE WHEN h2 % 10 < 3 THEN 1 ELSE 0 END,
  $sv,
  '{"logger":"com.example.' || $sv || '.Handler","thread":"worker-' || (h5 % 16) || '","code.lineno":' || (h3 % 500) || '}',
  0,
  (h4 % 10) * 3 + h1 % 3  -- resource_id: service (and its version) x host, a row of log_resources
FROM g
SQL
}

# The 30 resources the span and log rows name: k = service * 3 + host.
resources_sql() { # $1 = table, $2 = scope name, $3 = scope version, $4 = FROM clause yielding column k
  local sv
  sv=$(svc "(k $DIV 3)")
  cat <<SQL
INSERT INTO $1 SELECT
  1, k,
  '{"service.name":"' || $sv || '","service.version":"1.' || (k $DIV 3) || '.0","host.name":"' || $sv || '-' || (k % 3) || '","telemetry.sdk.language":"java","deployment.environment":"prod"}',
  '$2', '$3', '{}'
FROM $4
SQL
}
span_resources_sql() { resources_sql span_resources io.opentelemetry.instrumentation.http 1.32.0 "$1"; }
log_resources_sql() { resources_sql log_resources com.example.logging "" "$1"; }

series_sql() {
  local sv
  sv=$(svc "(k % 10)")
  cat <<SQL
INSERT INTO metric_series SELECT
  1, 1000000 + k,
  CASE WHEN k < 40 THEN 'system.cpu.utilization' WHEN k < 50 THEN 'process.memory.usage' WHEN k < 100 THEN 'http.server.request.count'
       WHEN k < 140 THEN 'db.client.connections.usage' ELSE 'messaging.kafka.consumer.lag' END,
  CASE WHEN k >= 50 AND k < 100 THEN 2 ELSE 1 END,
  CASE WHEN k < 40 THEN '1' WHEN k < 50 THEN 'By' WHEN k < 100 THEN '{request}' WHEN k < 140 THEN '{connection}' ELSE '{message}' END,
  '',
  CASE WHEN k >= 50 AND k < 100 THEN 2 ELSE 0 END,
  CASE WHEN k >= 50 AND k < 100 THEN 1 ELSE 0 END,
  $sv,
  '{"service.name":"' || $sv || '","service.version":"1.0.0","host.name":"' || $sv || '-0"}',
  'io.opentelemetry.runtime', '1.32.0',
  CASE WHEN k < 40 THEN '{"cpu":"' || (k $DIV 10) || '","state":"user"}'
       WHEN k < 50 THEN '{}'
       WHEN k < 100 THEN '{"http.route":"/' || $sv || '/' || $(resw "((k - 50) $DIV 10)") || '/{id}"}'
       WHEN k < 140 THEN '{"state":"' || (CASE WHEN (k $DIV 10) % 2 = 0 THEN 'idle' ELSE 'used' END) || '","pool.name":"p' || ((k - 100) $DIV 20) || '"}'
       ELSE '{"topic":"orders","partition":"' || ((k - 140) $DIV 10) || '"}' END
FROM $1
SQL
}

points_sql() {
  local k="(i % 200)" j="(i $DIV 200)"
  cat <<SQL
WITH g $CTE_AS (SELECT i, $(hv i 1103515245) AS h1 FROM $1)
INSERT INTO metric_points SELECT
  1, 1000000 + $k, $T0 + $j * $STEP_M + $k * 1000000,
  CASE WHEN $k >= 50 AND $k < 100 THEN $T0 ELSE 0 END,
  CASE WHEN $k < 40 THEN (h1 % 1000) / 1000.0
       WHEN $k < 50 THEN 200000000.0 + h1 % 50000000
       WHEN $k < 100 THEN CAST($j * (5 + $k % 7) AS DOUBLE)
       WHEN $k < 140 THEN CAST(h1 % 20 AS DOUBLE)
       ELSE CAST(h1 % 5000 AS DOUBLE) END,
  CASE WHEN $k >= 50 AND $k < 100 THEN $j * (5 + $k % 7) WHEN $k >= 100 THEN (CASE WHEN $k < 140 THEN h1 % 20 ELSE h1 % 5000 END) ELSE NULL END,
  0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0
FROM g
SQL
}

FILL_LOG=""
fill_duckdb() {
  local t0 t1
  for table in spans logs series points span_resources log_resources; do
    local src="(SELECT range AS i FROM range($ROWS))"
    [[ $table == series ]] && src="(SELECT range AS k FROM range(200))"
    [[ $table == *_resources ]] && src="(SELECT range AS k FROM range(30))"
    t0=$(date +%s.%N)
    "$BIN" sql --storage duckdb --data "$DATA" "$("${table}_sql" "$src")" >/dev/null
    t1=$(date +%s.%N)
    FILL_LOG+="$table $(printf '%.1f' "$(echo "$t1 - $t0" | bc)")s; "
    log "filled $table in $(echo "$t1 - $t0" | bc) s"
  done
}
fill_sqlite() {
  local db=$DATA/telemetry.sqlite chunk=1000000 t0 t1
  for table in spans logs series points span_resources log_resources; do
    t0=$(date +%s.%N)
    {
      echo "PRAGMA synchronous=OFF; PRAGMA cache_size=-1048576; PRAGMA temp_store=MEMORY;"
      if [[ $table == series ]]; then
        echo "BEGIN; $(series_sql "(SELECT value AS k FROM generate_series(0, 199))"); COMMIT;"
      elif [[ $table == *_resources ]]; then
        echo "BEGIN; $("${table}_sql" "(SELECT value AS k FROM generate_series(0, 29))"); COMMIT;"
      else
        for ((a = 0; a < ROWS; a += chunk)); do
          local b=$((a + chunk - 1)); ((b >= ROWS)) && b=$((ROWS - 1))
          echo "BEGIN; $("${table}_sql" "(SELECT value AS i FROM generate_series($a, $b))"); COMMIT;"
        done
      fi
      echo "PRAGMA wal_checkpoint(TRUNCATE);"
    } | sqlite3 -bail "$db" >/dev/null
    t1=$(date +%s.%N)
    FILL_LOG+="$table $(printf '%.1f' "$(echo "$t1 - $t0" | bc)")s; "
    log "filled $table in $(echo "$t1 - $t0" | bc) s"
  done
}
log "bulk fill: $ROWS spans, $ROWS logs, $ROWS metric points over 200 series"
FILL_T0=$(date +%s)
"fill_$ENGINE"
FILL_SECONDS=$(($(date +%s) - FILL_T0))

sql1() { "$BIN" sql --storage "$ENGINE" --data "$DATA" "$1" | python3 -c 'import json,sys; r=json.load(sys.stdin)["rows"]; print(r[0][0] if r else "")'; }
COUNTS=$(sql1 "SELECT (SELECT count(*) FROM spans) || ' spans, ' || (SELECT count(*) FROM logs) || ' logs, ' || (SELECT count(*) FROM metric_points) || ' points, ' || (SELECT count(*) FROM metric_series) || ' series'")
# a synthetic trace id from the middle of the range (not the seed request's)
TRACE_ID=$(sql1 "SELECT min($HEX_TRACE) FROM logs WHERE trace_id_high IS NOT NULL AND time_ns >= $((T0 + SPAN_NS / 2)) AND time_ns < $((T0 + SPAN_NS / 2 + 600000000000))")
log "rows: $COUNTS; sample log trace id $TRACE_ID"
if [[ $ENGINE == duckdb ]]; then DBFILE=$DATA/telemetry.duckdb; else DBFILE=$DATA/telemetry.sqlite; fi
DB_BYTES=$(stat -c %s "$DBFILE")

# --------------------------------------------------------------- 3. timings
start_server query
R="from=$FROM_MS&to=$TO_MS"
CALLS=(
  "spans|endpoints (page 50)|endpoints?$R&limit=50"
  "spans|endpoints/series p95|endpoints/series?$R&metric=p95"
  "spans|exceptions|exceptions?$R&limit=50"
  "logs|logs severity_min=17|logs?$R&severity_min=17&limit=50"
  "logs|logs q=timeout (~10% of bodies)|logs?$R&q=timeout&limit=50"
  "logs|logs q=absent word (no match)|logs?$R&q=zzyzx&limit=50"
  "logs|logs trace_id=<id>|logs?$R&trace_id=$TRACE_ID&limit=50"
  "metrics|metrics (list)|metrics?$R"
  "metrics|metrics/series cpu avg by cpu|metrics/series?$R&name=system.cpu.utilization&agg=avg&group_by=cpu"
  "metrics|metrics/series kafka lag avg by service.name|metrics/series?$R&name=messaging.kafka.consumer.lag&agg=avg&group_by=service.name"
  "metrics|metrics/series requests rate by service.name|metrics/series?$R&name=http.server.request.count&agg=rate&group_by=service.name"
)
LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
{
  echo "## $ENGINE, $ROWS rows per signal"
  echo
  echo "- $(date -u +%FT%TZ), $(nproc) cores, load average at start of timing $LOAD (shared machine: other builds/benchmarks running)"
  echo "- rows: $COUNTS; 24 h range, page size 50; query timeout ${QUERY_TIMEOUT_MS} ms"
  echo "- database file: $(basename "$DBFILE") $DB_BYTES bytes ($(numfmt --to=iec "$DB_BYTES")); fill ${FILL_SECONDS} s ($FILL_LOG)"
  echo "- each call $REPEAT times in a row with curl (time_total, s); median, min, max; a call answered 504 (past --query-timeout-ms) is not repeated"
  echo
  echo "| signal | call | median s | min s | max s | HTTP | bytes |"
  echo "|---|---|---:|---:|---:|---|---:|"
} >"$OUT"
for c in "${CALLS[@]}"; do
  IFS='|' read -r sig name path <<<"$c"
  times=() codes=() size=0
  for _ in $(seq 1 "$REPEAT"); do
    res=$(curl -sS -m "$CURL_TIMEOUT" -o "$WORK/resp.json" -w '%{http_code} %{time_total} %{size_download}' -H "$READ_AUTH" "$API/api/v1/$path" || echo "000 $CURL_TIMEOUT 0")
    read -r code t size <<<"$res"
    times+=("$t"); codes+=("$code")
    # Past the deadline (504) or the curl timeout: repeating only re-measures the timeout.
    if [[ $code == 504 || $code == 000 ]]; then log "$name: HTTP $code after $t s, not repeated"; break; fi
  done
  stats=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {printf "%.3f %.3f %.3f", a[int((NR+1)/2)], a[1], a[NR]}')
  read -r med mn mx <<<"$stats"
  ucodes=$(printf '%s\n' "${codes[@]}" | sort -u | paste -sd/)
  [[ $ucodes == 200 ]] || log "WARN $name: HTTP $ucodes: $(head -c 300 "$WORK/resp.json")"
  log "$name: median $med s (min $mn, max $mx) HTTP $ucodes"
  echo "| $sig | $name | $med | $mn | $mx | $ucodes | $size |" >>"$OUT"
done
stop_server query

# ----------------------------------------------- 4. plans of the server's SQL
# The statements query_service.cc builds for the calls above, with the bound
# parameters inlined (server stopped; `sightline sql`). DuckDB: EXPLAIN ANALYZE
# (runs the query); SQLite: EXPLAIN QUERY PLAN.
if [[ "${EXPLAIN:-1}" == 1 ]]; then
  EXPL=$RESULTS/dashboards-$ENGINE-$ROWS-explain.txt
  F=$((FROM_MS * 1000000)) T=$((TO_MS * 1000000)) STEP_NS=1800000000000 # auto step for 24 h: 30 min
  WSE="WHERE project_id = 1 AND start_time_ns >= $F AND start_time_ns < $T AND is_entry = 1"
  WL="WHERE project_id = 1 AND time_ns >= $F AND time_ns < $T"
  LOGCOLS="time_ns, severity_number, severity_text, body, service_name, $HEX_TRACE, printf('%016x', span_id), attributes, rowid"
  ids() { seq -s, "$1" "$2"; }
  if [[ $ENGINE == duckdb ]]; then
    AGGS="count(*), sum(CASE WHEN status_code = 2 THEN 1 ELSE 0 END), quantile_cont(duration_ns, [0.5, 0.95, 0.99]) FROM spans"
    AGG95="count(*), sum(CASE WHEN status_code = 2 THEN 1 ELSE 0 END), quantile_cont(duration_ns, [0.95]) FROM spans"
    GROUPBY2=" GROUP BY 1, 2"; LIKE=ILIKE; PREFIX="EXPLAIN ANALYZE"
    RATE_LAST="arg_max(value, time_ns)"
  else
    AGGS="status_code, duration_ns FROM spans"; AGG95=$AGGS; GROUPBY2=""; LIKE=LIKE; PREFIX="EXPLAIN QUERY PLAN"
    RATE_LAST="value"
  fi
  JOIN=$("$BIN" sql --storage "$ENGINE" --data "$DATA" "SELECT service_name, endpoint FROM spans $WSE GROUP BY 1, 2 ORDER BY count(*) DESC, 1, 2 LIMIT 10" |
    python3 -c 'import json,sys
q=lambda s: "'"'"'"+s.replace("'"'"'","'"''"'")+"'"'"'"
rows=json.load(sys.stdin)["rows"]
sel=" UNION ALL ".join("SELECT %s AS top_service, %s AS top_endpoint, %d AS top_index" % (q(r[0]), q(r[1]), i) for i, r in enumerate(rows))
print(" LEFT JOIN (%s) top ON service_name = top.top_service AND endpoint = top.top_endpoint" % sel)')
  WSE_J=${WSE/WHERE project_id/$JOIN WHERE project_id}
  PLANS=(
    "endpoints|SELECT service_name, endpoint, $AGGS $WSE$GROUPBY2"
    "endpoints/series (ranking)|SELECT service_name, endpoint, count(*) FROM spans $WSE GROUP BY 1, 2"
    "endpoints/series (p95 per bucket)|SELECT ((start_time_ns - $F) $DIV $STEP_NS), coalesce(top.top_index, -1), ${AGG95/FROM spans/FROM spans $WSE_J}$GROUPBY2"
    "exceptions|SELECT exception_type, exception_message, service_name, count(*), min(start_time_ns), max(start_time_ns), max($HEX_TRACE) FROM spans WHERE project_id = 1 AND start_time_ns >= $F AND start_time_ns < $T AND has_exception = 1 GROUP BY 1, 2, 3 ORDER BY 4 DESC, 1, 2, 3 LIMIT 50"
    "logs severity_min=17|SELECT $LOGCOLS FROM logs $WL AND severity_number >= 17 ORDER BY time_ns DESC, rowid DESC LIMIT 51"
    "logs q=timeout|SELECT $LOGCOLS FROM logs $WL AND body $LIKE '%timeout%' ESCAPE '\\' ORDER BY time_ns DESC, rowid DESC LIMIT 51"
    "logs q=zzyzx|SELECT $LOGCOLS FROM logs $WL AND body $LIKE '%zzyzx%' ESCAPE '\\' ORDER BY time_ns DESC, rowid DESC LIMIT 51"
    "logs trace_id|SELECT $LOGCOLS FROM logs $WL AND trace_id_high = $((16#${TRACE_ID:0:16})) AND trace_id_low = $((16#${TRACE_ID:16:16})) ORDER BY time_ns DESC, rowid DESC LIMIT 51"
    "metrics/series cpu avg|SELECT series_id, ((time_ns - $F) $DIV $STEP_NS), sum(value), count(value), min(value), max(value) FROM metric_points $WL AND series_id IN ($(ids 1000000 1000039)) GROUP BY 1, 2"
    "metrics/series requests rate|SELECT series_id, ((time_ns - $F) $DIV $STEP_NS), $RATE_LAST, sum(value), max(time_ns) FROM metric_points $WL AND series_id IN ($(ids 1000050 1000099)) GROUP BY 1, 2 ORDER BY 1, 2"
  )
  : >"$EXPL"
  for pl in "${PLANS[@]}"; do
    name=${pl%%|*} q=${pl#*|}
    log "plan: $name"
    t0=$(date +%s.%N)
    plan=$("$BIN" sql --storage "$ENGINE" --data "$DATA" "$PREFIX $q" | python3 -c '
import json, sys
r = json.load(sys.stdin)["rows"]
print("\n".join((row[-1] if len(row) <= 2 else " | ".join(str(c) for c in row)) for row in r))')
    t1=$(date +%s.%N)
    { echo "=== $name  (sightline sql wall time incl. open: $(echo "$t1 - $t0" | bc) s)"; echo "$q"; echo; echo "$plan"; echo; } >>"$EXPL"
  done
  log "plans in $EXPL"
fi
cat "$OUT"
