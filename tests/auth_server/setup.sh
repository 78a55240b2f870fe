#!/usr/bin/env bash
# Installs the authorization servers of the end-to-end authorization tests: oauth2-mock-server (server.mjs, for
# tests/auth/test_auth_e2e.py) and oidc-provider (oidc_upstream.mjs, upstream of tests/auth/test_facade_e2e.py), by `npm ci` from the committed package.json + package-lock.json into
# tests/auth_server/node_modules, with the Node that tests/interop/setup.sh installed (.interop/paths.json).
# Idempotent (skipped while its stamp matches its inputs); quiet on success.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/tests/auth_server"
PATHS="$ROOT/.interop/paths.json"
[[ -f "$PATHS" ]] || { echo "tests/auth_server/setup.sh: run tests/interop/setup.sh first (no $PATHS)" >&2; exit 1; }
NODE="$(sed -n 's/^ *"node": "\(.*\)",$/\1/p' "$PATHS")"
[[ -x "$NODE" ]] || { echo "tests/auth_server/setup.sh: $PATHS names no usable node" >&2; exit 1; }
export PATH="$(dirname "$NODE"):$PATH"
STAMP="$HERE/node_modules/.trio-mcp-setup-stamp"
fp="$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -d' ' -f1)-$("$NODE" --version)"
if [[ "$(cat "$STAMP" 2>/dev/null || true)" != "$fp" ]]; then
    (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    echo "$fp" >"$STAMP"
fi
# Each must start and name its issuer (oidc-provider's warnings about its development defaults are not shown).
for server in server.mjs oidc_upstream.mjs; do
    out="$(cd "$HERE" && timeout 20 "$NODE" -e '
      const { spawn } = require("node:child_process");
      const child = spawn(process.execPath, [process.argv[1]], { stdio: ["ignore", "pipe", "ignore"] });
      child.stdout.once("data", (line) => { process.stdout.write(line); child.kill("SIGTERM"); });
    ' "$server")"
    [[ "$out" == *'"issuer":"http://127.0.0.1:'* ]] || { echo "tests/auth_server/setup.sh: $server did not start: $out" >&2; exit 1; }
done
