#!/usr/bin/env bash
# Installs the MCP Inspector that `trio-mcp dev` runs, for tests/cli/test_cli_dev.py: `npm ci` from the package.json
# and package-lock.json that ship in trio_mcp/cli/inspector-npm/ (the pinned release users get), with the Node of
# tests/interop/setup.sh, into tests/inspector/installed/ (the tests name it with TRIO_MCP_INSPECTOR_DIR).
# Idempotent (skipped while its stamp matches its inputs); quiet on success.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
LOCKED="$ROOT/trio_mcp/cli/inspector-npm"
TARGET="$ROOT/tests/inspector/installed"
PATHS="$ROOT/.interop/paths.json"
[[ -f "$PATHS" ]] || { echo "tests/inspector/setup.sh: run tests/interop/setup.sh first (no $PATHS)" >&2; exit 1; }
NODE="$(sed -n 's/^ *"node": "\(.*\)",$/\1/p' "$PATHS")"
[[ -x "$NODE" ]] || { echo "tests/inspector/setup.sh: $PATHS names no usable node" >&2; exit 1; }
export PATH="$(dirname "$NODE"):$PATH"
STAMP="$TARGET/node_modules/.trio-mcp-setup-stamp"
fp="$(cat "$LOCKED/package.json" "$LOCKED/package-lock.json" | sha256sum | cut -d' ' -f1)-$("$NODE" --version)"
if [[ "$(cat "$STAMP" 2>/dev/null || true)" != "$fp" ]]; then
    mkdir -p "$TARGET"
    cp "$LOCKED/package.json" "$LOCKED/package-lock.json" "$TARGET/"
    if ! (cd "$TARGET" && npm ci --no-audit --no-fund --loglevel=error >"$TARGET/install.log" 2>&1); then
        cat "$TARGET/install.log" >&2
        echo "tests/inspector/setup.sh: npm ci of the MCP Inspector failed (log above)" >&2
        exit 1
    fi
    echo "$fp" >"$STAMP"
fi
