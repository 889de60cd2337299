#!/usr/bin/env bash
# Sets everything up (tests/setup.sh: wasm target, wasm-bindgen CLI, the package build) and runs the
# examples "one summary per chat at a time, with a fence in SQL" and "tickets: 180 seats, 1,000 buyers"
# under Node, and under Bun if present.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/tests/setup.sh"
cd "$root/examples/summaries-sqlite"
npm install --no-audit --no-fund --silent
echo "== node $(node --version)"
node index.js
bun="$root/tests/runtimes/node_modules/.bin/bun"
if [ -x "$bun" ]; then
  echo "== bun $("$bun" --version)"
  "$bun" index.js
fi
cd "$root/examples/tickets"
npm install --no-audit --no-fund --silent
echo "== tickets: node $(node --version)"
node index.js
if [ -x "$bun" ]; then
  echo "== tickets: bun $("$bun" --version)"
  "$bun" index.js
fi
