#!/usr/bin/env bash
# Sets everything up (tests/setup.sh: wasm target, wasm-bindgen CLI, the package build) and runs the
# examples "one summary per chat at a time, with a fence in SQL" and "tickets: 180 seats, 1,000 buyers"
# under Node, and under Bun if present.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/tests/setup.sh"
# holdfast is copied in from npm/ (each example's .npmrc), and npm keeps a copy of the same version:
# dropped first, so that the examples run the package as built now, not as first installed.
cd "$root/examples/summaries-sqlite"
rm -rf node_modules/holdfast
npm install --no-audit --no-fund --silent
echo "== node $(node --version)"
node index.js
bun="$root/tests/runtimes/node_modules/.bin/bun"
if [ -x "$bun" ]; then
  echo "== bun $("$bun" --version)"
  "$bun" index.js
fi
cd "$root/examples/tickets"
rm -rf node_modules/holdfast
npm install --no-audit --no-fund --silent
echo "== tickets: node $(node --version)"
node index.js
if [ -x "$bun" ]; then
  echo "== tickets: bun $("$bun" --version)"
  "$bun" index.js
fi
