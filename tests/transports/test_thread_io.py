"""The portable stdio path's streams (worker threads over blocking fds) on their own, over real pipes: what a
cancelled read, a close under a waiting read and a vanished reader do."""

from __future__ import annotations

import os

import pytest
import trio

from trio_mcp.transports._thread_io import ThreadReceiveStream, ThreadSendStream


async def test_a_cancelled_thread_read_keeps_its_bytes_for_the_next_one() -> None:
    read_end, write_end = os.pipe()
    stream = ThreadReceiveStream(read_end)
    with trio.fail_after(10):
        with trio.move_on_after(0.05) as waited:
            await stream.receive_some()  # a thread now waits in read(): cancelling the call leaves it there
        assert waited.cancelled_caught
        os.write(write_end, b"kept")
        assert await stream.receive_some() == b"kept"
        os.close(write_end)
        assert await stream.receive_some() == b""
    await stream.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await stream.receive_some()


async def test_a_thread_stream_closed_while_its_read_waits_closes_the_fd_once_the_read_returns() -> None:
    read_end, write_end = os.pipe()
    stream = ThreadReceiveStream(read_end)
    with trio.move_on_after(0.05):
        await stream.receive_some()
    await stream.aclose()
    os.fstat(read_end)  # still open: a thread is reading it, and the number must not be reused under it
    os.write(write_end, b"x")
    with trio.fail_after(10):
        while True:
            try:
                os.fstat(read_end)
            except OSError:
                break
            await trio.sleep(0.01)
    os.close(write_end)


async def test_writing_to_a_pipe_whose_reader_is_gone_is_a_broken_resource() -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)
    stream = ThreadSendStream(write_end)
    with trio.fail_after(10), pytest.raises(trio.BrokenResourceError):
        await stream.send_all(b"nobody reads this")
    await stream.aclose()
