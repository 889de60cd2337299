#!/usr/bin/env bash
# The Redis tests (tests/redis): `holdfast/redis` against real redis-server processes that the tests
# start themselves, each on a free loopback port with its own temporary directory (redis-server from
# Debian's package, installed by tests/redis/install.sh when missing). Like run-remote-tests.sh, it
# tests the package as users get it: `npm pack` of npm/, installed into a fresh project with ioredis and
# node-redis (`redis`) from npm. Every test file runs under each runtime with each client; the agent
# processes that multi-process tests start use the runtime each test names.
# Build the package first (npm/build.sh). Runtimes: tests/runtimes (npm install there).
#   RUNTIMES="node20 node24 bun"    which runners to run the test files under (default: all three)
#   CLIENTS="ioredis node-redis"    which clients (default: both)
#   FILES="contracts"               only these test files (names without .test.js)
#   IOREDIS=5  NODE_REDIS=5         the versions installed from npm
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runtimes=${RUNTIMES:-"node20 node24 bun"}
clients=${CLIENTS:-"ioredis node-redis"}
bin="$root/tests/runtimes/node_modules/.bin"
bash "$root/tests/redis/install.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/holdfast-redistest.XXXXXX")
trap 'rm -rf "$work"' EXIT

(cd "$root/npm" && npm pack --silent --pack-destination "$work" >/dev/null)
tarball=$(ls "$work"/holdfast-*.tgz)
echo "== packed $(basename "$tarball") ($(du -h "$tarball" | cut -f1))"

mkdir "$work/project"
cp "$root"/tests/redis/*.js "$work/project/"
cd "$work/project"
printf '{ "name": "holdfast-redis-user", "private": true, "type": "module" }\n' > package.json
npm install --no-audit --no-fund --silent "$tarball" "ioredis@${IOREDIS:-5}" "redis@${NODE_REDIS:-5}"
if [ -n "${FILES:-}" ]; then tests=$(for f in $FILES; do echo "$f.test.js"; done); else tests=$(ls *.test.js); fi

export HOLDFAST_NODE20=$(command -v node) HOLDFAST_NODE24="$bin/node" HOLDFAST_BUN="$bin/bun"
echo "== $(redis-server --version | cut -d' ' -f1-3); ioredis $(node -p 'require("ioredis/package.json").version'), redis $(node -p 'require("redis/package.json").version')"
status=0
for rt in $runtimes; do
  case $rt in
    node20) cmd=(node --test --test-concurrency=1 --test-reporter=spec $tests) ;;
    node24) cmd=("$bin/node" --test --test-concurrency=1 --test-reporter=spec $tests) ;;
    bun) cmd=("$bin/bun" test --timeout 120000 $(printf './%s ' $tests)) ;;
    *) echo "unknown runtime $rt"; exit 2 ;;
  esac
  for client in $clients; do
    echo "== redis tests under $rt ($("${cmd[0]}" --version)) with $client"
    if ! HOLDFAST_REDIS_CLIENT=$client "${cmd[@]}" 2>&1 | sed "s/^/[redis $rt $client] /"; then status=1; fi
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  done
done
exit $status
