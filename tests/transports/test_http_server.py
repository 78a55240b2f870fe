"""The h11/trio HTTP server over real loopback sockets: framing, keep-alive, limits, timeouts, streaming,
disconnects, handler failures and graceful shutdown.

Rules: 127.0.0.1 and port 0 only, every test inside ``trio.fail_after``, short limits instead of long sleeps.
The client side is a raw socket plus a throwaway h11 client for parsing, so that these tests do not depend on
our own HTTP client.
"""

from __future__ import annotations

import logging
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, AsyncIterator, Awaitable, Callable

import attrs
import h11
import pytest
import trio

from trio_mcp.transports._h11server import (
    ClientDisconnected,
    Drain,
    Headers,
    HttpLimits,
    HttpRequest,
    HttpResponse,
    RequestBodyTooLarge,
    serve_http,
)
from trio_mcp.transports._http_types import decode_headers

FAST = {"graceful_shutdown_timeout": 0.5}


@asynccontextmanager
async def serving(handler: Any, **limits: Any) -> AsyncIterator[int]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(serve_http, handler, limits=HttpLimits(**{**FAST, **limits})))
        yield listeners[0].socket.getsockname()[1]
        nursery.cancel_scope.cancel()


@attrs.define
class Reply:
    status: int
    headers: Headers
    body: bytes
    informational: list[int]


class Raw:
    """A raw TCP client: send any bytes, parse responses with a throwaway h11 client."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.pending = b""

    @classmethod
    async def connect(cls, port: int) -> Raw:
        return cls(await trio.open_tcp_stream("127.0.0.1", port))

    async def send(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def request(self, method: str = "GET", target: str = "/", headers: Any = (), body: bytes = b"") -> Reply:
        conn = h11.Connection(h11.CLIENT)
        hdrs = [("host", "test"), *headers]
        if body and not any(k.lower() in ("content-length", "transfer-encoding") for k, _ in hdrs):
            hdrs.append(("content-length", str(len(body))))
        data = conn.send(h11.Request(method=method, target=target, headers=hdrs)) or b""
        if body:
            data += conn.send(h11.Data(data=body)) or b""
        data += conn.send(h11.EndOfMessage()) or b""
        await self.send(data)
        return await self.response(method)

    async def response(self, method: str = "GET") -> Reply:
        conn = h11.Connection(h11.CLIENT)
        conn.send(h11.Request(method=method, target="/", headers=[("host", "test")]))
        conn.send(h11.EndOfMessage())
        if self.pending:
            conn.receive_data(self.pending)
        informational: list[int] = []
        status = 0
        headers = Headers()
        body = b""
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await self.stream.receive_some(65536))
            elif isinstance(event, h11.InformationalResponse):
                informational.append(event.status_code)
            elif isinstance(event, h11.Response):
                status = event.status_code
                headers = decode_headers(event.headers)
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                self.pending = conn.trailing_data[0]
                return Reply(status, headers, body, informational)
            else:
                raise EOFError(f"connection closed before a whole response: {event!r}")

    async def read_until_closed(self) -> bytes:
        """Everything until EOF (or reset)."""
        data = self.pending
        while True:
            try:
                chunk = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                return data
            if not chunk:
                return data
            data += chunk

    async def aclose(self) -> None:
        await self.stream.aclose()


async def echo(request: HttpRequest, response: HttpResponse) -> None:
    body = await request.read_body()
    text = f"{request.method} {request.path} {request.query} {len(body)}\n".encode()
    await response.send(
        200, [("content-type", "text/plain"), ("x-peer-port", str(request.peer and request.peer[1]))], text + body
    )


# --- basics --------------------------------------------------------------------------------------------------


async def test_get_and_post_with_content_length() -> None:
    with trio.fail_after(5):
        async with serving(echo) as port:
            client = await Raw.connect(port)
            reply = await client.request("GET", "/a/b?x=1&y=2")
            assert reply.status == 200
            assert reply.body == b"GET /a/b x=1&y=2 0\n"
            assert reply.headers["Content-Type"] == "text/plain"
            reply = await client.request("POST", "/post", body=b"hello world")
            assert reply.body == b"POST /post  11\nhello world"
            await client.aclose()


async def test_chunked_request_body() -> None:
    with trio.fail_after(5):
        async with serving(echo) as port:
            client = await Raw.connect(port)
            await client.send(
                b"POST /c HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n"
                b"5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\n\r\n"
            )
            reply = await client.response("POST")
            assert reply.body == b"POST /c  11\nhello world"
            await client.aclose()


async def test_keep_alive_reuses_the_connection_and_pipelined_bytes_are_kept() -> None:
    seen: list[tuple[str, int] | None] = []

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        seen.append(request.peer)
        await response.send(200, body=request.path.encode())

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            for i in range(3):
                assert (await client.request("GET", f"/{i}")).body == f"/{i}".encode()
            # Two requests in one write: the second must not be lost while the first is answered.
            await client.send(b"GET /p1 HTTP/1.1\r\nhost: t\r\n\r\nGET /p2 HTTP/1.1\r\nhost: t\r\n\r\n")
            assert (await client.response()).body == b"/p1"
            assert (await client.response()).body == b"/p2"
            # Connection: close from the client is honoured.
            reply = await client.request("GET", "/last", headers=[("connection", "close")])
            assert reply.headers["connection"] == "close"
            assert await client.read_until_closed() == b""
            await client.aclose()
    assert len(seen) == 6 and len(set(seen)) == 1


def _as_h11_writes(request: bytes, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> bytes:
    """The bytes h11's own server writes for this answer to ``request``."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(request)
    while conn.next_event() is not h11.NEED_DATA and conn.their_state is not h11.DONE:
        pass
    events: list[Any] = [h11.Response(status_code=status, headers=headers, reason=b"OK" if status == 200 else b"")]
    if body and not request.startswith(b"HEAD"):
        events.append(h11.Data(data=body))
    events.append(h11.EndOfMessage())
    return b"".join(conn.send(event) or b"" for event in events)


