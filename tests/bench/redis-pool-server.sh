# Sourced by the pool and lock benches (redis-pool-head.sh, redis-pool-reap.sh, redis-lock-*.sh): a
# redis-server of their own on a free port (shut down on exit), and the Lua of npm/dist loaded as
# scripts. Sets root, dir, port, sha (the pool's), sha_acquire, sha_renew, sha_release, M Z K (the
# pool's keys and the constants every call sends), and T, the time (ms) in \`bench:clock\`, the clock
# of a Lua built with \`{ clockKey: 'bench:clock' }\`. $1: scriptsFor's options
# as JavaScript (default {}), e.g. "{ clockKey: 'bench:clock' }".
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no --daemonize yes --logfile "$dir/log" >/dev/null
trap 'redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
for op in pool acquire renew release; do
  node -e "import('$root/npm/dist/redis/scripts.js').then(m => process.stdout.write(m.scriptsFor(true, ${1:-{\}}).scripts.$op.source))" > "$dir/$op.lua"
  declare "sha_$op=$(redis-cli -p "$port" SCRIPT LOAD "$(cat "$dir/$op.lua")")"
done
sha=$sha_pool
M='holdfast:{p:seats}:m'; Z='holdfast:{p:seats}:z'; K='60000 PUBLISH 10000'
T=1800000000000
redis-cli -p "$port" SET bench:clock $T >/dev/null
