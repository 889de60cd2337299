#!/usr/bin/env bash
# The simulation's operation sequences through the wasm build, under Node 20, Node 24 and Bun: every
# seed's trace hash must equal the native build's (crate/sim: `traceHash`, `holdfast-sim hashes`).
#
#   bash tests/sim/run.sh
#   SIM_SEEDS=100        how many seeds (from SIM_FIRST, default 0); at least 100 for the issue's figure
#   SIM_LEN=10000        operations a seed
#   RUNTIMES="node20 node24 bun"   which runtimes (Node 24 and Bun from tests/runtimes, if installed)
#
# Needs the wasm32-unknown-unknown target and the wasm-bindgen CLI at crate/wasm's pin (tests/setup.sh
# installs both). Builds into a temporary directory; changes nothing in the tree but target/
# (or CARGO_TARGET_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
seeds=${SIM_SEEDS:-100}
first=${SIM_FIRST:-0}
len=${SIM_LEN:-10000}
runtimes=${RUNTIMES:-"node20 node24 bun"}
bin="$root/tests/runtimes/node_modules/.bin"
# Where cargo writes (CARGO_TARGET_DIR, when set: a clone sharing the machine keeps its own).
target=${CARGO_TARGET_DIR:-$root/target}
work=$(mktemp -d "${TMPDIR:-/tmp}/holdfast-sim.XXXXXX")
trap 'rm -rf "$work"' EXIT

pinned=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)"/\1/p' crate/sim/Cargo.toml)
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$pinned" ]; then
  echo "wasm-bindgen CLI $pinned needed (have: ${have:-none}); run tests/setup.sh" >&2
  exit 1
fi

echo "== native trace hashes: $seeds seeds from $first, $len operations each"
cargo build -p holdfast-sim --release --quiet --bin holdfast-sim
"$target/release/holdfast-sim" hashes "$first" "$seeds" "$len" > "$work/native.txt"
if grep -q ' fail' "$work/native.txt"; then
  grep ' fail' "$work/native.txt" >&2
  exit 1
fi

echo "== the same seeds in wasm32"
cargo build -p holdfast-sim --lib --release --quiet --target wasm32-unknown-unknown
wasm-bindgen --target nodejs --out-dir "$work/wasm" "$target/wasm32-unknown-unknown/release/holdfast_sim.wasm"

status=0
for rt in $runtimes; do
  case $rt in
    node20) cmd=(node) ;;
    node24) cmd=("$root/tests/runtimes/node_modules/node/bin/node") ;;
    bun) cmd=("$bin/bun") ;;
    *) echo "unknown runtime $rt" >&2; exit 2 ;;
  esac
  if [ "$rt" != node20 ] && [ ! -x "${cmd[0]}" ]; then
    echo "$rt: not installed (tests/runtimes), skipped"
    continue
  fi
  "${cmd[@]}" tests/sim/compare.cjs "$work/wasm" "$work/native.txt" "$len" || status=1
done
exit $status