@pytest.mark.parametrize(
    ("request_bytes", "headers", "body"),
    [
        (
            b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 2\r\n\r\n{}",
            [(b"content-type", b"application/json")],
            b"[1]",
        ),
        (b"GET / HTTP/1.1\r\nhost: t\r\n\r\n", [(b"x-a", b"b  c"), (b"x-a", b"")], b""),
        (b"GET / HTTP/1.1\r\nhost: t\r\nconnection: close\r\n\r\n", [(b"x-a", b"b")], b"bye"),
        (b"GET / HTTP/1.0\r\nhost: t\r\n\r\n", [(b"x-a", b"b")], b"old"),
        (b"HEAD / HTTP/1.1\r\nhost: t\r\n\r\n", [(b"x-a", b"b")], b"head"),
    ],
)
async def test_a_whole_response_is_written_as_h11_writes_it(
    request_bytes: bytes, headers: list[tuple[bytes, bytes]], body: bytes
) -> None:
    """However a complete answer is written, the client reads the bytes h11 would have written, and the connection
    carries the next request when h11's would."""

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await request.read_body()
        await response.send(200, headers, body)

    expected = _as_h11_writes(request_bytes, 200, [*headers, (b"content-length", b"%d" % len(body))], body)
    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(request_bytes)
            received = b""
            while len(received) < len(expected):
                received += await client.stream.receive_some(65536)
            assert received == expected
            if b"close" in expected or b"HTTP/1.0" in request_bytes:
                assert await client.read_until_closed() == b""
            else:
                assert (await client.request("GET", "/again")).status == 200
            await client.aclose()


async def test_pipelined_requests_read_while_a_handler_waits_are_served_in_order() -> None:
    """What the connection's reader took off the socket while a handler waited (the next requests) is served after
    the answer, however the answer was written."""

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await trio.sleep(0.01)  # the reader runs meanwhile, and reads the requests sent after this one
        await response.send(200, [("content-type", "text/plain")], request.path.encode())

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(b"".join(b"GET /%d HTTP/1.1\r\nhost: t\r\n\r\n" % number for number in range(4)))
            assert [(await client.response()).body for _ in range(4)] == [b"/0", b"/1", b"/2", b"/3"]
            assert (await client.request("GET", "/after")).body == b"/after"
            await client.aclose()


async def test_headers_case_insensitive_and_repeated() -> None:
    got: dict[str, Any] = {}

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        got["x"] = request.headers.get_all("X-Thing")
        got["joined"] = request.headers["x-thing"]
        got["missing"] = request.headers.get("nope")
        got["contains"] = "X-THING" in request.headers
        got["params"] = request.query_params
        await response.send(204, [("x-a", "1"), ("X-A", "2")])

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            reply = await client.request("GET", "/?a=1&a=2&b=", headers=[("x-thing", "one"), ("X-Thing", "two")])
            assert reply.status == 204
            assert reply.headers.get_all("x-a") == ["1", "2"]
            assert "content-length" not in reply.headers
            await client.aclose()
    assert got == {
        "x": ["one", "two"],
        "joined": "one, two",
        "missing": None,
        "contains": True,
        "params": {"a": ["1", "2"], "b": [""]},
    }


