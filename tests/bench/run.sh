#!/usr/bin/env bash
# Runs the holdfast benchmark (method: see the header of bench.mjs).
#
#   bash tests/bench/run.sh                       # Node (`node`, or $BENCH_NODE)
#   BENCH_RUNTIME=bun bash tests/bench/run.sh     # Bun ($BENCH_BUN, else tests/runtimes's bun, else `bun`)
#   BENCH_RUNTIME=node24 (or node26) bash tests/bench/run.sh   # tests/runtimes's Node 24 (or Node 26)
#
# HOLDFAST_PKG: the holdfast package to measure, a packed .tgz or a package directory (default: ../../npm
# relative to this folder, after `bash npm/build.sh`). A relative path given by the caller is taken from
# the caller's working directory. When it is not built, the competitors still run and holdfast is listed
# as "not run: not built". HOLDFAST_PKG_B: a second build (a .tgz or a package directory), installed as
# `holdfast-b` and measured in the same run, interleaved with the others, as the adapters `holdfast-b`
# (in process and over a connection) and `holdfast-redis-b`: an A/B of two builds under the same load
# (`HOLDFAST_PKG=before.tgz HOLDFAST_PKG_B=after.tgz`; name them in BENCH_ADAPTERS). Other options
# (BENCH_ROUNDS, BENCH_SCALE, BENCH_ONLY, ...) are read by bench.mjs.
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

# The competitors, as pinned in package.json. A plain `npm install` also removes a holdfast left
# over from an earlier run, so a stale build is never measured.
npm install --no-audit --no-fund --loglevel=error >&2

unset HOLDFAST_SKIP
if [[ -f "$pkg" && "$pkg" == *.tgz ]] || [[ -f "$pkg/package.json" && -d "$pkg/dist" ]]; then
  # --install-links: a directory is packed and copied in, as `npm pack` would ship it, rather than
  # linked (and npm never touches the package folder). --ignore-scripts: measure what was built; never build.
  npm install --no-save --install-links --ignore-scripts --no-audit --no-fund --loglevel=error "$pkg" >&2
elif [[ -d "$pkg" ]]; then
  export HOLDFAST_SKIP="not built: $(cd "$pkg" && pwd) has no dist/ (run \`bash npm/build.sh\`)"
else
  export HOLDFAST_SKIP="not built: $pkg not found"
fi

# HOLDFAST_PKG_B: another build (a packed .tgz, or a package directory, packed here), unpacked as
# node_modules/holdfast-b for the adapters holdfast-b and holdfast-redis-b: an A/B of two builds in one run.
rm -rf node_modules/holdfast-b
if [[ -n "${HOLDFAST_PKG_B:-}" ]]; then
  [[ "$HOLDFAST_PKG_B" = /* ]] && pkg_b="$HOLDFAST_PKG_B" || pkg_b="$caller/$HOLDFAST_PKG_B"
  if [[ -d "$pkg_b" ]]; then
    tmp_b=$(mktemp -d)
    trap 'rm -rf "$tmp_b"' EXIT
    (cd "$pkg_b" && npm pack --silent --pack-destination "$tmp_b" >/dev/null)
    pkg_b=$(ls "$tmp_b"/*.tgz)
  fi
  mkdir -p node_modules/holdfast-b
  tar xzf "$pkg_b" -C node_modules/holdfast-b --strip-components=1
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

"$bin" bench.mjs
