#!/usr/bin/env bash
# Builds the web UI (ui/) with Vite into OUT_DIR. Called by CMake.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:?usage: build_ui.sh OUT_DIR}"
cd "$root/ui"
if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
  npm ci --silent --no-audit --no-fund
fi
npx vite build --outDir "$out" --emptyOutDir --logLevel warn
# Precompressed beside each text asset (served by Accept-Encoding: gzip); kept
# only where it is smaller. -n: no name or time in the header, so the build is
# reproducible.
find "$out" -type f \( -name '*.js' -o -name '*.css' -o -name '*.html' -o -name '*.svg' -o -name '*.json' \) |
  while read -r f; do
    gzip -9 -n -c "$f" >"$f.gz"
    if [[ $(stat -c %s "$f.gz") -ge $(stat -c %s "$f") ]]; then rm "$f.gz"; fi
  done
