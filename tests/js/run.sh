#!/usr/bin/env bash
# Tests the package as users get it: `npm pack` of npm/, installed into a fresh project, and the same JS
# test files (tests/js) run there under Node 20 (the machine's), Node 24, Node 26 and Bun; then the
# examples: summaries-sqlite under Node 20 and Bun, tickets under each runtime of the run. Build the
# package first (npm/build.sh). Runtimes: tests/runtimes (npm ci there; Node 26 is its package `node26`).
#   RUNTIMES="node20 node24 node26 bun"   which to run (default: all four; RUNTIMES= runs none, only the checks)
#   EXAMPLE=0                       skip the examples
#   FILES="api pools"               only these test files (names without .test.js)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
runtimes=${RUNTIMES-"node20 node24 node26 bun"}
bin="$root/tests/runtimes/node_modules/.bin"
source "$root/tests/user-project.sh"
user_project js "$root/npm" "$root"/tests/js/*.js
if [ -n "${FILES:-}" ]; then tests=$(for f in $FILES; do echo "$f.test.js"; done); else tests=$(ls *.test.js); fi

status=0
for rt in $runtimes; do
  case $rt in
    node20) cmd=(node --test --test-reporter=spec $tests) ;;
    node24) cmd=("$root/tests/runtimes/node_modules/node/bin/node" --test --test-reporter=spec $tests) ;;
    node26) cmd=("$root/tests/runtimes/node_modules/node26/bin/node" --test --test-reporter=spec $tests) ;;
    bun) cmd=("$bin/bun" test $(printf './%s ' $tests)) ;;
    *) echo "unknown runtime $rt"; exit 2 ;;
  esac
  echo "== JS tests under $rt: $("${cmd[0]}" --version)"
  # The bundlers of bundled.test.js (esbuild, bun).
  if ! HOLDFAST_TOOLS="$bin" "${cmd[@]}" 2>&1 | sed "s/^/[$rt] /"; then status=1; fi
  # sed hides the runner's status: read it back from PIPESTATUS.
  [ "${PIPESTATUS[0]}" = 0 ] || status=1
done

# The published types: no internal member (stripInternal), and a strict user's files (tests/types: the
# package's entries, and holdfast/cloudflare's) compile against them with skipLibCheck off.
echo "== the published types"
if grep -rnE '@internal|^\s+(readonly |static |protected |private )*_[a-zA-Z]+[(:?<]' node_modules/holdfast/dist --include='*.d.ts'; then
  echo "internal members in the published types (above)"; status=1
fi
cp "$root"/tests/types/*.ts .
if ! "$root/npm/node_modules/.bin/tsc" --noEmit --strict --skipLibCheck false --module nodenext --moduleResolution nodenext \
  --target es2022 --lib es2022,esnext.disposable,dom --types node --typeRoots "$root/npm/node_modules/@types" consumer.ts cloudflare.ts; then status=1; fi
# A CommonJS project with TypeScript's default resolution for it (node10: no `exports` map) finds
# every entry's types through `typesVersions`.
if ! "$root/npm/node_modules/.bin/tsc" --noEmit --strict --skipLibCheck false --module commonjs --moduleResolution node10 \
  --target es2022 --lib es2022,esnext.disposable,dom --types node --typeRoots "$root/npm/node_modules/@types" node10.ts cloudflare-workers.d.ts; then status=1; fi
# A Node project has no DOM lib: its entries compile without it (tests/types/node-no-dom.ts).
if ! "$root/npm/node_modules/.bin/tsc" --noEmit --strict --skipLibCheck false --module nodenext --moduleResolution nodenext \
  --target es2022 --lib es2022,esnext.disposable --types node --typeRoots "$root/npm/node_modules/@types" node-no-dom.ts; then status=1; fi
# The code samples of README.md and docs/*.md compile against them too: TypeScript's strictly,
# JavaScript's checked (tests/types/doc-samples.mjs).
node "$root/tests/types/doc-samples.mjs" "$root" . >/dev/null
for lang in ts js; do
  if [ $lang = ts ]; then check=(--strict doc-sample-ioredis.d.ts doc-sample-*.ts); else check=(--allowJs --checkJs doc-sample-*.js); fi
  if ! "$root/npm/node_modules/.bin/tsc" --noEmit --skipLibCheck false --module nodenext --moduleResolution nodenext \
    --target es2022 --lib es2022,esnext.disposable,dom --types node --typeRoots "$root/npm/node_modules/@types" "${check[@]}"; then
    echo "a code sample of README.md or docs/ does not compile (above: doc-sample-FILE-LINE)"; status=1
  fi
done

# An example installed as a user would (its holdfast dependency pointed at the packed tarball), run
# under each runtime of the run that it supports (its second argument).
run_example() { # name, "runtimes it supports"
  local name=$1 supported=" $2 "
  cp -r "$root/examples/$name" "$work/$name"
  rm -rf "$work/$name/node_modules" "$work/$name/package-lock.json"
  cd "$work/$name"
  npm pkg set "dependencies.holdfast=file:$tarball"
  npm install --no-audit --no-fund --silent
  for rt in $runtimes; do
    [[ $supported == *" $rt "* ]] || continue
    case $rt in
      node20) cmd=(node index.js) ;;
      node24) cmd=("$root/tests/runtimes/node_modules/node/bin/node" index.js) ;;
      node26) cmd=("$root/tests/runtimes/node_modules/node26/bin/node" index.js) ;;
      bun) cmd=("$bin/bun" index.js) ;;
    esac
    echo "== example $name under $rt"
    if ! "${cmd[@]}" 2>&1 | sed "s/^/[$name $rt] /"; then status=1; fi
    [ "${PIPESTATUS[0]}" = 0 ] || status=1
  done
}

if [ "${EXAMPLE:-1}" != 0 ]; then
  # better-sqlite3 is built for the machine's Node 20 only.
  run_example summaries-sqlite "node20 bun"
  # 180 seats, 1,000 buyers in four processes over a connection: no native module, every runtime.
  # (Before, only examples/run.sh ran it, and CI not.)
  run_example tickets "node20 node24 node26 bun"
fi
exit $status
