#!/usr/bin/env bash
# The Redis tests (tests/redis): `holdfast/redis` against real redis-server processes that the tests
# start themselves, each on a free loopback port with its own temporary directory (redis-server from
# Debian's package, installed by tests/redis/install.sh when missing). Like tests/remote/run.sh, it
# tests the package as users get it: `npm pack` of npm/, installed into a fresh project with ioredis and
# node-redis (`redis`) from npm. The files that test what differs by runtime and client (contracts,
# unreachable, pools, client-options) run under each runtime with each client; the others (processes, restart, idle-keys)
# start agent processes on the runtimes and clients each test names, and run once, in the first pair.
# Build the package first (npm/build.sh). Runtimes: tests/runtimes (npm install there).
#   RUNTIMES="node20 node24 bun"    which runners to run the test files under (default: all three)
#   CLIENTS="ioredis node-redis bun"  which clients (default: all three; bun, Bun's own RedisClient, under Bun only)
#   FILES="contracts"               only these test files (names without .test.js)
#   IOREDIS=5  NODE_REDIS=5         the versions installed from npm
#   EXAMPLE=0                       skip examples/summaries-redis (run under Node 24 and Bun)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
runtimes=${RUNTIMES:-"node20 node24 bun"}
clients=${CLIENTS:-"ioredis node-redis bun"}
bin="$root/tests/runtimes/node_modules/.bin"
bash "$root/tests/redis/install.sh"
source "$root/tests/user-project.sh"
user_project redis "$root/npm" "$root"/tests/redis/*.js -- "ioredis@${IOREDIS:-5}" "redis@${NODE_REDIS:-5}"
each="contracts.test.js unreachable.test.js pools.test.js client-options.test.js"
if [ -n "${FILES:-}" ]; then all=$(for f in $FILES; do echo "$f.test.js"; done); each=$all; else all=$(ls *.test.js); fi

export HOLDFAST_NODE20=$(command -v node) HOLDFAST_NODE24="$root/tests/runtimes/node_modules/node/bin/node" HOLDFAST_BUN="$bin/bun"
echo "== $(redis-server --version | cut -d' ' -f1-3); ioredis $(node -p 'require("ioredis/package.json").version'), redis $(node -p 'require("redis/package.json").version')"
status=0
first=1
for rt in $runtimes; do
  for client in $clients; do
    # Bun's own client exists under Bun alone; it runs the files of each pair, never the whole first run.
    if [ "$client" = bun ] && [ "$rt" != bun ]; then continue; fi
    if [ $first = 1 ] && [ "$client" != bun ]; then tests=$all; first=0; else tests=$each; fi
    case $rt in
      node20) cmd=(node --test --test-concurrency=1 --test-reporter=spec $tests) ;;
      node24) cmd=("$root/tests/runtimes/node_modules/node/bin/node" --test --test-concurrency=1 --test-reporter=spec $tests) ;;
      bun) cmd=("$bin/bun" test --timeout 120000 $(printf './%s ' $tests)) ;;
      *) echo "unknown runtime $rt"; exit 2 ;;
    esac
    echo "== redis tests under $rt ($("${cmd[0]}" --version)) with $client: $tests" | tr '\n' ' '; echo
    if ! HOLDFAST_REDIS_CLIENT=$client "${cmd[@]}" 2>&1 | sed "s/^/[redis $rt $client] /"; then status=1; fi
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  done
done

if [ "${EXAMPLE:-1}" != 0 ]; then
  # examples/summaries-redis, installed the same way (its holdfast pointed at the packed tarball), under
  # Node 24 and Bun: SQLite is node:sqlite or bun:sqlite. It starts its own redis-server.
  cp -r "$root/examples/summaries-redis" "$work/example"
  rm -rf "$work/example/node_modules" "$work/example/package-lock.json"
  cd "$work/example"
  npm pkg set "dependencies.holdfast=file:$tarball"
  npm install --no-audit --no-fund --silent
  for rt in node24 bun; do
    echo "== example summaries-redis under $rt"
    if ! "$bin/$([ $rt = node24 ] && echo node || echo bun)" index.js 2>&1 | sed "s/^/[example $rt] /"; then status=1; fi
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  done
fi
exit $status
