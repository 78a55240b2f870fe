"""A session stream's keep-alive tick never cuts short the answer another task is writing: the whole answer
arrives and the connection serves the next request."""

from __future__ import annotations

import functools
import json
from typing import Any

import h11
import trio

from trio_mcp import Server
from trio_mcp.transports.http import HttpTransportOptions

from transport_helpers import INITIALIZED, initialize_request  # isort: skip

BIG = 4_000_000  # far more than the socket buffers hold, so the answer's last write blocks while ticks fire


async def exchange(
    stream: trio.SocketStream,
    client: h11.Connection,
    body: dict[str, Any],
    headers: list[tuple[str, str]],
    *,
    pause: float = 0,
) -> tuple[h11.Response, bytes]:
    """One request on the kept-alive connection; with ``pause``, the answer is left unread that long first."""
    data = json.dumps(body).encode()
    request = h11.Request(
        method="POST",
        target="/mcp",
        headers=[
            ("host", "127.0.0.1"),
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("content-length", str(len(data))),
            *headers,
        ],
    )
    await stream.send_all(client.send(request) + client.send(h11.Data(data=data)) + client.send(h11.EndOfMessage()))
    if pause:
        await trio.sleep(pause)
    head: h11.Response | None = None
    chunks: list[bytes] = []
    while True:
        event = client.next_event()
        if event is h11.NEED_DATA:
            received = await stream.receive_some(1 << 20)
            assert received, "the server closed the connection mid-answer"
            client.receive_data(received)
        elif isinstance(event, h11.Response):
            head = event
        elif isinstance(event, h11.Data):
            chunks.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage):
            client.start_next_cycle()
            assert head is not None
            return head, b"".join(chunks)


def last_event(body: bytes) -> dict[str, Any]:
    data = [line[len(b"data: ") :] for line in body.split(b"\n") if line.startswith(b"data: ")]
    return json.loads(data[-1])


async def test_a_tick_during_the_last_write_keeps_the_answer_whole_and_the_connection_alive(
    nursery: trio.Nursery,
) -> None:
    server = Server("big")

    @server.tool()
    async def big() -> str:
        return "x" * BIG

    options = HttpTransportOptions(keepalive_interval=0.002)
    port = await nursery.start(functools.partial(server.serve_http, "127.0.0.1", 0, options=options))
    with trio.fail_after(30):
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        client = h11.Connection(h11.CLIENT)
        head, _ = await exchange(stream, client, initialize_request(id=1), [])
        session = [(b"mcp-session-id", dict(head.headers)[b"mcp-session-id"]), (b"mcp-protocol-version", b"2025-11-25")]
        head, _ = await exchange(stream, client, INITIALIZED, session)
        assert head.status_code == 202
        for round in range(3):
            call = {
                "jsonrpc": "2.0",
                "id": 10 + round,
                "method": "tools/call",
                "params": {"name": "big", "arguments": {}},
            }
            head, body = await exchange(stream, client, call, session, pause=0.2)
            assert head.status_code == 200
            answer = last_event(body)
            assert answer["id"] == 10 + round
            assert len(answer["result"]["content"][0]["text"]) == BIG
        head, body = await exchange(stream, client, {"jsonrpc": "2.0", "id": 99, "method": "ping"}, session)
        assert last_event(body) == {"jsonrpc": "2.0", "id": 99, "result": {}}
        await stream.aclose()
