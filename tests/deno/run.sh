#!/usr/bin/env bash
# Tests the package under Deno 2 as users get it: `npm pack` of npm/, installed into a fresh project
# (a package.json and node_modules, which Deno resolves `npm:holdfast` and `holdfast` from), then:
#   1. tests/deno/no-flags.test.ts under `deno test` with no permission flag (the in-process API,
#      denoKvStorage on an in-memory KV, fileStorage's and serve()'s errors naming the flags they need);
#   2. tests/deno/storage.test.ts, tests/deno/remote.test.ts and the package's JS suite (tests/js, the
#      remote-* tests included) under `deno test`, with the permissions those tests need: files in a temp
#      dir (--allow-read/--allow-write, --allow-env for os.tmpdir()), --allow-run (tests that run stores
#      in processes of their own) and --allow-net (fileStorage's Unix socket; store.serve() and connect()
#      over the package's server (node:http and ws under Deno) and Deno's own WebSocket client, on 127.0.0.1 and on Unix sockets).
# Build the package first (npm/build.sh). Deno comes from tests/runtimes (npm install there).
#   PKG_DIR=dir   pack this directory instead of npm/ (a built copy of it)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
pkg=${PKG_DIR:-$root/npm}
deno="$root/tests/runtimes/node_modules/.bin/deno"
[ -x "$deno" ] || { echo "no Deno: run npm ci in tests/runtimes" >&2; exit 2; }
export NO_COLOR=1 DENO_NO_UPDATE_CHECK=1
# A fresh project, as a Deno user with a package.json makes it. @types/node lets Deno type-check the
# TypeScript tests, which import node:assert (in a package.json project Deno takes it from node_modules).
echo "== $("$deno" --version | head -1)"
types_node=$(cd "$root/npm" && node -p 'require("./package.json").devDependencies["@types/node"]')
source "$root/tests/user-project.sh"
user_project deno "$pkg" "$root"/tests/js/*.js "$root"/tests/deno/*.ts -- "@types/node@$types_node"
# Not bundled.test.js: it bundles for Node and Bun, whose entries read the wasm from a file (Deno's
# embeds it), and runs the bundles with node or bun.
js_tests=$(ls *.test.js | grep -v '^bundled\.test\.js$')

passed=0
failed=0
status=0
run() { # label, deno test arguments...
  local label=$1 out="$work/$1.out"
  shift
  echo "== deno test ($label): deno test $*"
  set +e
  "$deno" test "$@" 2>&1 | tee "$out" | sed "s/^/[deno $label] /"
  local rc=${PIPESTATUS[0]}
  set -e
  [ "$rc" = 0 ] || status=1
  # Deno's summary: "ok | 45 passed | 0 failed (10s)" (or "FAILED | ...").
  local line
  line=$(grep -E '^(ok|FAILED) \| [0-9]+ passed' "$out" | tail -1 || true)
  if [ -z "$line" ]; then
    echo "[deno $label] no summary line: the run did not finish"
    status=1
    return
  fi
  passed=$((passed + $(sed -E 's/.*\| ([0-9]+) passed.*/\1/' <<<"$line")))
  failed=$((failed + $(sed -E 's/.*\| ([0-9]+) failed.*/\1/' <<<"$line")))
}

run no-flags --unstable-kv no-flags.test.ts
run storage+js --unstable-kv --allow-read --allow-write --allow-env --allow-run --allow-net $(ls *.test.ts | grep -v '^no-flags') $js_tests

echo "deno: $passed passed, $failed failed"
[ "$failed" = 0 ] || status=1
exit $status
