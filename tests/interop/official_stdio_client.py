"""A client built on the official MCP Python SDK (`mcp`, pinned in requirements-mcp.txt), spoken to over stdio.

Usage (with the interop virtualenv's python, `.interop/mcp-venv/bin/python`):

    official_stdio_client.py [--mode auto|legacy] [--marker FILE] -- COMMAND [ARG...]

Spawns COMMAND as an MCP server over stdio, connects (``--mode auto``, the SDK's default, first probes
``server/discover`` and falls back to ``initialize``; ``--mode legacy`` goes straight to ``initialize``), then
exercises the tools of tests/servers/stdio_server.py (echo, count, roots_probe, fail, sleep) and prints ONE JSON
line with what it saw to stdout. Every step is recorded even when it fails (as ``{"error": "..."}``), so the test
sees all of them at once; the exit code is 0 whenever that line was printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from typing import Any

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

# Ping and roots are deprecated from protocol revision 2026-07-28 on; this client still uses them with
# 2025-11-25 servers.
warnings.simplefilter("ignore")

ROOT_URI = "file:///tmp/interop-root"
STEP_TIMEOUT = 15.0


def content_texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def describe_error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, MCPError):
        return {"error": type(exc).__name__, "code": exc.code, "message": str(exc)}
    return {"error": type(exc).__name__, "message": str(exc)}


async def run(command: list[str], mode: str, marker: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {"mode": mode}

    async def list_roots(context: Any) -> types.ListRootsResult:
        out["roots_requested"] = True
        return types.ListRootsResult(roots=[types.Root(uri=ROOT_URI, name="interop")])

    params = StdioServerParameters(command=command[0], args=command[1:])
    async with Client(params, mode=mode, list_roots_callback=list_roots, read_timeout_seconds=STEP_TIMEOUT) as client:
        out["protocol_version"] = client.protocol_version
        info = client.server_info
        out["server_info"] = {"name": info.name, "version": info.version} if info is not None else None
        out["has_tools_capability"] = client.server_capabilities.tools is not None

        async def step(name: str, coro_fn: Any) -> None:
            try:
                with anyio.fail_after(STEP_TIMEOUT):
                    out[name] = await coro_fn()
            except Exception as exc:  # recorded for the test to assert on
                out[name] = describe_error(exc)

        async def ping() -> bool:
            await client.send_ping()
            return True

        async def list_tools() -> list[str]:
            return sorted(tool.name for tool in (await client.list_tools()).tools)

        async def echo() -> dict[str, Any]:
            result = await client.call_tool("echo", {"text": "hello from the official SDK"})
            return {
                "texts": content_texts(result),
                "is_error": result.is_error,
                "structured": result.structured_content,
            }

        async def count() -> dict[str, Any]:
            updates: list[dict[str, Any]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                updates.append({"progress": progress, "total": total, "message": message})

            result = await client.call_tool("count", {"steps": 5}, progress_callback=on_progress)
            return {
                "texts": content_texts(result),
                "is_error": result.is_error,
                "structured": result.structured_content,
                "progress": updates,
            }

        async def roots() -> dict[str, Any]:
            result = await client.call_tool("roots_probe", {"timeout": 5})
            return {"texts": content_texts(result), "is_error": result.is_error}

        async def fail() -> dict[str, Any]:
            result = await client.call_tool("fail", {})
            return {"texts": content_texts(result), "is_error": result.is_error}

        async def unknown_tool() -> dict[str, Any]:
            result = await client.call_tool("no_such_tool", {})
            return {"texts": content_texts(result), "is_error": result.is_error}

        async def cancel() -> dict[str, Any]:
            # Abandon a long call: the SDK sends notifications/cancelled; the server's tool should see it.
            started = time.monotonic()
            with anyio.move_on_after(1.0) as scope:
                await client.call_tool("sleep", {"seconds": 30, "marker": marker})
            return {"cancelled_client_side": scope.cancelled_caught, "elapsed": round(time.monotonic() - started, 3)}

        await step("ping", ping)
        await step("tools", list_tools)
        await step("echo", echo)
        await step("count", count)
        await step("roots_probe", roots)
        await step("fail", fail)
        await step("unknown_tool", unknown_tool)
        if marker is not None:
            await step("cancel", cancel)
            await step("echo_after_cancel", echo)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", default="auto", choices=["auto", "legacy"])
    parser.add_argument("--marker", help="file the server's `sleep` tool appends to (enables the cancel step)")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the server command after --")
    try:
        out = anyio.run(run, command, args.mode, args.marker)
    except BaseException as exc:  # the connection itself failed: still print one line
        if isinstance(exc, KeyboardInterrupt):
            raise
        out = {"mode": args.mode, "connect": describe_error(exc)}
    sys.stdout.write(json.dumps(out, sort_keys=True) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
