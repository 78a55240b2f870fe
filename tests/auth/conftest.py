"""What the authorization end-to-end tests start: the facade's upstream OpenID Connect provider, and the official
Python SDK they run as a peer."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

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


@pytest.fixture
def mcp_python() -> str:
    """The Python that has the official MCP SDK (installed by tests/interop/setup.sh)."""
    python = json.loads(PATHS.read_text()).get("mcp_python") if PATHS.exists() else None
    if not python or not Path(python).exists():
        pytest.skip("the official Python SDK is not installed: run tests/interop/setup.sh")
    return str(python)
