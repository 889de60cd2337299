#!/usr/bin/env bash
# Tests the `holdfast` command as users get it: `npm pack` of npm/, installed into a fresh project, and
# the tests in tests/cli run there (node:test, Node of the machine) against the installed
# node_modules/.bin/holdfast: real servers, real holders, real commands. Build the package first
# (npm/build.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/holdfast-clitest.XXXXXX")
trap 'rm -rf "$work"' EXIT

(cd "$root/npm" && npm pack --silent --pack-destination "$work" >/dev/null)
tarball=$(ls "$work"/holdfast-*.tgz)
echo "== packed $(basename "$tarball") ($(du -h "$tarball" | cut -f1))"

mkdir "$work/project"
cp "$root"/tests/cli/*.js "$work/project/"
cd "$work/project"
printf '{ "name": "holdfast-cli-user", "private": true, "type": "module" }\n' > package.json
npm install --no-audit --no-fund --silent "$tarball"
bin="$work/project/node_modules/.bin/holdfast"
[ -x "$bin" ] || { echo "the package installed no executable node_modules/.bin/holdfast"; exit 1; }
echo "== CLI tests with $bin ($("$bin" --version)) under node $(node --version)"
HOLDFAST_BIN="$bin" node --test --test-reporter=spec $(ls *.test.js)
