"""The upstream OpenID Connect provider of the authorization facade's end-to-end tests."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator

import pytest
from paths import ROOT

SERVER_JS = ROOT / "tests" / "auth_server" / "oidc_upstream.mjs"
PATHS = ROOT / ".interop" / "paths.json"


@pytest.fixture(scope="module")
def upstream_issuer() -> Iterator[str]:
    """oidc-provider with dynamic registration off and one pre-registered client (``facade``): its issuer URL."""
    if not PATHS.exists() or not (SERVER_JS.parent / "node_modules" / "oidc-provider").exists():
        pytest.skip("oidc-provider is not installed: run tests/interop/setup.sh and tests/auth_server/setup.sh")
    node = json.loads(PATHS.read_text())["node"]
    process = subprocess.Popen(
        [node, str(SERVER_JS)], cwd=SERVER_JS.parent, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert process.stdout is not None
        yield json.loads(process.stdout.readline())["issuer"]
    finally:
        process.terminate()
        process.wait(timeout=10)
