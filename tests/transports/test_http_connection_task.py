"""An HTTP connection whose handlers answer without waiting runs in one task, and reads in it; the first time a
handler waits, a reader task starts and notices a client that goes away (real loopback sockets).

The answers of such handlers are written straight to the socket; what the socket does not take at once goes
through trio as before. Each test checks what the client gets, and the task count where it is the point.
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from functools import partial
from typing import AsyncIterator

import trio

from trio_mcp.transports._h11server import Drain, HttpLimits, HttpRequest, HttpResponse, serve_http

from test_http_server import Raw  # isort: skip


@asynccontextmanager
async def serving(handler: object, drain: Drain | None = None) -> AsyncIterator[int]:
    limits = HttpLimits(graceful_shutdown_timeout=2, keep_alive_timeout=30)
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(serve_http, handler, limits=limits, drain=drain))  # type: ignore[arg-type]
        yield listeners[0].socket.getsockname()[1]
        nursery.cancel_scope.cancel()


def tasks_living() -> int:
    return trio.lowlevel.current_statistics().tasks_living


async def settled_tasks() -> int:
    await trio.testing.wait_all_tasks_blocked()
    return tasks_living()


async def test_handlers_that_never_wait_leave_one_task_per_connection_until_one_waits() -> None:
    waited = trio.Event()

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        body = await request.read_body()
        if request.path == "/wait":
            await trio.sleep(0)
            waited.set()
        await response.send(200, [("content-type", "text/plain")], body[::-1])

    with trio.fail_after(10):
        async with serving(handler) as port:
            before = await settled_tasks()
            client = await Raw.connect(port)
            for number in range(20):
                reply = await client.request("POST", "/", body=f"call {number}".encode())
                assert (reply.status, reply.body) == (200, f"call {number}".encode()[::-1])
            assert await settled_tasks() == before + 1, "a connection whose handlers never waited has one task"
            reply = await client.request("POST", "/wait", body=b"abc")
            assert (reply.status, reply.body, waited.is_set()) == (200, b"cba", True)
            assert await settled_tasks() == before + 2, "from a handler's first wait, a reader task runs beside it"
            for _ in range(5):  # and the connection goes on as before
                reply = await client.request("POST", "/", body=b"xy")
                assert (reply.status, reply.body) == (200, b"yx")
            await client.aclose()


async def test_a_handler_that_waits_on_its_first_line_notices_the_client_leave() -> None:
    cancelled = trio.Event()

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.path == "/quick":
            await response.send(200, body=b"quick")
            return
        with trio.CancelScope() as scope:
            response.cancel_on_disconnect(scope)
            await trio.sleep_forever()
        assert response.disconnected.is_set()
        cancelled.set()

    with trio.fail_after(10):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            assert (await client.request("GET", "/quick")).body == b"quick"  # this connection has no reader yet
            await client.send(b"GET /forever HTTP/1.1\r\nhost: t\r\n\r\n")
            await trio.testing.wait_all_tasks_blocked()
            await client.aclose()
            await cancelled.wait()


async def test_a_body_that_arrives_late_is_read_in_the_connections_task_before_the_reader_starts() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        body = await request.read_body()  # waits for bytes: the connection's own read, not the reader's
        await trio.sleep(0)  # the first wait of another kind: now the reader starts
        await response.send(200, body=body.upper())

    with trio.fail_after(10):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(b"POST / HTTP/1.1\r\nhost: t\r\ntransfer-encoding: chunked\r\n\r\n5\r\nhello\r\n")
            await trio.testing.wait_all_tasks_blocked()
            await client.send(b"6\r\n world\r\n")
            await trio.testing.wait_all_tasks_blocked()
            await client.send(b"0\r\n\r\n")
            reply = await client.response("POST")
            assert (reply.status, reply.body) == (200, b"HELLO WORLD")
            reply = await client.request("POST", "/", body=b"again")
            assert (reply.status, reply.body) == (200, b"AGAIN")
            await client.aclose()


async def test_an_answer_larger_than_the_socket_takes_at_once_arrives_whole_and_in_order() -> None:
    big = bytes(range(256)) * (32 * 1024)  # 8 MiB: the first write takes part, trio writes the rest

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await request.read_body()
        await response.send(200, body=big if request.path == "/big" else b"small")

    with trio.fail_after(20):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            for _ in range(2):
                reply = await client.request("GET", "/big")
                assert reply.status == 200 and len(reply.body) == len(big) and reply.body == big
                assert (await client.request("GET", "/")).body == b"small"
            await client.aclose()


async def test_pipelined_requests_to_handlers_that_never_wait_are_answered_in_order() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.send(200, body=request.path.encode())

    with trio.fail_after(10):
        async with serving(handler) as port:
            client = await Raw.connect(port)
            await client.send(b"".join(b"GET /%d HTTP/1.1\r\nhost: t\r\n\r\n" % number for number in range(50)))
            for number in range(50):
                assert (await client.response()).body == b"/%d" % number
            await client.aclose()


async def test_a_drain_closes_a_connection_idle_in_its_own_task_at_once() -> None:
    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        await response.send(200, body=b"ok")

    drain = Drain()
    with trio.fail_after(10):
        async with serving(handler, drain) as port:
            client = await Raw.connect(port)
            assert (await client.request()).body == b"ok"  # now waiting for its next request, with no reader
            start = trio.current_time()
            assert await drain()
            assert await client.read_until_closed() == b""
            assert trio.current_time() - start < 1
            await client.aclose()
