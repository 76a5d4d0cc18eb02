#!/usr/bin/env bash
# Installs and runs the main job from a fresh clone: system packages for software WebGPU (when
# missing), npm ci, a build, then `weft demo` (WebGPU when an adapter exists, else the CPU backend).
# Extra arguments go to `weft demo` (e.g. --backend cpu --requests 64).
set -euo pipefail
cd "$(dirname "$0")/.."
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false NX_INTERACTIVE=false
bash scripts/setup-system.sh
[ -d node_modules/.bin ] || npm ci --no-audit --no-fund
npx nx run-many -t build --output-style=static >/dev/null
node packages/weft/dist/cli.js demo "$@"
