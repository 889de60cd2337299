#!/usr/bin/env bash
# What the first call on a key of a lock costs Redis when N deadlines came due together: N tombstones
# (requests released with a tombstone kept, `R1`), N holders of a semaphore of limit N whose leases
# ran out (their app servers were down), or N waiters (10,000 at most a key) whose waits ran out. The
# locks' Lua, reading its clock from a Redis key (as the model test does), run by EVALSHA on a
# redis-server of its own: the requests made at one time through the Lua itself, the clock moved past
# their deadlines, then a new request asked (wait 0) until it answers something else than `{'a'}` (a
# call that could not reap everything due: ask again). Redis's own time of each call (INFO
# commandstats). By hand, after npm/build.sh:
#   bash tests/bench/redis-lock-reap.sh [N, default 100000] [tombs|holders|waiters, default tombs]
set -euo pipefail
N=${1:-100000}
KIND=${2:-tombs}
source "$(dirname "$0")/redis-pool-server.sh" "{ clockKey: 'bench:clock' }"
M='holdfast:{s:bench:k}:m'; Z='holdfast:{s:bench:k}:z'
# grace publish ttl maxHold limit channel: leases and tombstones of 1 s.
LIMIT=$([ "$KIND" = holders ] && echo "$N" || echo 1)
K="60000 PUBLISH 1000 0 $LIMIT chan"
# Waiters wait behind a holder whose lease lasts 1,000 s; their waits last 1 s.
[ "$KIND" = waiters ] && redis-cli -p "$port" EVALSHA "$sha_acquire" 2 "$M" "$Z" holder -1 "60000 PUBLISH 1000000 0 1 chan" >/dev/null
node -e '
const [acq, rel, M, Z, K, n, kind] = process.argv.slice(1)
const resp = args => `*${args.length}\r\n` + args.map(a => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join("")
const out = []
for (let i = 0; i < Number(n); i++) {
  if (kind === "tombs") out.push(resp(["EVALSHA", acq, 2, M, Z, `r${i}`, -1, K]), resp(["EVALSHA", rel, 2, M, Z, `r${i}`, "R1", K]))
  else out.push(resp(["EVALSHA", acq, 2, M, Z, `r${i}`, kind === "waiters" ? 1000 : -1, K]))
  if (out.length >= 20000) { process.stdout.write(out.join("")); out.length = 0 }
}
process.stdout.write(out.join(""))
' "$sha_acquire" "$sha_release" "$M" "$Z" "$K" "$N" "$KIND" | redis-cli -p "$port" --pipe >/dev/null
echo "$(redis-cli -p "$port" HLEN "$M") fields in the meta, $(redis-cli -p "$port" ZCARD "$Z") zset members"
redis-cli -p "$port" SET bench:clock $((T + 2000)) >/dev/null
redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
usec() { redis-cli -p "$port" INFO commandstats | grep -o 'cmdstat_evalsha:calls=[0-9]*,usec=[0-9]*' | sed 's/.*usec=//'; }
before=0; each=()
for _ in $(seq 1 100000); do
  answer=$(redis-cli -p "$port" EVALSHA "$sha_acquire" 2 "$M" "$Z" probe 0 "$K" | tr '\n' ' ')
  after=$(usec); each+=($((after - before))); before=$after
  [ "$answer" != "a " ] && break
done
node -e '
const [n, kind, answer, ...us] = process.argv.slice(1)
const sorted = us.map(Number).sort((a, b) => a - b), sum = sorted.reduce((a, b) => a + b, 0)
const ms = x => (x / 1000).toFixed(2)
console.log(`N=${n} ${kind} due together: ${us.length} calls until one answered (${answer.trim()}); Redis time a call: median ${ms(sorted[sorted.length >> 1])} ms, max ${ms(sorted.at(-1))} ms; ${ms(sum)} ms in all`)
' "$N" "$KIND" "$answer" "${each[@]}"
echo "left: $(redis-cli -p "$port" HLEN "$M") fields in the meta, $(redis-cli -p "$port" ZCARD "$Z") zset members"
