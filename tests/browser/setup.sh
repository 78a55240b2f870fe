#!/usr/bin/env bash
# Prepares the real-browser tests (tests/interop/test_browser.py): Debian's chromium (installed with apt-get when
# missing and running as root), and the official TypeScript SDK's client bundled for a web page by esbuild,
# both from the committed package.json + package-lock.json (`npm ci`, with the Node of tests/interop/setup.sh),
# into tests/browser/dist/client.js. Idempotent (skipped while its stamp matches its inputs); quiet on success.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/tests/browser"
PATHS="$ROOT/.interop/paths.json"
if ! command -v chromium >/dev/null; then
    [[ "$(id -u)" == 0 ]] || { echo "tests/browser/setup.sh: install Debian's chromium package (as root)" >&2; exit 1; }
    apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
[[ -f "$PATHS" ]] || { echo "tests/browser/setup.sh: run tests/interop/setup.sh first (no $PATHS)" >&2; exit 1; }
NODE="$(sed -n 's/^ *"node": "\(.*\)",$/\1/p' "$PATHS")"
[[ -x "$NODE" ]] || { echo "tests/browser/setup.sh: $PATHS names no usable node" >&2; exit 1; }
export PATH="$(dirname "$NODE"):$PATH"
STAMP="$HERE/node_modules/.trio-mcp-setup-stamp"
fp="$(cat "$HERE/package.json" "$HERE/package-lock.json" "$HERE/client.mjs" | sha256sum | cut -d' ' -f1)-$("$NODE" --version)"
if [[ "$(cat "$STAMP" 2>/dev/null || true)" != "$fp" || ! -f "$HERE/dist/client.js" ]]; then
    (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    (cd "$HERE" && node_modules/.bin/esbuild client.mjs --bundle --format=esm --platform=browser \
        --log-level=warning --outfile=dist/client.js)
    echo "$fp" >"$STAMP"
fi
# The MCP Apps host and app of tests/interop/test_browser_apps.py: the official @modelcontextprotocol/ext-apps
# (AppBridge for the host page, App for the app) with the TypeScript SDK v2 client, from tests/browser/apps'
# own package.json + package-lock.json, bundled into tests/browser/apps/dist/{host,app}.js.
APPS="$HERE/apps"
APPS_STAMP="$APPS/node_modules/.trio-mcp-setup-stamp"
fp="$(cat "$APPS/package.json" "$APPS/package-lock.json" "$APPS/host.mjs" "$APPS/app.mjs" | sha256sum | cut -d' ' -f1)-$("$NODE" --version)"
if [[ "$(cat "$APPS_STAMP" 2>/dev/null || true)" != "$fp" || ! -f "$APPS/dist/host.js" || ! -f "$APPS/dist/app.js" ]]; then
    (cd "$APPS" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
    for page in host app; do
        (cd "$APPS" && node_modules/.bin/esbuild "$page.mjs" --bundle --minify --format=esm --platform=browser \
            --log-level=warning --outfile="dist/$page.js")
    done
    echo "$fp" >"$APPS_STAMP"
fi
