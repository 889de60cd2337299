#!/usr/bin/env bash
# What one `inspect` of a key costs Redis when the key remembers N tombstones (requests released with a
# tombstone kept, `R1`, for their ttl of an hour): `store.inspect()` runs it once per busy key, and one
# that read every live member of the key's zset (as the inspect before the fix did) was a Redis call as
# long as the tombstones were many, blocking every other client meanwhile. The locks' Lua on the
# server's clock, run by EVALSHA on a redis-server of its own: a semaphore of limit 2, a holder, N
# requests granted and released with their tombstones, a second holder, 3 waiters; then inspect 21
# times. Then a pool remembering N claim ids (24 hours each), inspected 21 times. Redis's own time of
# each (INFO commandstats). By hand, after npm/build.sh:
#   bash tests/bench/redis-lock-inspect.sh [N, default 100000]
set -euo pipefail
N=${1:-100000}
source "$(dirname "$0")/redis-pool-server.sh"
PM=$M; PZ=$Z
M='holdfast:{s:bench:k}:m'; Z='holdfast:{s:bench:k}:z'
# grace publish ttl maxHold limit channel: leases and tombstones of an hour.
L='60000 PUBLISH 3600000 0 2 chan'
acquire() { redis-cli -p "$port" EVALSHA "$sha_acquire" 2 "$M" "$Z" "$1" -1 "$L" >/dev/null; }
acquire holder
lock_tombstones "$M" "$Z" "$L" "$N"
for id in holder2 waiter1 waiter2 waiter3; do acquire "$id"; done
echo "$(redis-cli -p "$port" HLEN "$M") fields in the meta, $(redis-cli -p "$port" ZCARD "$Z") zset members"
# The last answer of 21 calls of `$@` (by EVALSHA), and the Redis time of each: median and max.
timed() {
  redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
  local before=0 after answer each=()
  for _ in $(seq 1 21); do
    answer=$(redis-cli -p "$port" EVALSHA "$@" | tr '\n' ' ')
    after=$(redis-cli -p "$port" INFO commandstats | grep -o 'cmdstat_evalsha:calls=[0-9]*,usec=[0-9]*' | sed 's/.*usec=//')
    each+=($((after - before))); before=$after
  done
  node -e '
const us = process.argv.slice(1).map(Number).sort((a, b) => a - b)
const ms = x => (x / 1000).toFixed(3)
process.stdout.write(`median ${ms(us[us.length >> 1])} ms, max ${ms(us.at(-1))} ms`)
' "${each[@]}"
  echo " (answer: ${answer% })"
}
echo "N=$N tombstones: a semaphore key's inspect (waiting, fence, held ms, ...): Redis time $(timed "$sha_inspect" 2 "$M" "$Z")"
# A pool's inspect answers the counts its hash keeps, after its reap step (itself bounded).
redis-cli -p "$port" EVALSHA "$sha" 2 "$PM" "$PZ" claim C10 "$K" held 1 0 0 1 f chan >/dev/null
pool_tombstones "$PM" "$PZ" "$N"
echo "N=$N tombstones: a pool's inspect (capacity, remaining, claims, waiting): Redis time $(timed "$sha" 2 "$PM" "$PZ" inspect c1 "$K")"
