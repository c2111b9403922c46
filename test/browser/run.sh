#!/usr/bin/env bash
# Browser tests: the web UI, and a page on another origin sending with the
# OpenTelemetry web exporter (CORS), in Debian's chromium (playwright-core) against a
# real sightline binary (build/sightline, or $SIGHTLINE_BIN).
#
#   test/browser/run.sh                     # all files
#   test/browser/run.sh ui.test.mjs         # some files
#   SIGHTLINE_BROWSER_ENGINE=sqlite ...     # engine (default duckdb)
#   SIGHTLINE_BROWSER_KEEP=1 ...            # keep the server's temp data dir and log
#
# Screenshots go to test/browser/output/. Needs /usr/bin/chromium
# (apt-get install chromium). Exits non-zero if any test fails.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
budget="${SIGHTLINE_BROWSER_TIMEOUT:-240}"   # seconds for the whole suite

if [[ ! -x "${SIGHTLINE_CHROMIUM:-/usr/bin/chromium}" ]]; then
  echo "browser tests: ${SIGHTLINE_CHROMIUM:-/usr/bin/chromium} not found (apt-get install chromium)" >&2
  exit 2
fi

# Install the pinned packages when node_modules is missing or older than the lockfile.
stamp="$here/node_modules/.package-lock.json"
if [[ ! -f "$stamp" || "$here/package-lock.json" -nt "$stamp" || "$here/package.json" -nt "$stamp" ]]; then
  (cd "$here" && npm ci --silent --no-audit --no-fund)
fi

files=()
if [[ $# -gt 0 ]]; then
  for f in "$@"; do files+=("test/browser/$(basename "$f")"); done
else
  files=(test/browser/*.test.mjs)
fi

mkdir -p "$here/output"
cd "$root"
set +e
timeout --kill-after=15 "$budget" node --test --test-concurrency=1 "${files[@]}"
rc=$?
set -e
if [[ $rc -eq 124 || $rc -eq 137 ]]; then
  echo "browser tests: timed out after ${budget}s" >&2
fi
echo "screenshots: $here/output/" >&2
exit "$rc"
