#!/usr/bin/env bash
# Runs every test from a fresh clone: system packages for software WebGPU (when missing), npm ci,
# then build, lint, typecheck and test of every package through Nx (cache skipped under CI=true),
# ending with one line "N passed, N failed, N skipped".
set -euo pipefail
cd "$(dirname "$0")/.."
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false NX_INTERACTIVE=false
bash scripts/setup-system.sh
[ -d node_modules/.bin ] && [ "${CI:-}" != "true" ] || npm ci --no-audit --no-fund
node scripts/test.mjs
