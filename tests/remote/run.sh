#!/usr/bin/env bash
# The remote tests (tests/remote): leases over a connection (LOCK-05) with real processes and real
# sockets on 127.0.0.1 — a server process, client processes on Node 20, Node 24 and Bun, a TCP proxy to
# drop connections, kill -9, SIGSTOP/SIGCONT, raw WebSocket clients sending junk. Like
# tests/js/run.sh, it tests the package as users get it: `npm pack` of npm/, installed into a fresh
# project. The test files run under Node 20 (the machine's node) and again under Bun (`bun test`), where
# the server, the proxy and the in-process clients run on Bun too; the client processes they start use
# the runtime each test names (Node 20, 24, 26 or Bun: Node 26 is a client in the contention, reconnect
# and stalled-holder tests and a server in the FIFO one — the runtime-dependent part — rather than a
# third runner of every file, which would add half the suite's time; RUNTIMES=node26 runs them all). SQLite is node:sqlite (Node 24) and bun:sqlite (Bun): nothing to build.
# Build the package first (npm/build.sh). Runtimes: tests/runtimes (npm install there).
#   RUNTIMES="node20 bun"   which runners to run the test files under (default: both; node24, node26 too)
#   FILES="lock05-endings"  only these test files (names without .test.js)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
runtimes=${RUNTIMES:-"node20 bun"}
bin="$root/tests/runtimes/node_modules/.bin"
source "$root/tests/user-project.sh"
# ws is holdfast's own dependency; the raw test clients import it too.
user_project remote "$root/npm" "$root"/tests/remote/*.js
if [ -n "${FILES:-}" ]; then tests=$(for f in $FILES; do echo "$f.test.js"; done); else tests=$(ls *.test.js); fi

export HOLDFAST_NODE20=$(command -v node) HOLDFAST_NODE24="$root/tests/runtimes/node_modules/node/bin/node" HOLDFAST_NODE26="$root/tests/runtimes/node_modules/node26/bin/node" HOLDFAST_BUN="$bin/bun"
status=0
for rt in $runtimes; do
  case $rt in
    node20) cmd=(node --test --test-concurrency=1 --test-reporter=spec $tests) ;;
    node24) cmd=("$HOLDFAST_NODE24" --test --test-concurrency=1 --test-reporter=spec $tests) ;;
    node26) cmd=("$HOLDFAST_NODE26" --test --test-concurrency=1 --test-reporter=spec $tests) ;;
    bun) cmd=("$bin/bun" test --timeout 60000 $(printf './%s ' $tests)) ;;
    *) echo "unknown runtime $rt"; exit 2 ;;
  esac
  echo "== remote tests under $rt: $("${cmd[0]}" --version) (clients: node $("$HOLDFAST_NODE20" --version), node $("$HOLDFAST_NODE24" --version), node $("$HOLDFAST_NODE26" --version), bun $("$HOLDFAST_BUN" --version))"
  if ! "${cmd[@]}" 2>&1 | sed "s/^/[remote $rt] /"; then status=1; fi
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
done
exit $status
