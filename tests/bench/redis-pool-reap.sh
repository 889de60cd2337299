#!/usr/bin/env bash
# What the first call on a pool costs Redis when N deadlines came due together: N tombstones (ids
# remembered 24 hours) or N ttls. The pool Lua, built to read its clock from a Redis key (as the model
# test does), run by EVALSHA on a redis-server of its own: N claims made (and released, for tombstones)
# at one time through the Lua itself, the clock moved past their deadlines, then `remaining` asked
# until it answers a number (a call that could not reap everything due answers `{'a'}`: ask again).
# Redis's own time of each call (INFO commandstats). By hand, after npm/build.sh:
#   bash tests/bench/redis-pool-reap.sh [N, default 200000] [tombs|ttls, default tombs]
set -euo pipefail
N=${1:-200000}
KIND=${2:-tombs}
source "$(dirname "$0")/redis-pool-server.sh" "{ clockKey: 'bench:clock' }"
# The N claims (and their releases), through the Lua, pipelined.
node -e '
const [sha, M, Z, K, n, kind] = process.argv.slice(1)
const resp = args => `*${args.length}\r\n` + args.map(a => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join("")
const out = []
for (let i = 0; i < Number(n); i++) {
  const id = `order-${i}`
  // claim id n wait ttl remember mode chan
  if (kind === "tombs") out.push(resp(["EVALSHA", sha, 2, M, Z, "claim", `c${n}`, K, id, 1, 0, 0, 1, "f", "chan"]), resp(["EVALSHA", sha, 2, M, Z, "release", `c${n}`, K, id]))
  else out.push(resp(["EVALSHA", sha, 2, M, Z, "claim", `c${n}`, K, id, 1, 0, 1000, 0, "f", "chan"]))
  if (out.length >= 20000) { process.stdout.write(out.join("")); out.length = 0 }
}
process.stdout.write(out.join(""))
' "$sha" "$M" "$Z" "$K" "$N" "$KIND" | redis-cli -p "$port" --pipe >/dev/null
echo "$(redis-cli -p "$port" HLEN "$M") records, $(redis-cli -p "$port" ZCARD "$Z") zset members; remaining $(redis-cli -p "$port" EVALSHA "$sha" 2 "$M" "$Z" remaining "c$N" "$K")"
redis-cli -p "$port" SET bench:clock $((T + 86400000 + 1000)) >/dev/null
redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
usec() { redis-cli -p "$port" INFO commandstats | grep -o 'cmdstat_evalsha:calls=[0-9]*,usec=[0-9]*' | sed 's/.*usec=//'; }
# Each call's µs: the growth of EVALSHA's usec in INFO commandstats across it.
calls=0; before=0; each=()
for _ in $(seq 1 100000); do
  calls=$((calls + 1))
  answer=$(redis-cli -p "$port" EVALSHA "$sha" 2 "$M" "$Z" remaining "c$N" "$K")
  after=$(usec); each+=($((after - before))); before=$after
  [[ "$answer" =~ ^[0-9]+$ ]] && break
done
node -e '
const [n, kind, answer, ...us] = process.argv.slice(1)
const sorted = us.map(Number).sort((a, b) => a - b), sum = sorted.reduce((a, b) => a + b, 0)
const ms = x => (x / 1000).toFixed(2)
console.log(`N=${n} ${kind} due together: ${us.length} calls until one answered (remaining ${answer}); Redis time a call: median ${ms(sorted[sorted.length >> 1])} ms, max ${ms(sorted.at(-1))} ms; ${ms(sum)} ms in all`)
' "$N" "$KIND" "$answer" "${each[@]}"
echo "left: $(redis-cli -p "$port" HLEN "$M") records, $(redis-cli -p "$port" ZCARD "$Z") zset members"