@pytest.mark.parametrize("odd", [b"plain", b"line\nbreak", b"\n"])
def test_decoded_headers_keep_every_field_in_order(odd: bytes) -> None:
    # A value with a line break (which h11 never passes on, an ASGI server might) is kept whole too.
    headers = decode_headers([(b"X-A", b"1"), (b"Host", b"t"), (b"x-a", b"2"), (b"Odd", odd), (b"X-A", b"\xe9")])
    assert headers.multi_items() == [("x-a", "1"), ("host", "t"), ("x-a", "2"), ("odd", odd.decode()), ("x-a", "é")]
    assert list(headers) == ["x-a", "host", "odd"] and len(headers) == 3
    assert (headers["X-a"], headers.get_all("X-A"), headers.get_all("host"), headers.get_all("nope")) == (
        "1, 2, é",
        ["1", "2", "é"],
        ["t"],
        [],
    )
    assert (headers.get("odd"), headers.get("nope", "-"), "HOST" in headers, 3 in headers) == (
        odd.decode(),
        "-",
        True,
        False,
    )
    assert Headers([("X-A", "1"), ("x-a", "2")]).get_all("x-a") == ["1", "2"]
    assert decode_headers([]).multi_items() == [] and not decode_headers(())


async def test_head_request_has_headers_but_no_body() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.send(200, [("content-type", "text/plain")], b"twelve bytes")

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            reply = await client.request("HEAD", "/")
            assert reply.status == 200 and reply.body == b""
            assert reply.headers["content-length"] == "12"
            # The connection is still in sync for the next request.
            assert (await client.request("GET", "/")).body == b"twelve bytes"
            await client.aclose()


async def test_expect_100_continue() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.path == "/reject":
            await response.send(401, body=b"no")
            return
        await response.send(200, body=await request.read_body())

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(b"POST /ok HTTP/1.1\r\nhost: t\r\ncontent-length: 4\r\nexpect: 100-continue\r\n\r\n")
            first = await client.stream.receive_some(65536)
            assert first.startswith(b"HTTP/1.1 100 ")
            await client.send(b"body")
            reply = await client.response("POST")
            assert (reply.status, reply.body) == (200, b"body")
            # Rejected without reading: no 100, an answer, and the connection closes (the client may never
            # send the body, so its framing is unknowable).
            await client.send(b"POST /reject HTTP/1.1\r\nhost: t\r\ncontent-length: 4\r\nexpect: 100-continue\r\n\r\n")
            reply = await client.response("POST")
            assert (reply.status, reply.informational) == (401, [])
            assert await client.read_until_closed() == b""
            await client.aclose()


async def test_unread_small_body_is_drained_and_keep_alive_continues() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.send(202)

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            assert (await client.request("POST", "/", body=b"x" * 1000)).status == 202
            assert (await client.request("POST", "/", body=b"y" * 10)).status == 202
            await client.aclose()


async def test_http10_client_gets_a_close_delimited_stream() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200, [("content-type", "text/event-stream")])
        await response.write(b"data: 1\n\n")
        await response.write(b"data: 2\n\n")
        await response.finish()

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(b"GET / HTTP/1.0\r\n\r\n")
            raw = await client.read_until_closed()
            head, _, body = raw.partition(b"\r\n\r\n")
            assert head.startswith(b"HTTP/1.1 200 ")
            assert b"transfer-encoding" not in head.lower()
            assert body == b"data: 1\n\ndata: 2\n\n"
            await client.aclose()


# --- limits --------------------------------------------------------------------------------------------------


