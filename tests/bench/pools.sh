#!/usr/bin/env bash
# The pools benchmark (#16; method: see the header of pools.mjs): claims per second on one pool,
# holdfast's in-process store (fileStorage, and memoryStorage) beside SQLite (one UPDATE a claim, WAL,
# synchronous=FULL). SQLite is node:sqlite, so it runs on Node 24 (tests/runtimes) by default.
#
#   bash tests/bench/pools.sh                      # Node 24 from tests/runtimes ($BENCH_NODE to choose)
#   BENCH_RUNTIME=bun bash tests/bench/pools.sh    # Bun (bun:sqlite)
#   BENCH_RUNTIME=node20 BENCH_BETTER_SQLITE=1 bash tests/bench/pools.sh
#                                                  # the machine's Node 20 against better-sqlite3 (a
#                                                  # native module, built by npm for that Node: minutes)
#   BENCH_ROUNDS=5 BENCH_POOL_N=50000 BENCH_POOL_K=200 bash tests/bench/pools.sh
#
# HOLDFAST_PKG: the holdfast package to measure (default npm/, after `bash npm/build.sh`), installed
# into tests/bench/node_modules as run.sh does.
set -euo pipefail
caller="$PWD"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$here/../.."
cd "$here"
if [[ -n "${HOLDFAST_PKG:-}" ]]; then
  [[ "$HOLDFAST_PKG" = /* ]] && pkg="$HOLDFAST_PKG" || pkg="$caller/$HOLDFAST_PKG"
else
  pkg="$root/npm"
fi
npm install --no-audit --no-fund --loglevel=error >&2
# --no-save packages are pruned by the next install: better-sqlite3 goes in the same one (with its
# build script), holdfast's own scripts are not needed.
if [[ "${BENCH_BETTER_SQLITE:-0}" = 1 ]]; then
  npm install --no-save --install-links --no-audit --no-fund --loglevel=error "$pkg" better-sqlite3@12 >&2
else
  npm install --no-save --install-links --ignore-scripts --no-audit --no-fund --loglevel=error "$pkg" >&2
fi
bin="$root/tests/runtimes/node_modules/.bin"
case "${BENCH_RUNTIME:-node}" in
  bun) exec "${BENCH_BUN:-$bin/bun}" pools.mjs ;;
  node20) BENCH_ADAPTERS=${BENCH_ADAPTERS:-holdfast,holdfast-memory,holdfast-served,better-sqlite3} exec node pools.mjs ;;
  *) exec "${BENCH_NODE:-$root/tests/runtimes/node_modules/node/bin/node}" pools.mjs ;;
esac
