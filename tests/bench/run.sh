#!/usr/bin/env bash
# Runs the holdfast benchmark (method: see the header of bench.mjs).
#
#   bash tests/bench/run.sh                       # Node (`node`, or $BENCH_NODE)
#   BENCH_RUNTIME=bun bash tests/bench/run.sh     # Bun ($BENCH_BUN, else tests/runtimes's bun, else `bun`)
#   BENCH_RUNTIME=node24 (or node26) bash tests/bench/run.sh   # tests/runtimes's Node 24 (or Node 26)
#
# HOLDFAST_PKG: the holdfast package to measure, a packed .tgz or a package directory (default: ../../npm
# relative to this folder, after `bash npm/build.sh`). A relative path given by the caller is taken from
# the caller's working directory. HOLDFAST_PKG_B: a second one (a .tgz), installed as `holdfast-b` and
# measured in the same run as the adapter `holdfast-b`, interleaved with the others: an A/B of two
# builds under the same load (`HOLDFAST_PKG=before.tgz HOLDFAST_PKG_B=after.tgz`). When it is not built, the competitors still run and holdfast is listed
# as "not run: not built". Other options (BENCH_ROUNDS, BENCH_SCALE, BENCH_ONLY, ...) are read by bench.mjs.
#
#   BENCH_REMOTE=1 bash tests/bench/run.sh        # the remote workloads alone: holdfast's server over
#                                                 # 127.0.0.1 beside redis-semaphore and redlock on a local
#                                                 # redis-server (installed by redis.sh when missing)
set -euo pipefail

caller="$PWD"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

if [[ -n "${HOLDFAST_PKG:-}" ]]; then
  [[ "$HOLDFAST_PKG" = /* ]] && pkg="$HOLDFAST_PKG" || pkg="$caller/$HOLDFAST_PKG"
else
  pkg="$here/../../npm"
fi
b=()
if [[ -n "${HOLDFAST_PKG_B:-}" ]]; then
  [[ "$HOLDFAST_PKG_B" = /* ]] && pkgb="$HOLDFAST_PKG_B" || pkgb="$caller/$HOLDFAST_PKG_B"
  [[ -f "$pkgb" && "$pkgb" == *.tgz ]] || { echo "HOLDFAST_PKG_B must be a packed .tgz: $pkgb" >&2; exit 2; }
  b=("holdfast-b@file:$pkgb")
fi

# The competitors, as pinned in package.json. A plain `npm install` also removes a holdfast left
# over from an earlier run, so a stale build is never measured.
npm install --no-audit --no-fund --loglevel=error >&2

unset HOLDFAST_SKIP
if [[ -f "$pkg" && "$pkg" == *.tgz ]] || [[ -f "$pkg/package.json" && -d "$pkg/dist" ]]; then
  # --install-links: a directory is packed and copied in, as `npm pack` would ship it, rather than
  # linked (and npm never touches the package folder). --ignore-scripts: measure what was built; never build.
  npm install --no-save --install-links --ignore-scripts --no-audit --no-fund --loglevel=error "$pkg" "${b[@]}" >&2
elif [[ -d "$pkg" ]]; then
  export HOLDFAST_SKIP="not built: $(cd "$pkg" && pwd) has no dist/ (run \`bash npm/build.sh\`)"
else
  export HOLDFAST_SKIP="not built: $pkg not found"
fi

case "${BENCH_RUNTIME:-node}" in
  node) bin="${BENCH_NODE:-node}" ;;
  node24) bin="$here/../runtimes/node_modules/node/bin/node" ;;
  node26) bin="$here/../runtimes/node_modules/node26/bin/node" ;;
  bun)
    if [[ -n "${BENCH_BUN:-}" ]]; then bin="$BENCH_BUN"
    elif [[ -x "$here/../runtimes/node_modules/.bin/bun" ]]; then bin="$here/../runtimes/node_modules/.bin/bun"
    else bin=bun; fi ;;
  *) echo "BENCH_RUNTIME must be node, node24, node26 or bun, not '${BENCH_RUNTIME}'" >&2; exit 2 ;;
esac

exec "$bin" bench.mjs
