"""One way for a test to run the same checks over every transport: a client of a server, connected over the
transport named."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
import trio.testing

import trio_mcp
from trio_mcp.testing import open_in_memory
from trio_mcp.transports._client.h11client import HttpClient


@asynccontextmanager
async def connect(
    server: trio_mcp.Server, transport: str, *, stdio_script: Path | None = None, **options: Any
) -> AsyncIterator[trio_mcp.Client]:
    """A client of ``server`` over ``transport``: "memory", "stdio" (``stdio_script`` serves the same server in a
    subprocess), "websocket", "http-session" (2025-11-25) or "http-stateless" (2026-07-28), on 127.0.0.1."""
    if transport == "memory":
        async with open_in_memory(server, **options) as client:
            yield client
        return
    if transport == "stdio":
        assert stdio_script is not None, "stdio needs the script that serves the server"
        async with trio_mcp.open_stdio_client([sys.executable, str(stdio_script)], **options) as client:
            yield client
        return
    async with trio.open_nursery() as nursery:
        if transport == "websocket":
            port = await nursery.start(
                lambda task_status: server.serve_websocket("127.0.0.1", 0, task_status=task_status)
            )
            async with trio_mcp.open_websocket_client(f"ws://127.0.0.1:{port}/mcp", **options) as client:
                yield client
        else:
            assert transport in ("http-session", "http-stateless"), transport
            port = await nursery.start(lambda task_status: server.serve_http("127.0.0.1", 0, task_status=task_status))
            version = "2026-07-28" if transport == "http-stateless" else "2025-11-25"
            url = f"http://127.0.0.1:{port}/mcp"
            async with trio_mcp.open_http_client(url, protocol_version=version, **options) as client:
                yield client
        nursery.cancel_scope.cancel()


#: The headers of a POST to a Streamable HTTP endpoint.
POST_HEADERS = [("content-type", "application/json"), ("accept", "application/json, text/event-stream")]


def initialize_request(
    version: str = "2025-11-25", *, id: int | str = 0, capabilities: dict[str, Any] | None = None, client: str = "t"
) -> dict[str, Any]:
    """An ``initialize`` request, as a client that speaks JSON itself sends it."""
    info = {"name": client, "version": "1"}
    params = {"protocolVersion": version, "capabilities": capabilities or {}, "clientInfo": info}
    return {"jsonrpc": "2.0", "id": id, "method": "initialize", "params": params}


def initialize_result(
    version: str = "2025-11-25", *, capabilities: dict[str, Any] | None = None, server: str = "raw"
) -> dict[str, Any]:
    """The result a server answers ``initialize`` with, for a test that plays the server by hand."""
    return {
        "protocolVersion": version,
        "capabilities": capabilities or {},
        "serverInfo": {"name": server, "version": "1"},
    }


#: A 2025-11-25 ``initialize`` request with id 0.
INITIALIZE: dict[str, Any] = initialize_request()
#: The notification that ends the handshake.
INITIALIZED: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/initialized"}


async def handshake(
    send: Callable[[Any], Awaitable[object]],
    receive: Callable[[], Awaitable[Any]],
    version: str = "2025-11-25",
    *,
    id: int = 0,
    capabilities: dict[str, Any] | None = None,
    client: str = "t",
) -> dict[str, Any]:
    """The handshake over any peer that sends and receives one JSON-RPC message at a time (raw stdio pipes, a
    WebSocket, a memory stream): ``initialize``, its answer, ``notifications/initialized``. The initialize result."""
    await send(initialize_request(version, id=id, capabilities=capabilities, client=client))
    answer = await receive()
    assert answer.get("id") == id and "result" in answer, answer
    await send(INITIALIZED)
    return dict(answer["result"])


def recording_pipes() -> tuple[trio.testing.MemoryReceiveStream, trio.testing.MemorySendStream, list[bytes]]:
    """An input stream to put bytes into, and an output stream whose every ``send_all`` lands whole in the list
    (one item a write)."""
    incoming = trio.testing.MemoryReceiveStream()
    outgoing = trio.testing.MemorySendStream()
    writes: list[bytes] = []

    async def record() -> None:
        writes.append(bytes(outgoing.get_data_nowait()))

    outgoing.send_all_hook = record
    return incoming, outgoing, writes


async def open_raw_session(
    http: HttpClient,
    url: str,
    version: str = "2025-11-25",
    *,
    capabilities: dict[str, Any] | None = None,
    headers: Sequence[tuple[str, str]] = (),
) -> list[tuple[str, str]]:
    """Open a session with plain HTTP requests (``initialize``, its answer read through, then
    ``notifications/initialized``), each with ``headers`` besides; the headers that name the session in its later
    requests."""
    body = json.dumps(initialize_request(version, capabilities=capabilities)).encode()
    opened = await http.request("POST", url, headers=[*POST_HEADERS, *headers], body=body)
    assert opened.status == 200, opened.status
    while await opened.receive_some():
        pass
    session = [("mcp-session-id", opened.headers["mcp-session-id"]), ("mcp-protocol-version", version)]
    answer = await http.request(
        "POST", url, headers=[*POST_HEADERS, *headers, *session], body=json.dumps(INITIALIZED).encode()
    )
    assert answer.status == 202, answer.status
    while await answer.receive_some():
        pass
    return session
