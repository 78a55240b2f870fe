#!/usr/bin/env bash
# The programs `make test` needs from the system, checked before anything else runs. As root on Debian the setup
# scripts install what is missing (tests/browser/setup.sh, tests/scale/setup.sh); otherwise each missing part is
# one line saying what needs it and how to install it, and make stops here (exit 2) instead of failing later.
set -euo pipefail

lines=()
need() {  # need PROGRAM PACKAGE WHAT-NEEDS-IT
    PATH="$PATH:/usr/sbin:/usr/local/sbin" command -v "$1" >/dev/null 2>&1 && return
    lines+=("make test: $1 is missing (for $3): install it with 'sudo apt-get install $2' (Debian), or run make test as root")
}
need chromium chromium "the browser tests, tests/interop/test_browser.py"
need redis-server redis-server "the Redis tests, tests/scale"
need haproxy haproxy "the balancer tests, tests/scale/test_workers_balancer.py"
need nginx nginx "trio-mcp doctor behind proxies, tests/cli/test_cli_doctor_proxies.py"

if [[ ${#lines[@]} -eq 0 ]] || { [[ $EUID == 0 ]] && command -v apt-get >/dev/null 2>&1; }; then
    exit 0
fi
printf '%s\n' "${lines[@]}" >&2
exit 2
