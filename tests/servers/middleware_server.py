"""A server with middleware (audit trail, authorization, cache, deadline), served in-process or over stdio."""

from __future__ import annotations

from typing import Any

import trio

import trio_mcp
from trio_mcp import CallNext, McpError, RequestInfo

FORBIDDEN = -32001

server = trio_mcp.Server("middleware-test")
#: (method, request id, principal) of everything the outermost middleware saw, in order (in-process use).
AUDIT: list[tuple[str, Any, Any]] = []
#: How many times the ``cached`` tool's handler ran.
RUNS = {"cached": 0}


def _trail(result: Any, name: str) -> Any:
    if type(result) is dict:
        meta = result.setdefault("_meta", {})
        meta["trail"] = [*meta.get("trail", []), name]
    return result


@server.middleware
async def audit(call: RequestInfo, call_next: CallNext) -> Any:
    AUDIT.append((call.method, call.request_id, call.principal))
    return _trail(await call_next(), "audit")


@server.middleware
async def authorize(call: RequestInfo, call_next: CallNext) -> Any:
    if call.method == "tools/call" and (call.params or {}).get("name") == "secret":
        raise McpError(FORBIDDEN, "Forbidden: secret is not for you")
    return _trail(await call_next(), "authorize")


_CACHE: dict[str, Any] = {}


@server.middleware
async def cache(call: RequestInfo, call_next: CallNext) -> Any:
    if call.method != "tools/call" or (call.params or {}).get("name") != "cached":
        return await call_next()
    if "cached" not in _CACHE:
        _CACHE["cached"] = await call_next()
    return {key: value for key, value in _CACHE["cached"].items() if key != "_meta"}


@server.middleware
async def deadline(call: RequestInfo, call_next: CallNext) -> Any:
    if call.method != "tools/call" or (call.params or {}).get("name") != "slow":
        return await call_next()
    with trio.move_on_after(0.2):
        return await call_next()
    raise McpError(-32002, "Request timed out after 0.2 s")


@server.tool()
def secret() -> str:
    return "the secret"


@server.tool()
def cached() -> str:
    RUNS["cached"] += 1
    return f"run {RUNS['cached']}"


@server.tool()
async def slow() -> str:
    await trio.sleep(30)
    return "too late"


@server.tool()
def echo(text: str) -> str:
    return text


if __name__ == "__main__":
    trio.run(server.serve_stdio)