async def test_413_when_content_length_is_over_the_limit_before_the_handler_runs() -> None:
    called = False

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        nonlocal called
        called = True
        await response.send(200)

    with trio.fail_after(5):
        async with serving(handler, max_body_bytes=1000) as port:
            client = await Raw.connect(port)
            await client.send(b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 104857600\r\n\r\n" + b"x" * 5000)
            reply = await client.response("POST")
            assert reply.status == 413
            assert reply.headers["connection"] == "close"
            assert await client.read_until_closed() == b""
            await client.aclose()
    assert not called


async def test_413_while_counting_a_chunked_body() -> None:
    caught: list[BaseException] = []

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        try:
            await request.read_body()
        except RequestBodyTooLarge as exc:
            caught.append(exc)
            raise
        await response.send(200)

    with trio.fail_after(5):
        async with serving(handler, max_body_bytes=1000) as port:
            client = await Raw.connect(port)

            async def upload() -> None:
                try:
                    await client.send(b"POST / HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n")
                    for _ in range(64):
                        await client.send(b"1000\r\n" + b"z" * 4096 + b"\r\n")
                except trio.BrokenResourceError:
                    pass

            async with trio.open_nursery() as nursery:
                nursery.start_soon(upload)
                reply = await client.response("POST")
            assert reply.status == 413
            await client.aclose()
    assert len(caught) == 1


async def test_lying_content_length_cannot_smuggle_a_huge_body() -> None:
    bodies: list[bytes] = []

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        bodies.append(await request.read_body())
        await response.send(200)

    with trio.fail_after(5):
        async with serving(handler, max_body_bytes=1000, max_header_bytes=2048) as port:
            # Claims 5 bytes and sends 200 kB: the rest is parsed as a next request head, which is garbage
            # and too large, so the connection is answered 431 and closed; nothing big is ever buffered.
            client = await Raw.connect(port)

            async def upload() -> None:
                try:
                    await client.send(b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 5\r\n\r\n" + b"A" * 200_000)
                except trio.BrokenResourceError:
                    pass

            async with trio.open_nursery() as nursery:
                nursery.start_soon(upload)
                assert (await client.response("POST")).status == 200
                assert (await client.response()).status in (400, 431)
            await client.aclose()

    assert bodies == [b"AAAAA"]


async def test_408_when_the_body_stalls() -> None:
    with trio.fail_after(5):
        async with serving(echo, body_timeout=0.3) as port:
            client = await Raw.connect(port)
            start = trio.current_time()
            await client.send(b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 500\r\n\r\n0123456789")
            reply = await client.response("POST")
            assert reply.status == 408
            assert 0.25 < trio.current_time() - start < 2
            await client.aclose()


async def test_431_for_a_huge_head() -> None:
    with trio.fail_after(5):
        async with serving(echo, max_header_bytes=4096) as port:
            client = await Raw.connect(port)

            async def upload() -> None:
                try:
                    await client.send(b"GET / HTTP/1.1\r\nhost: t\r\nx-big: " + b"a" * 1_000_000 + b"\r\n\r\n")
                except trio.BrokenResourceError:
                    pass

            async with trio.open_nursery() as nursery:
                nursery.start_soon(upload)
                reply = await client.response()
            assert reply.status == 431
            await client.aclose()


async def test_431_for_too_many_headers() -> None:
    with trio.fail_after(5):
        async with serving(echo, max_header_count=20) as port:
            client = await Raw.connect(port)
            reply = await client.request("GET", "/", headers=[(f"x-h{i}", "v") for i in range(25)])
            assert reply.status == 431
            assert await client.read_until_closed() == b""
            await client.aclose()
            client = await Raw.connect(port)
            assert (await client.request("GET", "/", headers=[(f"x-h{i}", "v") for i in range(10)])).status == 200
            await client.aclose()


async def test_slowloris_head_is_cut_off_by_the_header_timeout() -> None:
    with trio.fail_after(5):
        async with serving(echo, header_timeout=0.3) as port:
            client = await Raw.connect(port)
            start = trio.current_time()
            closed_at = None

            async def trickle() -> None:
                try:
                    for byte in b"GET / HTTP/1.1\r\nhost: t\r\nx-slow: " + b"a" * 1000:
                        await client.send(bytes([byte]))
                        await trio.sleep(0.02)
                except trio.BrokenResourceError:
                    pass

            async with trio.open_nursery() as nursery:
                nursery.start_soon(trickle)
                data = await client.read_until_closed()
                closed_at = trio.current_time() - start
                nursery.cancel_scope.cancel()
            assert data.startswith(b"HTTP/1.1 408 ")
            assert 0.25 < closed_at < 2.0
            await client.aclose()


async def test_idle_connections_are_closed_after_the_keep_alive_timeout() -> None:
    with trio.fail_after(5):
        async with serving(echo, keep_alive_timeout=0.2, header_timeout=0.3) as port:
            client = await Raw.connect(port)
            assert (await client.request()).status == 200
            start = trio.current_time()
            assert await client.read_until_closed() == b""
            assert 0.15 < trio.current_time() - start < 2
            # A connection that never sends anything is closed by the header timeout.
            silent = await Raw.connect(port)
            assert await silent.read_until_closed() == b""
            await silent.aclose()
            await client.aclose()


async def test_each_idle_connection_is_closed_a_keep_alive_timeout_after_its_own_last_request(
    autojump_clock: trio.testing.MockClock,
) -> None:
    closed: dict[str, float] = {}

    async def client(name: str, requests_at: list[float]) -> None:
        conn = await Raw.connect(port)
        for at in requests_at:
            await trio.sleep_until(start + at)
            assert (await conn.request()).status == 200
        assert await conn.read_until_closed() == b""
        closed[name] = trio.current_time() - start
        await conn.aclose()

    with trio.fail_after(100):
        async with serving(echo, keep_alive_timeout=10, header_timeout=100) as port:
            start = trio.current_time()
            async with trio.open_nursery() as nursery:
                nursery.start_soon(client, "once", [0])
                nursery.start_soon(client, "later", [4])
                nursery.start_soon(client, "every 6 s", [0, 6, 12])
                nursery.start_soon(client, "every 9 s", [1, 10, 19, 28])
    assert closed == pytest.approx({"once": 10, "later": 14, "every 6 s": 22, "every 9 s": 38}, abs=0.01)


async def test_malformed_requests_get_400() -> None:
    with trio.fail_after(5):
        async with serving(echo) as port:
            for garbage in (
                b"GARBAGE\r\n\r\n",
                b"GET / HTTP/1.1\r\nhost: t\r\nbad header line\r\n\r\n",
                b"GET / HTTP/1.1\r\n\r\n",  # HTTP/1.1 without Host
                b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: nope\r\n\r\n",
            ):
                client = await Raw.connect(port)
                await client.send(garbage)
                data = await client.read_until_closed()
                assert data.startswith(b"HTTP/1.1 400 "), (garbage, data)
                await client.aclose()
            client = await Raw.connect(port)
            await client.send(b"GET / HTTP/2.0\r\nhost: t\r\n\r\n")
            assert (await client.read_until_closed()).startswith(b"HTTP/1.1 505 ")
            await client.aclose()
            # A broken chunked body reaches the handler as MalformedRequestBody, answered 400.
            client = await Raw.connect(port)
            await client.send(b"POST / HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n")
            assert (await client.read_until_closed()).startswith(b"HTTP/1.1 400 ")
            await client.aclose()


async def test_upgrade_offers_are_declined_and_connect_is_refused() -> None:
    with trio.fail_after(5):
        async with serving(echo) as port:
            client = await Raw.connect(port)
            reply = await client.request(
                "POST", "/", headers=[("connection", "upgrade"), ("upgrade", "h2c")], body=b"hi"
            )
            assert (reply.status, reply.body) == (200, b"POST /  2\nhi")
            assert (await client.request("GET", "/again")).status == 200  # still plain HTTP/1.1
            await client.aclose()
            client = await Raw.connect(port)
            await client.send(b"CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n")
            assert (await client.read_until_closed()).startswith(b"HTTP/1.1 501 ")
            await client.aclose()


async def test_over_max_connections_gets_503() -> None:
    with trio.fail_after(5):
        async with serving(echo, max_connections=1) as port:
            first = await Raw.connect(port)
            assert (await first.request()).status == 200
            second = await Raw.connect(port)
            reply = await second.request()
            assert reply.status == 503 and reply.headers["retry-after"] == "1"
            await second.aclose()
            await first.aclose()
            await trio.sleep(0.05)
            third = await Raw.connect(port)
            assert (await third.request()).status == 200
            await third.aclose()


# --- streaming and disconnects -------------------------------------------------------------------------------


async def test_streaming_response_is_read_incrementally() -> None:
    step = [trio.Event() for _ in range(3)]

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200, [("content-type", "text/event-stream")])
        for i in range(3):
            await response.write(f"data: {i}\n\n".encode())
            await step[i].wait()
        await response.finish()

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(b"GET / HTTP/1.1\r\nhost: t\r\n\r\n")
            received = b""
            for i in range(3):
                # Each chunk arrives while the handler is still blocked, i.e. it is not buffered.
                while f"data: {i}\n\n".encode() not in received:
                    received += await client.stream.receive_some(65536)
                step[i].set()
            assert b"transfer-encoding: chunked" in received.lower()
            while not received.endswith(b"0\r\n\r\n"):
                received += await client.stream.receive_some(65536)
            # Keep-alive still works after a streamed response.
            client.pending = b""
            assert (await client.request()).status == 200
            await client.aclose()


async def test_a_held_head_goes_with_the_next_write() -> None:
    release = trio.Event()

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200, [("content-type", "text/event-stream")], b"data: first\n\n", hold=True)
        if request.target == "/slow":
            await response.write(b"")  # the head and the first event go now, on their own
            await release.wait()
        await response.finish(b"data: last\n\n")

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            quick = await client.request("GET", "/quick")  # held head, then finish(): one complete response
            assert quick.status == 200 and quick.body == b"data: first\n\ndata: last\n\n"
            assert quick.headers["content-length"] == str(len(quick.body))  # whole, so not chunked
            await client.send(b"GET /slow HTTP/1.1\r\nhost: t\r\n\r\n")
            received = client.pending
            while b"data: first" not in received:
                received += await client.stream.receive_some(65536)
            assert b"data: last" not in received and not release.is_set()  # sent while the handler waits
            release.set()
            while not received.endswith(b"0\r\n\r\n"):
                received += await client.stream.receive_some(65536)
            assert received.lower().startswith(b"http/1.1 200") and b"data: last" in received
            await client.aclose()


async def test_client_disconnect_during_a_stream_is_noticed_at_once() -> None:
    noticed: dict[str, Any] = {}
    done = trio.Event()

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200, [("content-type", "text/event-stream")])
        await response.write(b"data: hello\n\n")
        with trio.CancelScope() as scope:
            async with trio.open_nursery() as nursery:

                async def watch() -> None:
                    await response.disconnected.wait()
                    noticed["at"] = trio.current_time()
                    scope.cancel()

                nursery.start_soon(watch)
                await trio.sleep_forever()
        noticed["cancelled"] = scope.cancelled_caught
        with pytest.raises(ClientDisconnected):
            for _ in range(1000):  # the kernel may accept a write or two before the reset comes back
                await response.write(b"data: late\n\n")
                await trio.sleep(0.001)
        done.set()

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(b"GET / HTTP/1.1\r\nhost: t\r\n\r\n")
            received = b""
            while b"data: hello" not in received:
                received += await client.stream.receive_some(65536)
            closed_at = trio.current_time()
            await client.aclose()
            await done.wait()
    assert noticed["cancelled"]
    assert noticed["at"] - closed_at < 0.1


