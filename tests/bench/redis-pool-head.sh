#!/usr/bin/env bash
# What one ask of the claim at the head of a pool's line costs Redis when the pool remembers N ids
# (tombstones of claims released, 24 hours each) and no open claim has a ttl: the pool Lua run by
# EVALSHA on a redis-server of its own, Redis's own time per call (INFO commandstats). By hand, after
# npm/build.sh:  bash tests/bench/redis-pool-head.sh [N, default 200000]
set -euo pipefail
N=${1:-200000}
source "$(dirname "$0")/redis-pool-server.sh"
# The N tombstones, written as the Lua writes them (record E, deadline f a day on, in their range at 2^51).
pool_tombstones "$M" "$Z" "$N"
pool() { redis-cli -p "$port" EVALSHA "$sha" 2 "$M" "$Z" claim C1 "$K" "$@"; }
pool held 1 0 0 0 f chan >/dev/null        # the one unit, without a ttl
pool head 1 -1 0 0 f chan >/dev/null       # the head of the line
redis-cli -p "$port" CONFIG RESETSTAT >/dev/null
for _ in 1 2 3; do pool head 1 -1 0 0 b chan >/dev/null; done
stats=$(redis-cli -p "$port" INFO commandstats)
echo "N=$N: one ask of the head $(grep -o 'cmdstat_evalsha:calls=3,usec=[0-9]*,usec_per_call=[0-9.]*' <<<"$stats" | sed 's/.*usec_per_call=/takes /') µs of Redis," \
  "$(grep -o 'cmdstat_zrangebyscore:calls=[0-9]*' <<<"$stats" | sed 's/.*=//') ZRANGEBYSCORE in 3 asks"
