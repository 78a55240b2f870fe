"""What a program pays for at import: a server imports no client and no network transport until it uses them,
and every name ``trio_mcp`` exports still resolves."""

from __future__ import annotations

import subprocess
import sys

from paths import ROOT

import trio_mcp


def imported_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sorted(sys.modules)))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, check=True
    )
    return set(done.stdout.split())


def test_a_stdio_server_imports_no_client_and_no_network_transport() -> None:
    loaded = imported_after("from trio_mcp import Context, Server")
    assert "trio_mcp.server" in loaded
    unwanted = {"trio_mcp.client", "trio_mcp.transports.streamable_http", "trio_mcp.transports.websocket", "h11"}
    assert loaded & unwanted == set()


def test_every_exported_name_resolves() -> None:
    for name in trio_mcp.__all__:
        assert getattr(trio_mcp, name) is not None, name
    assert trio_mcp.Client.__module__.startswith("trio_mcp.client")