async def test_a_shielded_write_is_sent_whole_though_its_writer_is_cancelled_while_it_waits(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # One writer holds the connection with a write larger than the socket takes while the client does not read;
    # a second, shielded, is cancelled while it waits for the first; then the client reads. Both arrive whole, in
    # order, and the response ends cleanly; an unshielded write cancelled the same way would break it.
    big = b"b" * (8 * 1024 * 1024)
    outcome: dict[str, Any] = {}

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(response.write, big)
            await trio.testing.wait_all_tasks_blocked()
            with trio.move_on_after(0.05) as waiting:
                await response.write(b"event: one\n\n", shielded=True)
            outcome["cancel_caught"] = waiting.cancelled_caught
            with trio.move_on_after(0.05):
                await response.finish(b"event: last\n\n", shielded=True)
        outcome["finished"] = response.finished

    with trio.fail_after(20):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(b"GET / HTTP/1.1\r\nhost: t\r\n\r\n")
            await trio.sleep(0.2)  # both writers wait now: the big one on the socket, the other on the lock
            reply = await client.response()
            await client.aclose()
    assert reply.status == 200 and reply.body == big + b"event: one\n\n" + b"event: last\n\n"
    assert outcome == {"cancel_caught": False, "finished": True}


async def test_a_shielded_write_to_a_full_socket_is_sent_whole_though_its_writer_is_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    big = b"f" * (8 * 1024 * 1024)
    outcome: dict[str, Any] = {}

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200)
        with trio.move_on_after(0.05) as waiting:
            await response.write(big, shielded=True)  # the client does not read yet: the socket fills up
        outcome["cancel_caught"] = waiting.cancelled_caught
        await response.finish(b"end")

    with trio.fail_after(20):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(b"GET / HTTP/1.1\r\nhost: t\r\n\r\n")
            await trio.sleep(0.2)
            reply = await client.response()
            await client.aclose()
    assert reply.status == 200 and reply.body == big + b"end"
    assert outcome == {"cancel_caught": False}


