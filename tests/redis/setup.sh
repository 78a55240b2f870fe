#!/usr/bin/env bash
# Makes sure redis-server is on PATH for the Redis tests (tests/redis_server.py starts its own on a free port
# of 127.0.0.1 in a temporary directory; nothing here starts one).
#
# Uses the redis-server on PATH when there is one; otherwise installs Debian's `redis-server` package with
# apt-get, which needs root (CI runs as root). Without root and without the binary it says so and exits 0:
# the Redis tests then skip with that reason, and CI (TRIO_MCP_STRICT_SKIPS=1) fails them.
set -euo pipefail

if command -v redis-server >/dev/null 2>&1; then
    exit 0
fi
if [[ "$(id -u)" != "0" ]] || ! command -v apt-get >/dev/null 2>&1; then
    echo "tests/redis/setup.sh: redis-server is missing; install it (Debian: apt-get install redis-server)" >&2
    echo "tests/redis/setup.sh: or the Redis tests will be skipped" >&2
    exit 0
fi
LOG="$(mktemp)"
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; } >"$LOG" 2>&1; then
    echo "tests/redis/setup.sh: FAILED: apt-get install redis-server" >&2
    tail -n 30 "$LOG" >&2
    exit 1
fi
rm -f "$LOG"
command -v redis-server >/dev/null
echo "tests/redis/setup.sh: installed $(redis-server --version | cut -d' ' -f1-3)"
