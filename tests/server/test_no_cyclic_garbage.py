"""Serving a request leaves nothing only the garbage collector can free: a busy server's collections stay
short and rare (a stateless request used to leave its connection and session in a reference cycle)."""

from __future__ import annotations

import collections
import gc
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import trio
from transport_helpers import POST_HEADERS, open_raw_session

from trio_mcp import Server
from trio_mcp.transports._client.h11client import HttpClient

STATELESS_HEADERS = [("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/call"), ("mcp-name", "echo")]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


@contextmanager
def cyclic_garbage() -> Iterator[collections.Counter[str]]:
    """Count, by type, the trio_mcp objects that became unreachable inside the block and were freed only by
    the collector (automatic collections are held off meanwhile)."""
    found: collections.Counter[str] = collections.Counter()
    gc.collect()
    gc.disable()
    try:
        yield found
        gc.set_debug(gc.DEBUG_SAVEALL)
        gc.collect()
        found.update(type(o).__qualname__ for o in gc.garbage if type(o).__module__.startswith("trio_mcp"))
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


async def call(http: HttpClient, url: str, headers: list[tuple[str, str]], message: dict[str, Any]) -> bytes:
    response = await http.request("POST", url, headers=headers, body=json.dumps(message).encode())
    body = b""
    while chunk := await response.receive_some():
        body += chunk
    assert response.status in (200, 202), body
    return body


@pytest.mark.parametrize("era", ["modern", "legacy"])
async def test_calls_over_http_leave_no_cyclic_garbage(era: str) -> None:
    server = Server("tidy")

    @server.tool()
    async def echo(text: str) -> str:
        return text

    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(server.serve_http, "127.0.0.1", 0)
            url = f"http://127.0.0.1:{port}/mcp"
            async with HttpClient() as http:
                params: dict[str, Any] = {"name": "echo", "arguments": {"text": "hi"}}
                if era == "modern":
                    headers = [*POST_HEADERS, *STATELESS_HEADERS]
                    params["_meta"] = MODERN_META
                else:
                    headers = [*POST_HEADERS, *await open_raw_session(http, url)]
                message = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
                for _ in range(5):  # warm up: first-use caches are not garbage
                    await call(http, url, headers, message)
                with cyclic_garbage() as found:
                    for _ in range(50):
                        assert b'"text":"hi"' in await call(http, url, headers, message)
            nursery.cancel_scope.cancel()
    assert not found, f"left for the collector: {dict(found)}"
