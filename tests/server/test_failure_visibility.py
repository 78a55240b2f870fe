"""A crashed tool's traceback is on the server's stderr under the error id its client was told, without the
application configuring logging; once it does, the record goes there alone. Real stdio servers, in subprocesses."""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

import pytest
import trio

import trio_mcp
from trio_mcp.types import TextContent

SERVER = """
import logging
import sys

import trio

from trio_mcp import Server

if sys.argv[1] == "configured":
    logging.basicConfig(stream=sys.stderr, format="APP %(name)s %(message)s")
elif sys.argv[1] == "silenced":
    logging.getLogger("trio_mcp").addHandler(logging.NullHandler())

server = Server("crashing")


@server.tool()
async def crash() -> str:
    raise ValueError("disk on fire")


trio.run(server.serve_stdio)
"""


async def crash_and_read_stderr(tmp_path: Path, mode: str) -> tuple[str, str]:
    """The error id the client was told, and what the server wrote to stderr."""
    script = tmp_path / "crashing.py"
    script.write_text(textwrap.dedent(SERVER))
    lines: list[str] = []
    with trio.fail_after(20):
        async with trio_mcp.open_stdio_client([sys.executable, str(script), mode], stderr=lines.append) as client:
            result = await client.call_tool("crash")
    assert result.is_error and isinstance(result.content[0], TextContent)
    found = re.fullmatch(r"Tool crash failed \(error id ([0-9a-f]+)\)", result.content[0].text)
    assert found is not None
    return found.group(1), "\n".join(lines)


async def test_without_logging_configured_the_traceback_is_on_stderr_under_the_error_id(tmp_path: Path) -> None:
    error_id, stderr = await crash_and_read_stderr(tmp_path, "plain")
    assert f"ERROR trio_mcp.server: Tool crash failed (error id {error_id})\nTraceback (most recent call last):" in (
        stderr
    )
    assert "ValueError: disk on fire" in stderr


@pytest.mark.parametrize("mode", ["configured", "silenced"])
async def test_logging_the_application_configured_takes_the_record_alone(tmp_path: Path, mode: str) -> None:
    error_id, stderr = await crash_and_read_stderr(tmp_path, mode)
    assert "ERROR trio_mcp.server" not in stderr
    expected = 1 if mode == "configured" else 0
    assert stderr.count(f"APP trio_mcp.server Tool crash failed (error id {error_id})") == expected
