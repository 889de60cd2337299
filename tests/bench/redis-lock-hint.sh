#!/usr/bin/env bash
# What a waiter's ask costs Redis on a semaphore whose key remembers N tombstones (requests released
# with a tombstone kept, `R1`): a waiter among the next `limit` in line is told the ms to the earliest
# holder's deadline (`firstHolder` in scripts/common.ts), found past every earlier deadline. The locks'
# Lua, reading its clock from a Redis key (as the model test does), run by EVALSHA on a redis-server of
# its own: a semaphore of limit 2, a holder whose lease ends after every tombstone, N requests granted
# and released with their tombstones at one time, then a waiter asks (and asks again 20 times, as its
# heartbeats do). Redis's own time of each ask (INFO commandstats). By hand, after npm/build.sh:
#   bash tests/bench/redis-lock-hint.sh [N, default 100000]
set -euo pipefail
N=${1:-100000}
source "$(dirname "$0")/redis-pool-server.sh" "{ clockKey: 'bench:clock' }"
M='holdfast:{s:bench:k}:m'; Z='holdfast:{s:bench:k}:z'
# grace publish ttl maxHold limit channel: tombstones last 100 s, the holders' leases 1,000 s.
SHORT='60000 PUBLISH 100000 0 2 chan'; LONG='60000 PUBLISH 1000000 0 2 chan'
redis-cli -p "$port" EVALSHA "$sha_acquire" 2 "$M" "$Z" holder -1 "$LONG" >/dev/null
lock_tombstones "$M" "$Z" "$SHORT" "$N"
redis-cli -p "$port" EVALSHA "$sha_acquire" 2 "$M" "$Z" holder2 -1 "$LONG" >/dev/null
echo "$(redis-cli -p "$port" HLEN "$M") fields in the meta, $(redis-cli -p "$port" ZCARD "$Z") zset members"
redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
usec() { redis-cli -p "$port" INFO commandstats | grep -o 'cmdstat_evalsha:calls=[0-9]*,usec=[0-9]*' | sed 's/.*usec=//'; }
before=0; each=()
for i in $(seq 1 21); do
  answer=$(redis-cli -p "$port" EVALSHA "$sha_acquire" 2 "$M" "$Z" waiter -1 "$SHORT" | tr '\n' ' ')
  after=$(usec); each+=($((after - before))); before=$after
done
node -e '
const [n, answer, ...us] = process.argv.slice(1)
const sorted = us.map(Number).sort((a, b) => a - b)
const ms = x => (x / 1000).toFixed(3)
console.log(`N=${n} tombstones before the first holder: a waiter at the head asked ${us.length} times (answer ${answer}); Redis time an ask: median ${ms(sorted[sorted.length >> 1])} ms, max ${ms(sorted.at(-1))} ms`)
' "$N" "$answer" "${each[@]}"
