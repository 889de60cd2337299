#!/usr/bin/env bash
# Installs what building and testing holdfast needs, skipping what is already there, then builds the
# package (npm/build.sh). Safe to run again and again.
#   - the wasm32-unknown-unknown target (rustup)
#   - the wasm-bindgen CLI at exactly the version crate/wasm/Cargo.toml pins (cargo install, ~5 min once)
#   - the package's dev dependencies (TypeScript), and Node 24, Node 26, Bun, Deno, wrangler and workerd
#     from npm (tests/runtimes; Node 26 is its package `node26`, an alias of `node@26`)
#   - redis-server, redis-sentinel and redis-cli from Debian's packages (tests/redis/install.sh)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
say() { printf '== %s\n' "$*"; }
# `npm ci` in a folder, its errors shown, tried once more after a failure (a registry's hiccup on a
# fresh machine once failed a whole run here, silently).
npm_ci() {
  (cd "$1" && npm ci --no-audit --no-fund --loglevel=error) && return 0
  echo "npm ci in $1 failed; trying once more in 10 s" >&2
  sleep 10
  (cd "$1" && npm ci --no-audit --no-fund --loglevel=error)
}

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

pinned=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)"/\1/p' crate/wasm/Cargo.toml)
[ -n "$pinned" ] || { echo "no exact wasm-bindgen pin in crate/wasm/Cargo.toml" >&2; exit 1; }
have=$(wasm-bindgen --version 2>/dev/null | awk '{print $2}' || true)
if [ "$have" != "$pinned" ]; then
  say "installing wasm-bindgen-cli $pinned (have: ${have:-none})"
  cargo install wasm-bindgen-cli --version "$pinned" --force
fi

if [ ! -x npm/node_modules/.bin/tsc ]; then
  say "installing the package's dev dependencies"
  npm_ci npm
fi

missing=0
for tool in bun deno wrangler workerd; do [ -x "tests/runtimes/node_modules/.bin/$tool" ] || missing=1; done
[ -x tests/runtimes/node_modules/node/bin/node ] || missing=1
# Node 24 and Node 26 both bring a `node` bin, and npm links either one into .bin: each is run from
# its own package's folder (node_modules/node/bin/node, node_modules/node26/bin/node), never from .bin.
[ -x tests/runtimes/node_modules/node26/bin/node ] || missing=1
if [ "$missing" = 1 ]; then
  say "installing Node 24, Node 26, Bun, Deno, wrangler and workerd from npm"
  npm_ci tests/runtimes
fi

bash tests/redis/install.sh   # redis-server, redis-sentinel, redis-cli for the Redis tests (Debian's), when missing

say "building the package"
bash npm/build.sh
