#!/usr/bin/env bash
# Makes sure the real servers the scaling tests run are on PATH: redis-server (tests/redis_server.py starts
# its own on a free port of 127.0.0.1 in a temporary directory) and haproxy (tests/scale/test_workers_balancer.py
# puts one in front of two servers), and nginx (tests/cli/test_cli_doctor_proxies.py puts one in front of a
# server, configured per test; tests/scale/test_nginx_balancer.py one in front of three, as docs/deployment.md
# shows). Nothing here starts any of them.
#
# Uses what is already on PATH; otherwise installs Debian's `redis-server` / `haproxy` / `nginx` packages with apt-get,
# which needs root (CI runs as root). Without root it says what is missing and exits 0: those tests then skip
# with that reason, and CI (TRIO_MCP_STRICT_SKIPS=1) fails them.
set -euo pipefail

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v haproxy >/dev/null 2>&1 || PATH="$PATH:/usr/sbin" command -v haproxy >/dev/null 2>&1 || missing+=(haproxy)
command -v nginx >/dev/null 2>&1 || PATH="$PATH:/usr/sbin" command -v nginx >/dev/null 2>&1 || missing+=(nginx)
if [[ ${#missing[@]} -eq 0 ]]; then
    exit 0
fi
if [[ "$(id -u)" != "0" ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "tests/scale/setup.sh: missing ${missing[*]}; install (Debian: apt-get install ${missing[*]})" >&2
    echo "tests/scale/setup.sh: or the tests that need them will be skipped" >&2
    exit 0
fi
LOG="$(mktemp)"
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"; } >"$LOG" 2>&1; then
    echo "tests/scale/setup.sh: FAILED: apt-get install ${missing[*]}" >&2
    tail -n 30 "$LOG" >&2
    exit 1
fi
rm -f "$LOG"
echo "tests/scale/setup.sh: installed ${missing[*]}"