async def test_client_that_stops_reading_is_dropped_after_the_write_timeout() -> None:
    outcome: dict[str, Any] = {}

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200)
        chunk = b"x" * 65536
        start = trio.current_time()
        try:
            while True:
                await response.write(chunk)
        except ClientDisconnected as exc:
            outcome["error"] = str(exc)
            outcome["elapsed"] = trio.current_time() - start
            outcome["disconnected"] = response.disconnected.is_set()

    with trio.fail_after(10):
        async with serving(handler, write_timeout=0.3) as port:
            client = await Raw.connect(port)
            await client.send(b"GET / HTTP/1.1\r\nhost: t\r\n\r\n")
            while "error" not in outcome:
                await trio.sleep(0.05)
            await client.aclose()
    assert "did not read" in outcome["error"]
    assert outcome["disconnected"]


async def test_client_disconnect_during_upload_is_quiet(caplog: pytest.LogCaptureFixture) -> None:
    errors: list[BaseException] = []
    done = trio.Event()

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        try:
            await request.read_body()
        except ClientDisconnected as exc:
            errors.append(exc)
            done.set()
            raise

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 1000\r\n\r\npartial")
            await trio.sleep(0.05)
            await client.aclose()
            await done.wait()
    assert len(errors) == 1
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


# --- handler failures ----------------------------------------------------------------------------------------


