"""A crashed tool's traceback is on the server's stderr under the error id its client was told, without the
application configuring logging; once it does, the record goes there alone. Real stdio servers, in subprocesses."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import trio

import trio_mcp
from trio_mcp.types import CallToolResult, TextContent

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


async def serve_http() -> None:
    async with trio.open_nursery() as nursery:
        port = await nursery.start(server.serve_http, "127.0.0.1", 0)
        print(port, flush=True)


trio.run(server.serve_stdio if sys.argv[2] == "stdio" else serve_http)
"""


async def crash_and_read_stderr(tmp_path: Path, mode: str, transport: str = "stdio") -> tuple[str, str]:
    """The error id the client was told, and what the server wrote to stderr."""
    script = tmp_path / "crashing.py"
    script.write_text(textwrap.dedent(SERVER))
    command = [sys.executable, str(script), mode, transport]
    lines: list[str] = []
    with trio.fail_after(20):
        if transport == "stdio":
            async with trio_mcp.open_stdio_client(command, stderr=lines.append) as client:
                result = await client.call_tool("crash")
        else:
            result = await crash_over_http(command, lines)
    assert result.is_error and isinstance(result.content[0], TextContent)
    found = re.fullmatch(r"Tool crash failed \(error id ([0-9a-f]+)\)", result.content[0].text)
    assert found is not None
    return found.group(1), "\n".join(lines)


async def crash_over_http(command: list[str], lines: list[str]) -> CallToolResult:
    process = await trio.lowlevel.open_process(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    try:
        port = b""
        while not port.endswith(b"\n"):
            port += await process.stdout.receive_some(64)
        url = f"http://127.0.0.1:{int(port)}/mcp"
        async with trio_mcp.open_http_client(url, protocol_version="2025-11-25") as client:
            result = await client.call_tool("crash")
    finally:
        process.terminate()
        await process.wait()
    stderr = b""
    while chunk := await process.stderr.receive_some(65536):
        stderr += chunk
    lines.extend(stderr.decode().splitlines())
    return result


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_without_logging_configured_the_traceback_is_on_stderr_under_the_error_id(
    tmp_path: Path, transport: str
) -> None:
    error_id, stderr = await crash_and_read_stderr(tmp_path, "plain", transport)
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
