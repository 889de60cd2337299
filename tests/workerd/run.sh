#!/usr/bin/env bash
# Tests the package in Cloudflare's workerd as users get it: `npm pack` of npm/, installed into a fresh
# wrangler project (tests/workerd: a worker and Durable Objects that use holdfast, under three
# compatibility settings), then tests/workerd/test.mjs, cloudflare.test.mjs (holdfast/cloudflare:
# HoldfastObject and workerStore) and websocket.test.mjs (connect() to HoldfastObject over WebSocket,
# with tests/remote/frames.js as a raw client) and misuse.test.mjs (tests/shared/misuse.js, by a
# connect() client of HoldfastObject) under Node 24's test runner drive it through wrangler's test harness
# (wrangler bundles the worker with the `workerd` export condition, as `wrangler dev` does, and runs it
# in workerd); then the example examples/invoice-worker, installed the same way, runs its own test.mjs.
# wrangler needs Node >= 22.12: Node 24 from tests/runtimes.
# Build the package first (npm/build.sh). wrangler, workerd and Node 24: tests/runtimes (npm ci there).
#   PKG_DIR=dir   pack this directory instead of npm/ (a built copy of it)
#   FILES="websocket"  only these test files (names without .test.mjs; test.mjs is "test"), no example
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pkg=${PKG_DIR:-$root/npm}
runtimes="$root/tests/runtimes/node_modules"
node24="$runtimes/node/bin/node"  # not .bin/node: npm may link it to node26's binary
for bin in node wrangler workerd; do
  [ -x "$runtimes/.bin/$bin" ] || { echo "no $bin in tests/runtimes: run npm ci there" >&2; exit 2; }
done
# No network beyond the registries: miniflare need not fetch Request.cf, wrangler sends nothing.
export CLOUDFLARE_CF_FETCH_ENABLED=false WRANGLER_SEND_METRICS=false WRANGLER_SEND_ERROR_REPORTS=false
export WRANGLER_MODULE="$runtimes/wrangler/wrangler-dist/cli.js"
work=$(mktemp -d "${TMPDIR:-/tmp}/holdfast-workerd.XXXXXX")
export WRANGLER_LOG_PATH="$work/wrangler-logs"
trap 'rm -rf "$work"' EXIT

(cd "$pkg" && npm pack --silent --pack-destination "$work" >/dev/null)
tarball=$(ls "$work"/holdfast-*.tgz)
echo "== packed $(basename "$tarball") ($(du -h "$tarball" | cut -f1)); node $("$node24" --version), wrangler $(cd "$runtimes/wrangler" && "$node24" -p 'require("./package.json").version'), workerd $("$runtimes/.bin/workerd" --version | awk '{print $2}')"

# A fresh wrangler project, as a user makes it, with the packed package as its dependency.
mkdir "$work/project"
cp -r "$root"/tests/workerd/. "$work/project/"
cp "$root/tests/remote/frames.js" "$work/project/"
# The differential's random scenarios (websocket.test.mjs), run in Node against the object, and what
# they import: differential.js (an answer's shape), random.js.
cp "$root/tests/shared/differential-random.js" "$root/tests/shared/differential.js" "$root/tests/shared/random.js" "$work/project/"
# The misuse list (misuse.test.mjs): run in Node against the object, and in the worker on a
# workerStore() (src/cloudflare.js, /cf/misuse).
cp "$root/tests/shared/misuse.js" "$work/project/"
cp "$root/tests/shared/misuse.js" "$work/project/src/"
cp "$root/tests/js/callers.js" "$work/project/src/"
rm -rf "$work/project/node_modules" "$work/project/.wrangler"
cd "$work/project"
printf '{ "name": "holdfast-workerd-user", "private": true, "type": "module" }\n' > package.json
npm install --no-audit --no-fund --silent "$tarball"

status=0
tests="test.mjs cloudflare.test.mjs websocket.test.mjs misuse.test.mjs"
[ -z "${FILES:-}" ] || tests=$(for f in $FILES; do [ "$f" = test ] && echo test.mjs || echo "$f.test.mjs"; done)
echo "== workerd tests: node --test" $tests "(Node 24's test runner)"
# shellcheck disable=SC2086
"$node24" --test --test-reporter=spec $tests || status=1
[ -z "${FILES:-}" ] || exit $status

# The example, its holdfast dependency pointed at the packed tarball; wrangler is tests/runtimes' own
# (WRANGLER_MODULE), so its devDependency is dropped here.
cp -r "$root/examples/invoice-worker" "$work/example"
rm -rf "$work/example/node_modules" "$work/example/.wrangler" "$work/example/package-lock.json"
cd "$work/example"
npm pkg set "dependencies.holdfast=file:$tarball"
npm pkg delete devDependencies
npm install --no-audit --no-fund --silent
echo "== example invoice-worker: node --test test.mjs (Node 24's test runner)"
"$node24" --test --test-reporter=spec test.mjs || status=1
exit $status