async def test_handler_exception_gives_500_and_the_server_keeps_serving(caplog: pytest.LogCaptureFixture) -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.path == "/boom":
            raise ValueError("kaboom")
        if request.path == "/boom-mid-stream":
            await response.start(200, [("content-length", "100")])
            await response.write(b"partial")
            raise ValueError("kaboom later")
        await response.send(200, body=b"fine")

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            assert (await client.request("GET", "/boom")).status == 500
            # The same connection is still usable after a clean 500.
            assert (await client.request("GET", "/")).body == b"fine"
            # After the response started, the only honest signal is a closed connection.
            with pytest.raises((EOFError, h11.RemoteProtocolError)):
                await client.request("GET", "/boom-mid-stream")
            await client.aclose()
            other = await Raw.connect(port)
            assert (await other.request("GET", "/")).body == b"fine"
            await other.aclose()
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(messages) == 2 and all("HTTP handler failed" in m for m in messages)


async def test_handler_that_does_not_respond_gets_500_and_a_log(caplog: pytest.LogCaptureFixture) -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        return None

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            assert (await client.request()).status == 500
            await client.aclose()
    assert any("without responding" in r.getMessage() for r in caplog.records)


async def test_streamed_response_is_finished_if_the_handler_forgets() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.start(200)
        await response.write(b"abc")

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            assert (await client.request()).body == b"abc"
            assert (await client.request()).body == b"abc"
            await client.aclose()


async def test_a_handler_cancelled_through_its_handler_scope_ends_its_response_and_the_connection_goes_on() -> None:
    """Cancelling ``handler_scope`` from outside ends that handler only: what it gave ``after_cancel`` writes the
    rest of its response, and the same connection serves its next request in a fresh scope."""
    scopes: list[trio.CancelScope] = []
    waiting = trio.Event()

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        scope = response.handler_scope
        scopes.append(scope)
        if request.path == "/wait":
            await response.start(200)
            await response.write(b"before ")

            async def end() -> None:
                await trio.lowlevel.checkpoint()  # not cancelled any more: outside the cancelled scope
                await response.finish(b"after the cancel")

            response.after_cancel(end)
            waiting.set()
            await trio.sleep_forever()
        await trio.lowlevel.checkpoint()
        await response.send(200, body=f"{request.path} {request.peer and request.peer[1]}".encode())

    with trio.fail_after(5):
        async with serving(handler) as port, trio.open_nursery() as nursery:
            client = await Raw.connect(port)
            port_seen = client.stream.socket.getsockname()[1]
            assert (await client.request("GET", "/first")).body == f"/first {port_seen}".encode()

            async def cancel_when_waiting() -> None:
                await waiting.wait()
                scopes[-1].cancel()

            nursery.start_soon(cancel_when_waiting)
            assert (await client.request("GET", "/wait")).body == b"before after the cancel"
            assert (await client.request("GET", "/next")).body == f"/next {port_seen}".encode()
            await client.aclose()
    first, cancelled, last = scopes
    assert first is cancelled and cancelled.cancel_called  # one scope for the requests until one was cancelled
    assert last is not cancelled and not last.cancel_called


async def test_response_api_misuse_raises() -> None:
    errors: list[str] = []

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        bad_calls: list[Callable[[], Awaitable[None]]] = [
            lambda: response.write(b"x"),
            lambda: response.finish(),
            lambda: response.send(101),
            lambda: response.send(204, body=b"x"),
        ]
        for bad in bad_calls:
            try:
                await bad()
            except (RuntimeError, ValueError) as exc:
                errors.append(type(exc).__name__)
        await response.send(200)
        try:
            await response.start(200)
        except RuntimeError:
            errors.append("again")

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            assert (await client.request()).status == 200
            await client.aclose()
    assert errors == ["RuntimeError", "RuntimeError", "ValueError", "ValueError", "again"]


