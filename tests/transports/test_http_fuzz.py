"""Fuzzing the MCP HTTP server over a real socket: random bytes and near-valid requests (mutated framing,
headers and bodies) get an HTTP answer or a closed connection, never a crash, and the server goes on
serving well-formed requests afterwards."""

from __future__ import annotations

import json

import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trio_mcp import Server

VALID_BODY = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "server/discover",
        "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            }
        },
    }
)
VALID_HEADERS = [
    ("host", "127.0.0.1"),
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
    ("mcp-protocol-version", "2026-07-28"),
    ("mcp-method", "server/discover"),
]


def request(method: str, target: str, headers: list[tuple[str, str]], body: bytes, *, chunked: bool = False) -> bytes:
    head = f"{method} {target} HTTP/1.1\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers)
    if chunked:
        return (head + "transfer-encoding: chunked\r\n\r\n").encode("latin-1") + (
            f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n" if body else b"0\r\n\r\n"
        )
    return (head + f"content-length: {len(body)}\r\n\r\n").encode("latin-1") + body


header_names = st.sampled_from(
    [
        "host",
        "origin",
        "content-type",
        "accept",
        "mcp-protocol-version",
        "mcp-method",
        "mcp-name",
        "mcp-session-id",
        "last-event-id",
        "content-length",
        "transfer-encoding",
        "authorization",
        "expect",
        "connection",
    ]
)
header_values = st.one_of(
    st.sampled_from(
        [
            "",
            "localhost",
            "[::1]",
            "[::1].evil",
            "chunked",
            "100-continue",
            "close",
            "2026-07-28",
            "2025-11-25",
            "tools/list",
            "-1",
            "99999999",
        ]
    ),
    st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
)
near_valid = st.builds(
    request,
    method=st.sampled_from(["POST", "GET", "DELETE", "PUT", "OPTIONS", "HEAD"]),
    target=st.sampled_from(["/mcp", "/sse", "/messages", "/messages?session_id=x", "/", "/mcp?x=1"]),
    headers=st.lists(st.tuples(header_names, header_values), max_size=6).map(lambda extra: VALID_HEADERS + extra),
    body=st.one_of(
        st.just(VALID_BODY.encode()),
        st.binary(max_size=100),
        st.just(VALID_BODY.encode()).map(lambda b: b[: len(b) // 2]),
    ),
    chunked=st.booleans(),
)
payloads = st.lists(st.one_of(near_valid, st.binary(min_size=1, max_size=200)), min_size=1, max_size=3).map(b"".join)


async def exchange(port: int, data: bytes) -> bytes:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    received = b""
    try:
        await stream.send_all(data)
        with trio.move_on_after(0.3):
            while chunk := await stream.receive_some(65536):
                received += chunk
    except trio.BrokenResourceError:
        pass
    finally:
        await stream.aclose()
    return received


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=payloads)
def test_no_request_breaks_the_server(data: bytes) -> None:
    async def scenario() -> None:
        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                port = await nursery.start(Server("fuzzed").serve_http, "127.0.0.1", 0)
                answer = await exchange(port, data)
                assert answer == b"" or answer.startswith(b"HTTP/1.1 ")
                valid = request("POST", "/mcp", [*VALID_HEADERS, ("connection", "close")], VALID_BODY.encode())
                reply = await exchange(port, valid)
                assert reply.startswith(b"HTTP/1.1 200 "), reply[:200]
                nursery.cancel_scope.cancel()

    trio.run(scenario)
