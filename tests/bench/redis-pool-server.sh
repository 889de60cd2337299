# Sourced by the pool benches (redis-pool-head.sh, redis-pool-reap.sh): a redis-server of their own on
# a free port (shut down on exit), and the pool Lua of npm/dist loaded as a script. Sets root, dir,
# port, sha, and M Z K (the pool's keys and the constants every call sends). $1: scriptsFor's options
# as JavaScript (default {}), e.g. "{ clockKey: 'bench:clock' }".
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no --daemonize yes --logfile "$dir/log" >/dev/null
trap 'redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
node -e "import('$root/npm/dist/redis/scripts.js').then(m => process.stdout.write(m.scriptsFor(true, ${1:-{\}}).scripts.pool.source))" > "$dir/pool.lua"
sha=$(redis-cli -p "$port" SCRIPT LOAD "$(cat "$dir/pool.lua")")
M='holdfast:{p:seats}:m'; Z='holdfast:{p:seats}:z'; K='60000 PUBLISH 10000'
