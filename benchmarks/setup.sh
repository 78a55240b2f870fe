#!/usr/bin/env bash
# Installs the peers the benchmarks compare trio_mcp with, each in its own environment:
#
#   - Node >= 22 and the official MCP Python SDK (.interop/mcp-venv), by reusing tests/interop/setup.sh;
#   - the official TypeScript SDK in benchmarks/ts/node_modules, by `npm ci` from the committed package.json +
#     package-lock.json (benchmarks/ts/.npmrc keeps registry URLs out of the lockfile).
#
# Idempotent (npm ci runs again only when package.json, the lockfile or the node version changes) and quiet:
# one line on success; on failure the failing step's output and a non-zero exit. Needs what
# tests/interop/setup.sh needs (bash, python3 >= 3.10 or PYTHON=..., npm) and registry access on the first run.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TS="$ROOT/benchmarks/ts"
PYTHON="${PYTHON:-python3}"

PYTHON="$PYTHON" bash "$ROOT/tests/interop/setup.sh" >/dev/null

read_path() { "$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$ROOT/.interop/paths.json" "$1"; }
NODE="$(read_path node)"
MCP_PYTHON="$(read_path mcp_python)"
export PATH="$(dirname "$NODE"):$PATH" # npm's scripts run under the first node on PATH

[[ -f "$TS/package-lock.json" ]] || { echo "benchmarks/setup.sh: $TS/package-lock.json is missing" >&2; exit 1; }
STAMP="$TS/node_modules/.trio-mcp-setup-stamp"
fp="$(cat "$TS/package.json" "$TS/package-lock.json" | sha256sum | cut -d' ' -f1)-$("$NODE" --version)"
if [[ "$(cat "$STAMP" 2>/dev/null || true)" != "$fp" ]]; then
    LOG="$(mktemp)"
    if ! (cd "$TS" && npm ci --no-audit --no-fund --loglevel=error) >"$LOG" 2>&1; then
        echo "benchmarks/setup.sh: FAILED: npm ci in benchmarks/ts" >&2
        tail -n 40 "$LOG" >&2
        rm -f "$LOG"
        exit 1
    fi
    rm -f "$LOG"
    echo "$fp" >"$STAMP"
fi

want="$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["dependencies"]["@modelcontextprotocol/sdk"])' "$TS/package.json")"
got="$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' \
    "$TS/node_modules/@modelcontextprotocol/sdk/package.json" 2>/dev/null || true)"
[[ "$got" == "$want" ]] || { echo "benchmarks/setup.sh: TypeScript SDK is '$got', expected '$want'" >&2; exit 1; }
"$MCP_PYTHON" -c 'import mcp, uvicorn' 2>/dev/null ||
    { echo "benchmarks/setup.sh: the official Python SDK in $MCP_PYTHON does not import" >&2; exit 1; }

echo "benchmark setup ok: node $("$NODE" --version), TypeScript SDK $got, Python SDK $(read_path mcp_version)"
