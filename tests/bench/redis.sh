#!/usr/bin/env bash
# Makes sure `redis-server` is there for the remote workloads (R1-R3) of the benchmark, and prints the
# path of the binary on its last line. bench.mjs calls this; it then starts redis-server itself (on a
# free port on 127.0.0.1, no persistence) and stops it at the end.
#
# Installs Debian's package when redis-server is not on PATH (as root: `apt-get install`). Its package
# scripts would start a system redis on port 6379; policy-rc.d refuses that for the install, so that
# the only redis running is the benchmark's own. BENCH_REDIS_SERVER names another binary instead.
set -euo pipefail

if [[ -n "${BENCH_REDIS_SERVER:-}" ]]; then
  command -v "$BENCH_REDIS_SERVER" || { echo "BENCH_REDIS_SERVER=$BENCH_REDIS_SERVER: not found" >&2; exit 1; }
  exit 0
fi
if command -v redis-server >/dev/null; then
  command -v redis-server
  exit 0
fi

if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
  echo "redis-server is not on PATH; install it (Debian: apt-get install redis-server) or set BENCH_REDIS_SERVER" >&2
  exit 1
fi

echo "redis.sh: installing Debian's redis-server" >&2
policy=/usr/sbin/policy-rc.d
had_policy=0
[[ -e $policy ]] && had_policy=1
if [[ $had_policy = 0 ]]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod +x "$policy"
  trap 'rm -f "$policy"' EXIT
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends redis-server >&2
command -v redis-server
