#!/usr/bin/env bash
# Makes sure redis-server, redis-sentinel and redis-cli (Debian's packages) are on PATH for the Redis
# tests, installing them when missing (as root: apt-get). The packages' scripts would start a system
# redis on port 6379; policy-rc.d refuses that for the install, so the only redis running is the
# tests' own (each on a free loopback port). A policy-rc.d the machine already had is left as it was.
set -euo pipefail
if command -v redis-server >/dev/null && command -v redis-sentinel >/dev/null && command -v redis-cli >/dev/null; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
  echo "redis-server, redis-sentinel or redis-cli is missing; install them (Debian: apt-get install redis-server redis-sentinel redis-tools)" >&2
  exit 1
fi
echo "== installing Debian's redis-server, redis-sentinel and redis-tools" >&2
policy=/usr/sbin/policy-rc.d
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' > "$policy"
  chmod +x "$policy"
  trap 'rm -f "$policy"' EXIT
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends redis-server redis-sentinel redis-tools >&2
