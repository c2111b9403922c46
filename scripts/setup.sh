#!/usr/bin/env bash
# Installs what Sightline needs to build, run and test, and nothing else.
# Idempotent: a second run on a ready machine does no network work.
#   apt: Debian packages in APT_PACKAGES (third_party/versions.env)
#   npm: DuckDB library + header and the OTLP .proto files, unpacked under .deps/
# With --test, also the packages only tests need (TEST_APT_PACKAGES) and chdb's
# libchdb.so (CHDB_LIB_PACKAGE, 166 MB packed, 534 MB unpacked) in .deps/chdb/.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=/dev/null
source "$root/third_party/versions.env"

packages="$APT_PACKAGES"
[[ "${1:-}" == "--test" ]] && packages="$packages $TEST_APT_PACKAGES"
missing=()
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node.js and npm: use the machine's if present (it may come from outside Debian's
# nodejs package, whose npm would conflict); otherwise take Debian's.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then missing+=(nodejs npm); fi
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""; [[ $(id -u) -ne 0 ]] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

deps="$root/.deps"
mkdir -p "$deps"

# The in-process ClickHouse of the ClickHouse engine's tests, stamped on its own.
fetch_chdb() {
  local chdb_stamp="$deps/.stamp-chdb"
  if [[ -f "$chdb_stamp" && "$(cat "$chdb_stamp")" == "$CHDB_LIB_PACKAGE" && -f "$deps/chdb/libchdb.so" ]]; then
    return 0
  fi
  echo "setup: fetching npm package: $CHDB_LIB_PACKAGE"
  local tmp_chdb
  tmp_chdb="$(mktemp -d)"
  (cd "$tmp_chdb" && npm pack --silent "$CHDB_LIB_PACKAGE" >/dev/null)
  tar -xzf "$tmp_chdb"/*.tgz -C "$tmp_chdb" package/libchdb.so
  rm -rf "$deps/chdb"
  mkdir -p "$deps/chdb"
  mv "$tmp_chdb/package/libchdb.so" "$deps/chdb/"
  rm -rf "$tmp_chdb"
  echo "$CHDB_LIB_PACKAGE" > "$chdb_stamp"
}
[[ "${1:-}" == "--test" ]] && fetch_chdb
stamp="$deps/.stamp"
# The patch's hash is part of the stamp, so a changed patch makes machines re-fetch.
proto_patch="$(sha256sum "$root/third_party/otlp-proto.patch" | cut -c1-12)"
want="$DUCKDB_LIB_PACKAGE $DUCKDB_HEADER_PACKAGE $OTLP_PROTO_PACKAGE OTLP-$OTLP_PROTO_RELEASE patch-$proto_patch"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
  exit 0
fi
echo "setup: fetching npm packages: $want"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent $DUCKDB_LIB_PACKAGE $DUCKDB_HEADER_PACKAGE $OTLP_PROTO_PACKAGE >/dev/null)
rm -rf "$deps/duckdb" "$deps/protos"
mkdir -p "$deps/duckdb/lib" "$deps/duckdb/include" "$deps/protos"
for t in "$tmp"/*.tgz; do
  d="$tmp/x"; rm -rf "$d"; mkdir -p "$d"; tar -xzf "$t" -C "$d"
  if [[ -f "$d/package/libduckdb.so" ]]; then cp "$d/package/libduckdb.so" "$deps/duckdb/lib/"; fi
  if [[ -f "$d/package/src/duckdb/src/include/duckdb.h" ]]; then cp "$d/package/src/duckdb/src/include/duckdb.h" "$deps/duckdb/include/"; fi
  if [[ -d "$d/package/build/protos" ]]; then cp -r "$d/package/build/protos/." "$deps/protos/"; fi
done
# The packaged protos are OTLP ~0.18 (its last release that ships .proto files,
# and no newer npm package does). third_party/otlp-proto.patch brings them to
# OTLP_PROTO_RELEASE: every field added since, at its official number, with the
# upstream comments; its header lists them.
patch -p1 --quiet --forward -d "$deps/protos" < "$root/third_party/otlp-proto.patch" ||
  { echo "setup: third_party/otlp-proto.patch does not apply to $OTLP_PROTO_PACKAGE" >&2; exit 1; }
for f in "$deps/duckdb/lib/libduckdb.so" "$deps/duckdb/include/duckdb.h" "$deps/protos/opentelemetry/proto/trace/v1/trace.proto"; do
  [[ -f "$f" ]] || { echo "setup: missing $f after npm pack" >&2; exit 1; }
done
echo "$want" > "$stamp"
