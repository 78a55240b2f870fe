"""Every write is a trio checkpoint, also when the descriptor takes it at once: a cancelled writer raises
``Cancelled`` and writes nothing, and a write lets the other tasks run. Over a real pipe and a real socket."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial

import h11
import pytest
import trio
import trio.testing

from trio_mcp.transports._h11server import HttpLimits, HttpRequest, HttpResponse, serve_http
from trio_mcp.transports._quick_lock import QuickLock
from trio_mcp.transports.stdio import StdioMessageStream


async def ran_meanwhile(*writes: Callable[[], Awaitable[object]]) -> bool:
    """Whether a task started just before two ``writes`` ran before they returned: each yielded to the scheduler
    (trio may run the two tasks of one batch in either order; after the first write's yield, the other task is
    sure to run before the second returns, and without yields it never runs)."""
    ran = False

    async def other() -> None:
        nonlocal ran
        ran = True

    async with trio.open_nursery() as nursery:
        nursery.start_soon(other)
        for write in writes:
            await write()
        yielded = ran
    return yielded


async def test_the_write_lock_is_a_checkpoint_even_when_free() -> None:
    lock = QuickLock()
    with trio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(trio.Cancelled):
            async with lock:
                pytest.fail("a cancelled caller took the lock")
    assert not lock.locked
    with trio.CancelScope() as scope:  # shielded: taken all the same, no Cancelled raised
        scope.cancel()
        await lock.acquire(shielded=True)
        assert lock.locked
        lock.release()
    assert not scope.cancelled_caught

    async def take() -> None:
        async with lock:
            pass

    assert await ran_meanwhile(take, take)


async def test_a_pipe_write_is_a_checkpoint_even_when_the_pipe_takes_it_at_once() -> None:
    read_end, write_end = os.pipe()
    stream = StdioMessageStream(trio.testing.MemoryReceiveStream(), trio.lowlevel.FdStream(write_end))
    peer = trio.lowlevel.FdStream(read_end)
    with trio.fail_after(5):
        with trio.CancelScope() as scope:
            scope.cancel()
            with pytest.raises(trio.Cancelled):
                await stream.send({"n": 1})
            stream.send_later({"n": 2})
            with pytest.raises(trio.Cancelled):
                await stream.flush()
        assert await ran_meanwhile(partial(stream.send, {"n": 3}), partial(stream.send, {"n": 4}))

        async def flush(n: int) -> None:
            stream.send_later({"n": n})
            await stream.flush()

        assert await ran_meanwhile(partial(flush, 5), partial(flush, 6))
        received = b""
        while received.count(b"\n") < 5:
            received += await peer.receive_some(1024)
        await stream.aclose()
        await peer.aclose()
    # The cancelled send wrote nothing; the line queued before the cancelled flush went with the next write.
    assert received == b'{"n":2}\n{"n":3}\n{"n":4}\n{"n":5}\n{"n":6}\n'


@asynccontextmanager
async def serving(handler: object) -> AsyncIterator[int]:
    async with trio.open_nursery() as nursery:
        listeners = await nursery.start(partial(serve_http, handler, limits=HttpLimits(graceful_shutdown_timeout=0.5)))
        yield listeners[0].socket.getsockname()[1]
        nursery.cancel_scope.cancel()


async def get(port: int, path: str) -> bytes:
    """GET ``path`` on a connection of its own; the body, or b"" if the server closed the connection instead."""
    client = await trio.open_tcp_stream("127.0.0.1", port)
    conn = h11.Connection(h11.CLIENT)
    await client.send_all(
        (conn.send(h11.Request(method="GET", target=path, headers=[("host", "test")])) or b"")
        + (conn.send(h11.EndOfMessage()) or b"")
    )
    body = b""
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await client.receive_some(4096))
            elif isinstance(event, h11.Data):
                body += event.data
            elif isinstance(event, h11.EndOfMessage):
                return body
    except h11.RemoteProtocolError:  # closed before a response
        return b""
    finally:
        await client.aclose()


async def test_a_socket_write_is_a_checkpoint_even_when_the_socket_takes_it_at_once() -> None:
    seen: list[str] = []

    async def handler(request: HttpRequest, response: HttpResponse) -> None:
        if request.path == "/cancelled":
            with trio.CancelScope() as scope:
                scope.cancel()
                await response.send(200, (("content-type", "text/plain"),), b"cancelled")
            seen.append(f"cancelled={scope.cancelled_caught}")
        else:
            yielded = await ran_meanwhile(partial(response.start, 200), partial(response.finish, b"ok"))
            seen.append(f"yielded={yielded}")

    with trio.fail_after(5):
        async with serving(handler) as port:
            assert await get(port, "/cancelled") == b""  # the cancelled write sent nothing
            assert await get(port, "/") == b"ok"
    assert seen == ["cancelled=True", "yielded=True"]
