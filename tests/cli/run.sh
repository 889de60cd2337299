#!/usr/bin/env bash
# Tests the `holdfast` command as users get it: `npm pack` of npm/, installed into a fresh project, and
# the tests in tests/cli run there (node:test) against the installed node_modules/.bin/holdfast: real
# servers, real holders, real commands. The command runs under the `node` first on PATH (its shebang),
# so each runtime is put first on PATH, and the tests run under it too. Build the package first
# (npm/build.sh).
#   RUNTIMES="node20 node26"   which Nodes (default both: Node 20 the machine's, Node 26 from tests/runtimes)
#   FILES="hold serve"         only these test files (names without .test.js). Without it, Node 20 runs
#                              them all and Node 26 the two whose work differs by runtime (processes,
#                              signals, sockets, files: hold and serve), not help, errors and inspect,
#                              which only parse and print: that keeps the suite's time from doubling.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
runtimes=${RUNTIMES:-"node20 node26"}
source "$root/tests/user-project.sh"
user_project cli "$root/npm" "$root"/tests/cli/*.js
bin="$work/project/node_modules/.bin/holdfast"
[ -x "$bin" ] || { echo "the package installed no executable node_modules/.bin/holdfast"; exit 1; }
status=0
for rt in $runtimes; do
  case $rt in
    node20) node=$(command -v node); all=1 ;;
    node26) node="$root/tests/runtimes/node_modules/node26/bin/node"; all=0 ;;
    *) echo "unknown runtime $rt"; exit 2 ;;
  esac
  if [ -n "${FILES:-}" ]; then tests=$(for f in $FILES; do echo "$f.test.js"; done)
  elif [ $all = 1 ]; then tests=$(ls *.test.js)
  else tests="hold.test.js serve.test.js"; fi
  # A missing runtime would leave a dangling link below, and PATH would find the machine's node instead.
  [ -x "$node" ] || { echo "no $rt at $node: run tests/setup.sh"; exit 1; }
  # A directory whose `node` is this runtime, first on PATH: the command's `#!/usr/bin/env node` finds it.
  mkdir -p "$work/path-$rt" && ln -sf "$node" "$work/path-$rt/node"
  echo "== CLI tests with $bin ($("$bin" --version)) under node $("$node" --version): $(echo $tests)"
  if ! PATH="$work/path-$rt:$PATH" HOLDFAST_BIN="$bin" node --test --test-reporter=spec $tests 2>&1 | sed "s/^/[cli $rt] /"; then status=1; fi
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
done
exit $status
