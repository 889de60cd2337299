#!/usr/bin/env bash
# Every test of holdfast; this is what .ci/run runs. From a clean checkout it first installs what is
# missing (tests/setup.sh), then:
#   1. Rust: cargo fmt --check, clippy -D warnings (native and wasm32), cargo test (engine contracts,
#      the wire corpus, and the simulation: 1,000 seeds x 10,000 operations), and the same op
#      sequences in wasm under Node and Bun giving the native trace hashes
#   2. TypeScript: strict typecheck of the package, Biome's format and lint check, and `npm test` in
#      npm/ (unit tests from source, the layout's no-circle check among them)
#   3. the package as users get it (npm pack, installed into a fresh project): the JS tests under
#      Node 20, Node 24, Node 26, Bun and Deno, the SQLite fence example under Node 20 and Bun, and the
#      package in Cloudflare workerd (wrangler)
#   4. holdfast/redis against real redis-servers the tests start (Debian's redis-server), with ioredis
#      and node-redis, under Node 20, Node 24 and Bun
#   5. crash-restart torture of fences (200 kill -9 restarts; TORTURE_KILLS=1000 for the full run)
#   6. a short benchmark run, for its correctness checks (FIFO, exclusion); speeds are printed, not judged;
#      and the unit tests of the benchmark's ratio intervals (tests/bench/interval.test.mjs)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf '\n== %s\n' "$*"; }

bash tests/setup.sh

say "cargo fmt, clippy"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --quiet -- -D warnings
cargo clippy -p holdfast-wasm --target wasm32-unknown-unknown --quiet -- -D warnings
cargo clippy -p holdfast-sim --lib --target wasm32-unknown-unknown --quiet -- -D warnings

say "cargo test"
cargo test --workspace --quiet 2>&1

say "the simulation's op sequences in wasm give the native trace hashes (Node 20, Node 24, Bun)"
bash tests/sim/run.sh

say "TypeScript (strict), Biome (format and lint), and the unit tests of the pure modules from source (npm test)"
(cd npm && npx tsc -p tsconfig.json --noEmit && npx biome check && npm test --silent)

say "the packed package under Node 20, Node 24, Node 26 and Bun"
bash tests/js/run.sh

say "leases over a connection between real processes (Node 20, Node 24, Node 26, Bun)"
bash tests/remote/run.sh

say "holdfast/redis against real redis-servers (ioredis and node-redis; Node 20, Node 24, Bun)"
bash tests/redis/run.sh

say "crash-restart torture of fences (kill -9; fileStorage, slow and flaky storages)"
bash tests/torture/run.sh

say "the CLI, installed from the packed package (Node 20; Node 26 on the hold and serve tests)"
bash tests/cli/run.sh

say "the packed package under Deno"
bash tests/deno/run.sh

say "the packed package in Cloudflare workerd (wrangler, Node 24)"
bash tests/workerd/run.sh

say "benchmark smoke run (correctness checks only), and the benchmark's ratio intervals"
node --test tests/bench/interval.test.mjs
BENCH_ROUNDS=1 BENCH_SCALE=0.1 BENCH_ROUNDS_OUT=/tmp/holdfast-bench-rounds.json HOLDFAST_PKG="$root/npm" \
  bash tests/bench/run.sh >/tmp/holdfast-bench-smoke.txt 2>&1 || {
  cat /tmp/holdfast-bench-smoke.txt
  exit 1
}
# Every round's speeds, as BENCH_ROUNDS_OUT writes them: one round of each workload for each adapter.
node -e '
const { rounds } = JSON.parse(require("fs").readFileSync("/tmp/holdfast-bench-rounds.json", "utf8"))
const bad = ["W1", "W2", "W3", "W4", "W5"].filter(w => !(rounds[w]?.holdfast?.length === 1 && rounds[w].holdfast[0] > 0))
if (bad.length) throw new Error(`BENCH_ROUNDS_OUT: no speed of holdfast in one round of ${bad.join(", ")}`)
'
node tests/bench/rounds.mjs /tmp/holdfast-bench-rounds.json W1
grep -E '^(result|W[1-5] )' /tmp/holdfast-bench-smoke.txt || true
say "all passed"
