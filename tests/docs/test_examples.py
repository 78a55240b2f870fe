"""Every program in trio_mcp/examples runs to completion and prints what it promises (run as a subprocess)."""

from __future__ import annotations

import sys

import pytest
import trio
from cli_helpers import REPO, cli_env

EXPECTED = {
    "embedded": [
        "serving on http://127.0.0.1:",
        "next reading:",
        "temperature tool: {'celsius':",
        "stopped: server and background task ended together",
    ],
    "cancellation": ["progress 2/50: 200 rows", "the client gives up", "cancelled: rolled back 200 rows"],
    "http_auth": ["alice: you are alice", "bob: you are bob", "a wrong token is refused: McpError", "401"],
    "many_servers": [
        "books.search_books:",
        "notes.add_note:",
        "notes.add_note -> {'result': 2}",
        "both servers shut down",
    ],
    "elicitation_sampling": [
        "protocol 2025-11-25:",
        "protocol 2026-07-28:",
        "3 nights in Lisbon: museums, then the river [model example-model, 2025-11-25]",
        "3 nights in Lisbon: museums, then the river [model example-model, 2026-07-28]",
    ],
    "websocket_pair": ["connected over WebSocket", "  1...", "liftoff"],
    "proxy": [
        "the client speaks 2026-07-28 to the proxy",
        "  progress 3/3",
        "search_books -> {'result': ['Dune', 'Dune Messiah', 'Children of Dune']}",
        "proxy and upstream server shut down",
    ],
    "demo": ["search_books -> {'result': ['Dune'", "server shut down cleanly"],
}


async def _run(*argv: str) -> str:
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, *argv], capture_stdout=True, capture_stderr=True, check=False, env=cli_env(), cwd=REPO
        )
    output = done.stdout.decode()
    assert done.returncode == 0, output + done.stderr.decode()
    assert "Traceback" not in done.stderr.decode()
    return output


@pytest.mark.parametrize("name", sorted(EXPECTED))
async def test_example_runs(name: str) -> None:
    extra = ["--round-trips", "10"] if name == "demo" else []
    output = await _run("-m", f"trio_mcp.examples.{name}", *extra)
    for expected in EXPECTED[name]:
        assert expected in output, output


async def test_example_test_file_passes_with_the_plugin() -> None:
    output = await _run(
        "-m",
        "pytest",
        "-p",
        "trio_mcp.pytest_plugin",
        "-p",
        "no:cacheprovider",
        "-q",
        "trio_mcp/examples/test_bookshop.py",
    )
    assert "6 passed" in output


async def test_bookshop_is_served_by_the_command_line() -> None:
    output = await _run(
        "-m",
        "trio_mcp",
        "call",
        "search_books",
        "query=solaris",
        "--",
        sys.executable,
        "-m",
        "trio_mcp",
        "run",
        "trio_mcp.examples.bookshop",
    )
    assert output.strip() == '{"result":["Solaris"]}'
