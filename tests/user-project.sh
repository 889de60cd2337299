# Sourced by the test runners: the package as users get it. `user_project NAME PKG_DIR FILE... [-- DEP...]`
# packs PKG_DIR (`npm pack`), makes a fresh project in a temporary directory (removed on exit) with the
# test FILEs (and tests/shared/*.js) copied in and the packed tarball installed, with any further npm DEPs, as a user would; then
# cds into it. Sets `work` (the temporary directory) and `tarball` (the packed package).
user_project() {
  local name=$1 pkg=$2
  shift 2
  local files=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do files+=("$1"); shift; done
  [ "${1:-}" = -- ] && shift
  work=$(mktemp -d "${TMPDIR:-/tmp}/holdfast-$name.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  (cd "$pkg" && npm pack --silent --pack-destination "$work" >/dev/null)
  tarball=$(ls "$work"/holdfast-*.tgz)
  echo "== packed $(basename "$tarball") ($(du -h "$tarball" | cut -f1))"
  mkdir "$work/project"
  # The suites' shared helpers (tests/shared) beside the suite's own files.
  cp "$(dirname "${BASH_SOURCE[0]}")"/shared/*.js "${files[@]}" "$work/project/"
  cd "$work/project"
  printf '{ "name": "holdfast-%s-user", "private": true, "type": "module" }\n' "$name" > package.json
  npm install --no-audit --no-fund --silent "$tarball" "$@"
}
