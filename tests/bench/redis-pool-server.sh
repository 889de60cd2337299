# Sourced by the pool and lock benches (redis-pool-head.sh, redis-pool-reap.sh, redis-lock-*.sh): a
# redis-server of their own on a free port (shut down on exit), and the Lua of npm/dist loaded as
# scripts. Sets root, dir, port, sha (the pool's), sha_acquire, sha_renew, sha_release, sha_inspect, M Z K (the
# pool's keys and the constants every call sends), and T, the time (ms) in \`bench:clock\`, the clock
# of a Lua built with \`{ clockKey: 'bench:clock' }\`. $1: scriptsFor's options
# as JavaScript (default {}), e.g. "{ clockKey: 'bench:clock' }".
# Defines lock_tombstones and pool_tombstones (below), which fill a key with tombstones.
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=$(mktemp -d)
port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close() })')
redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save '' --appendonly no --daemonize yes --logfile "$dir/log" >/dev/null
trap 'redis-cli -p $port shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.1; done
for op in pool acquire renew release inspect; do
  node -e "import('$root/npm/dist/redis/scripts.js').then(m => process.stdout.write(m.scriptsFor(true, ${1:-{\}}).scripts.$op.source))" > "$dir/$op.lua"
  declare "sha_$op=$(redis-cli -p "$port" SCRIPT LOAD "$(cat "$dir/$op.lua")")"
done
sha=$sha_pool
M='holdfast:{p:seats}:m'; Z='holdfast:{p:seats}:z'; K='60000 PUBLISH 10000'
T=1800000000000
redis-cli -p "$port" SET bench:clock $T >/dev/null
# lock_tombstones M Z K N: N requests of the lock key whose hash and zset are M and Z (constants K)
# granted and let go with their tombstones kept (`R1`), pipelined.
lock_tombstones() {
  node -e '
const [acq, rel, M, Z, K, n] = process.argv.slice(1)
const resp = args => `*${args.length}\r\n` + args.map(a => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join("")
const out = []
for (let i = 0; i < Number(n); i++) {
  out.push(resp(["EVALSHA", acq, 2, M, Z, `r${i}`, -1, K]), resp(["EVALSHA", rel, 2, M, Z, `r${i}`, "R1", K]))
  if (out.length >= 20000) { process.stdout.write(out.join("")); out.length = 0 }
}
process.stdout.write(out.join(""))
' "$sha_acquire" "$sha_release" "$@" | redis-cli -p "$port" --pipe >/dev/null
}
# pool_tombstones M Z N: N claim ids the pool whose hash and zset are M and Z remembers, written as the
# Lua writes them (record E, deadline f a day on, in their range at 2^51).
pool_tombstones() {
  redis-cli -p "$port" EVAL "
local now = tonumber(redis.call('TIME')[1]) * 1000
for i = 1, tonumber(ARGV[1]) do
  redis.call('HSET', KEYS[1], '#t' .. i, string.format('E 1 0 %d', now + 86400000))
  redis.call('ZADD', KEYS[2], string.format('%d', 2251799813685248 + now + 86400000), 'ft' .. i)
end" 2 "$@" >/dev/null
}
