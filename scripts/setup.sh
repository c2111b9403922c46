#!/usr/bin/env bash
# Installs what Sightline needs to build, run and test, and nothing else.
# Idempotent: a second run on a ready machine does no network work.
#   apt: Debian packages in APT_PACKAGES (third_party/versions.env)
#   npm: DuckDB library + header and the OTLP .proto files, unpacked under .deps/
# With --test, also the packages only tests need (TEST_APT_PACKAGES).
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
stamp="$deps/.stamp"
# Bump when the proto patch below changes, so machines re-fetch.
proto_patch=1
want="$DUCKDB_LIB_PACKAGE $DUCKDB_HEADER_PACKAGE $OTLP_PROTO_PACKAGE patch$proto_patch"
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
# The packaged protos are OTLP ~0.19. Add the later fields that SDKs send and
# that we store, at their official field numbers, so protobuf and the JSON
# parser keep them: Span.flags (16), Span.Link.flags (6),
# InstrumentationScope.attributes (3) and dropped_attributes_count (4).
p="$deps/protos/opentelemetry/proto"
sed -i 's/^message Span {$/message Span {\n  fixed32 flags = 16;/; s/^  message Link {$/  message Link {\n    fixed32 flags = 6;/' "$p/trace/v1/trace.proto"
sed -i 's/^message InstrumentationScope {$/message InstrumentationScope {\n  repeated KeyValue attributes = 3;\n  uint32 dropped_attributes_count = 4;/' "$p/common/v1/common.proto"
grep -q "fixed32 flags = 16;" "$p/trace/v1/trace.proto" && grep -q "fixed32 flags = 6;" "$p/trace/v1/trace.proto" &&
  grep -q "repeated KeyValue attributes = 3;" "$p/common/v1/common.proto" || { echo "setup: proto patch failed" >&2; exit 1; }
for f in "$deps/duckdb/lib/libduckdb.so" "$deps/duckdb/include/duckdb.h" "$deps/protos/opentelemetry/proto/trace/v1/trace.proto"; do
  [[ -f "$f" ]] || { echo "setup: missing $f after npm pack" >&2; exit 1; }
done
echo "$want" > "$stamp"
