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
