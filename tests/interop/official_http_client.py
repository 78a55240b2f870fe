"""A client built on the official MCP Python SDK (`mcp`, pinned in requirements-mcp.txt), spoken to over HTTP.

Usage (with the interop virtualenv's python, `.interop/mcp-venv/bin/python`):

    official_http_client.py --url URL [--transport streamable|sse] [--mode auto|legacy]

Connects to URL: ``--transport streamable`` (Streamable HTTP, the SDK's ``Client(url)``; ``--mode auto``, the
SDK's default, first probes ``server/discover`` and falls back to ``initialize``, ``--mode legacy`` goes straight
to ``initialize``) or ``--transport sse`` (the 2024-11-05 HTTP+SSE transport, ``sse_client``; always legacy).
Then it exercises the tools of the trio_mcp server in tests/interop/test_interop_http.py (echo, count, roots_probe,
sample, ask, fail, sleep) with roots, sampling and elicitation callbacks, and prints ONE JSON line with what it
saw to stdout. Every step is recorded even when it fails (as ``{"error": "..."}``), so the test sees all of them
at once; the exit code is 0 whenever that line was printed.
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
from mcp import Client
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPError

# Roots, sampling and elicitation as standalone requests are deprecated from 2026-07-28 on; this client still
# answers them for 2025-11-25 servers.
warnings.simplefilter("ignore")

ROOT_URI = "file:///tmp/interop-http-root"
STEP_TIMEOUT = 15.0


def content_texts(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def describe_error(exc: BaseException) -> dict[str, Any]:
    if isinstance(exc, MCPError):
        return {"error": type(exc).__name__, "code": exc.code, "message": str(exc)}
    return {"error": type(exc).__name__, "message": str(exc)}


async def run(url: str, transport: str, mode: str) -> dict[str, Any]:
    out: dict[str, Any] = {"transport": transport, "mode": mode, "callbacks": []}

    async def list_roots(context: Any) -> types.ListRootsResult:
        out["callbacks"].append("roots")
        return types.ListRootsResult(roots=[types.Root(uri=ROOT_URI, name="interop")])

    async def sampling(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        out["callbacks"].append("sampling")
        prompt = params.messages[0].content
        text = prompt.text if isinstance(prompt, types.TextContent) else "?"
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=f"sampled: {text}"), model="interop-model"
        )

    async def elicitation(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        out["callbacks"].append("elicitation")
        return types.ElicitResult(action="accept", content={"name": "Ada", "age": 36})

    server: Any = sse_client(url) if transport == "sse" else url
    async with Client(
        server,
        mode="legacy" if transport == "sse" else mode,
        list_roots_callback=list_roots,
        sampling_callback=sampling,
        elicitation_callback=elicitation,
        read_timeout_seconds=STEP_TIMEOUT,
    ) as client:
        out["protocol_version"] = client.protocol_version
        info = client.server_info
        out["server_info"] = {"name": info.name, "version": info.version} if info is not None else None
        out["has_tools_capability"] = client.server_capabilities.tools is not None

        async def step(name: str, coro_fn: Any) -> None:
            try:
                with anyio.fail_after(STEP_TIMEOUT):
                    out[name] = await coro_fn()
            except Exception as exc:  # noqa: BLE001 - recorded for the test to assert on
                out[name] = describe_error(exc)

        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            result = await client.call_tool(tool, arguments)
            return {
                "texts": content_texts(result),
                "is_error": result.is_error,
                "structured": result.structured_content,
            }

        async def list_tools() -> list[str]:
            return sorted(tool.name for tool in (await client.list_tools()).tools)

        async def count() -> dict[str, Any]:
            updates: list[dict[str, Any]] = []

            async def on_progress(progress: float, total: float | None, message: str | None) -> None:
                updates.append({"progress": progress, "total": total, "message": message})

            result = await client.call_tool("count", {"steps": 5}, progress_callback=on_progress)
            return {"texts": content_texts(result), "structured": result.structured_content, "progress": updates}

        async def cancel() -> dict[str, Any]:
            # Abandon a long call once it has started: the SDK sends notifications/cancelled (legacy era) or
            # closes the request's response (2026-07-28); the server's tool should see either as cancellation.
            started = time.monotonic()
            with anyio.move_on_after(1.0) as scope:
                await client.call_tool("sleep", {"seconds": 30})
            return {"cancelled_client_side": scope.cancelled_caught, "elapsed": round(time.monotonic() - started, 3)}

        await step("tools", list_tools)
        await step("echo", lambda: call("echo", {"text": "hello over HTTP"}))
        await step("count", count)
        await step("roots_probe", lambda: call("roots_probe", {}))
        await step("sample", lambda: call("sample", {"prompt": "what is trio?"}))
        await step("ask", lambda: call("ask", {}))
        await step("fail", lambda: call("fail", {}))
        await step("unknown_tool", lambda: call("no_such_tool", {}))
        await step("cancel", cancel)
        await step("echo_after_cancel", lambda: call("echo", {"text": "hello over HTTP"}))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--transport", default="streamable", choices=["streamable", "sse"])
    parser.add_argument("--mode", default="auto", choices=["auto", "legacy"])
    args = parser.parse_args()
    try:
        out = anyio.run(run, args.url, args.transport, args.mode)
    except BaseException as exc:  # the connection itself failed: still print one line
        if isinstance(exc, KeyboardInterrupt):
            raise
        out = {"transport": args.transport, "mode": args.mode, "connect": describe_error(exc)}
    sys.stdout.write(json.dumps(out, sort_keys=True) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