# --- shutdown ------------------------------------------------------------------------------------------------


async def test_a_drain_lets_short_requests_finish_then_cancelling_cuts_the_rest() -> None:
    stream_started = trio.Event()

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.path == "/stream":
            await response.start(200)
            await response.write(b"data: 1\n\n")
            stream_started.set()
            await trio.sleep_forever()
        await trio.sleep(0.2)
        await response.send(200, body=b"finished")

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            drain = Drain()
            limits = HttpLimits(graceful_shutdown_timeout=0.5)
            listeners = await nursery.start(partial(serve_http, handler, limits=limits, drain=drain))
            port = listeners[0].socket.getsockname()[1]
            streamer = await Raw.connect(port)
            await streamer.send(b"GET /stream HTTP/1.1\r\nhost: t\r\n\r\n")
            await stream_started.wait()
            idle = await Raw.connect(port)
            assert (await idle.request("GET", "/")).status == 200  # now idle in keep-alive
            slow = await Raw.connect(port)
            await slow.send(b"GET /slow HTTP/1.1\r\nhost: t\r\n\r\n")
            await trio.sleep(0.05)
            start = trio.current_time()
            async with trio.open_nursery() as clients:
                # The idle connection closes at once, the slow request completes with Connection: close,
                # and new connections are refused.
                async def check_idle() -> None:
                    assert await idle.read_until_closed() == b""

                async def check_slow() -> None:
                    reply = await slow.response()
                    assert (reply.status, reply.body, reply.headers["connection"]) == (200, b"finished", "close")

                clients.start_soon(check_idle)
                clients.start_soon(check_slow)
                assert not await drain()  # the endless stream is still running at the deadline
            drained = trio.current_time() - start
            with pytest.raises(OSError):
                await trio.open_tcp_stream("127.0.0.1", port)
            nursery.cancel_scope.cancel()
        await streamer.read_until_closed()  # cancelling cut the stream at once
        cancelled = trio.current_time() - start - drained
        for client in (streamer, idle, slow):
            await client.aclose()
    assert 0.4 < drained < 1.5 and cancelled < 0.1


async def test_cancelling_the_server_cancels_every_handler_at_once() -> None:
    started = 0
    all_started = trio.Event()
    cancelled: list[str] = []

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        nonlocal started
        started += 1
        if started == 2:
            all_started.set()
        try:
            if request.path == "/stream":
                await response.start(200)
                await response.write(b"data: 1\n\n")
            await trio.sleep_forever()
        except trio.Cancelled:
            cancelled.append(request.path)
            raise

    with trio.fail_after(5):
        clients = []
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(partial(serve_http, handler))
            port = listeners[0].socket.getsockname()[1]
            for path in ("/stream", "/slow"):
                client = await Raw.connect(port)
                await client.send(f"GET {path} HTTP/1.1\r\nhost: t\r\n\r\n".encode())
                clients.append(client)
            await all_started.wait()
            start = trio.current_time()
            nursery.cancel_scope.cancel()
        elapsed = trio.current_time() - start
        for client in clients:
            await client.read_until_closed()
            await client.aclose()
    assert sorted(cancelled) == ["/slow", "/stream"] and elapsed < 0.1


async def test_read_body_is_cancel_safe(autojump_clock: trio.testing.MockClock) -> None:
    attempts: list[bool] = []

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        with trio.move_on_after(0.1) as scope:
            await request.read_body()
        attempts.append(scope.cancelled_caught)
        await response.send(200, body=await request.read_body())

    with trio.fail_after(5):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(b"POST / HTTP/1.1\r\nhost: t\r\ncontent-length: 10\r\n\r\n01234")
            await trio.sleep(0.2)
            await client.send(b"56789")
            assert (await client.response("POST")).body == b"0123456789"
            await client.aclose()
    assert attempts == [True]


async def test_connections_can_run_in_the_callers_nursery() -> None:
    with trio.fail_after(5):
        async with trio.open_nursery() as handlers:
            async with trio.open_nursery() as nursery:
                listeners = await nursery.start(partial(serve_http, echo, handler_nursery=handlers))
                client = await Raw.connect(listeners[0].socket.getsockname()[1])
                assert (await client.request()).status == 200
                nursery.cancel_scope.cancel()
            # Stopping the server tells the idle connection (living in our nursery) to close.
            assert await client.read_until_closed() == b""
            await client.aclose()
