#!/usr/bin/env bash
# Installs the skills (SEP-2640) peers of tests/interop/test_skills_interop.py, after tests/interop/setup.sh:
#
#   - tests/interop/ts_skills/node_modules/ by `npm ci` from the committed package.json + package-lock.json: the
#     TypeScript SDK v2 (@modelcontextprotocol/server and /client 2.4.0, with their ext/skills);
#   - FastMCP in its own virtualenv .interop/fastmcp-venv/ (tests/interop/requirements-fastmcp.txt, every version
#     pinned);
#
# then writes .interop/skills-paths.json, which the tests read. Idempotent (stamps, as setup.sh); quiet on success.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
INTEROP="$ROOT/.interop"
TS="$ROOT/tests/interop/ts_skills"
REQS="$ROOT/tests/interop/requirements-fastmcp.txt"
VENV="$INTEROP/fastmcp-venv"
PYTHON="${PYTHON:-python3}"
LOG="$INTEROP/skills-setup.log"

die() {
    echo "tests/interop/skills_setup.sh: FAILED: $*" >&2
    tail -n 30 "$LOG" >&2 || true
    exit 1
}

[[ -f "$INTEROP/paths.json" ]] || die "run tests/interop/setup.sh first (.interop/paths.json is missing)"
: >"$LOG"
NODE="$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["node"])' "$INTEROP/paths.json")"
export PATH="$(dirname "$NODE"):$PATH"
fingerprint() { cat "$@" | sha256sum | cut -d' ' -f1; }

npm_stamp="$TS/node_modules/.trio-mcp-setup-stamp"
npm_fp="$(fingerprint "$TS/package.json" "$TS/package-lock.json")-$("$NODE" --version)"
if [[ "$(cat "$npm_stamp" 2>/dev/null || true)" != "$npm_fp" ]]; then
    (cd "$TS" && npm ci --no-audit --no-fund --loglevel=error >>"$LOG" 2>&1) || die "npm ci in $TS"
    echo "$npm_fp" >"$npm_stamp"
fi

venv_stamp="$VENV/.trio-mcp-setup-stamp"
venv_fp="$(fingerprint "$REQS")-$("$PYTHON" -c 'import sys; print(sys.version.split()[0])')"
if [[ "$(cat "$venv_stamp" 2>/dev/null || true)" != "$venv_fp" ]] || ! "$VENV/bin/python" -c '' 2>/dev/null; then
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV" >>"$LOG" 2>&1 || die "creating $VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$REQS" >>"$LOG" 2>&1 ||
        die "installing $REQS"
    echo "$venv_fp" >"$venv_stamp"
fi
"$VENV/bin/python" -c 'import fastmcp.skills.provider' >>"$LOG" 2>&1 || die "FastMCP's skills do not import"

"$PYTHON" - "$INTEROP/skills-paths.json" "$NODE" "$TS" "$VENV/bin/python" <<'PY' || die "writing skills-paths.json"
import json, sys
path, node, ts, fastmcp_python = sys.argv[1:]
with open(path, "w") as f:
    json.dump({"node": node, "ts_skills": ts, "fastmcp_python": fastmcp_python}, f, indent=2)
    f.write("\n")
PY
echo "skills interop setup ok: TypeScript SDK v2 in $TS, FastMCP in $VENV"
