#!/usr/bin/env bash
# Crash-restart torture of fences (torture.mjs), the damaged-fence-file tests (corrupt.test.mjs), and
# the crash-restart torture of pools (pools.mjs, #16), against the built package.
#
#   bash tests/torture/run.sh                      # about 2-3 minutes: 100 kills on fileStorage,
#                                                  # 50 on a slow storage, 50 on a failing one
#   TORTURE_KILLS=1000 bash tests/torture/run.sh   # the full run: 1,000 kill -9 per storage
#   TORTURE_RUNTIME=bun bash tests/torture/run.sh  # children under Bun (or node24); default Node 20
#   TORTURE_POOL_KILLS=500                         # kills of the pools' torture (default 50)
#   HOLDFAST_PKG=path                              # the package: a directory with dist/ and wasm/
#                                                  # (default npm/, after `bash npm/build.sh`) or a .tgz
#
# The package is copied (or unpacked) into node_modules/holdfast of a temporary project, so that the
# scripts import `holdfast` as a user does, and a rebuild of npm/ during the run changes nothing.
# (Only `dist/`, `wasm/` and `package.json` are needed: nothing here loads `ws`.)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/tests/torture"
pkg=${HOLDFAST_PKG:-$root/npm}
bin="$root/tests/runtimes/node_modules/.bin"
work=$(mktemp -d "${TMPDIR:-/tmp}/holdfast-torture.XXXXXX")
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/node_modules/holdfast"
if [[ -f "$pkg" && "$pkg" == *.tgz ]]; then
  tar -xzf "$pkg" -C "$work/node_modules/holdfast" --strip-components 1
elif [[ -d "$pkg/dist" && -d "$pkg/wasm" ]]; then
  cp -r "$pkg/package.json" "$pkg/dist" "$pkg/wasm" "$work/node_modules/holdfast/"
else
  echo "no built package at $pkg (run: bash npm/build.sh)" >&2
  exit 1
fi
cp "$here"/*.mjs "$root/tests/shared/random.js" "$work/"
printf '{ "name": "holdfast-torture", "private": true, "type": "module" }\n' > "$work/package.json"
cd "$work"

case "${TORTURE_RUNTIME:-node}" in
  node | node20) export TORTURE_RUNTIME=$(command -v node) ;;
  node24) export TORTURE_RUNTIME="$root/tests/runtimes/node_modules/node/bin/node" ;;
  bun) export TORTURE_RUNTIME="$bin/bun" ;;
esac

echo "== damaged fence files (node --test corrupt.test.mjs)"
node --test --test-reporter=spec corrupt.test.mjs

echo "== crash-restart torture: children under $("$TORTURE_RUNTIME" --version)"
node torture.mjs

echo "== crash-restart torture of pools (#16): children under $("$TORTURE_RUNTIME" --version)"
TORTURE_KILLS=${TORTURE_POOL_KILLS:-50} node pools.mjs
