"""Byte streams over blocking file descriptors, each call made in a worker thread.

The portable form of the stdio server's stdin/stdout: Windows has no non-blocking pipes for trio to wait on, and a
blocking read can only wait in a thread. A read cancelled while its thread waits is kept, not lost: the next
``receive_some`` takes its bytes. A descriptor is closed once no thread is inside a call on it, so its number is
never reused under a thread still reading it.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import trio

if TYPE_CHECKING:
    from outcome import Outcome

__all__ = ["ThreadReceiveStream", "ThreadSendStream"]

_T = TypeVar("_T")


class _SharedFd:
    """A file descriptor that threads make calls on, closed by whoever leaves it last after ``close()``."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self._busy = 0
        self._closing = False

    def call(self, function: Callable[[int], _T]) -> _T:
        self._enter()
        try:
            return function(self._fd)
        finally:
            with self._lock:
                self._busy -= 1
                last = self._closing and self._busy == 0
            if last:
                os.close(self._fd)

    def _enter(self) -> None:
        with self._lock:
            if self._closing:
                raise OSError(errno.EBADF, "file descriptor closed")
            self._busy += 1

    def close(self) -> None:
        with self._lock:
            if self._closing:
                return
            self._closing = True
            last = self._busy == 0
        if last:
            os.close(self._fd)


class ThreadReceiveStream(trio.abc.ReceiveStream):
    """Reads a blocking file descriptor, which it owns, in a worker thread."""

    def __init__(self, fd: int) -> None:
        self._fd = _SharedFd(fd)
        self._done: trio.Event | None = None
        self._result: bytes | OSError = b""
        self._closed = False

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self._closed:
            raise trio.ClosedResourceError("the stream is closed")
        if self._done is None:
            self._start_read(max_bytes or 65536)
        done = self._done
        assert done is not None
        await done.wait()  # cancelled: the read stays under way, for the next call
        self._done = None
        result, self._result = self._result, b""
        if isinstance(result, OSError):
            raise trio.BrokenResourceError(str(result)) from result
        return result

    def _start_read(self, max_bytes: int) -> None:
        done = self._done = trio.Event()
        token = trio.lowlevel.current_trio_token()

        def read() -> bytes | OSError:
            try:
                return self._fd.call(lambda fd: os.read(fd, max_bytes))
            except OSError as exc:
                return exc

        def deliver(outcome: Outcome[bytes | OSError]) -> None:
            def hand_over() -> None:
                try:
                    self._result = outcome.unwrap()
                except Exception as exc:  # not an OSError: still this stream's failure, not the event loop's
                    self._result = OSError(f"read failed: {exc!r}")
                done.set()

            try:
                token.run_sync_soon(hand_over)
            except trio.RunFinishedError:
                pass

        trio.lowlevel.start_thread_soon(read, deliver)

    async def aclose(self) -> None:
        self._closed = True
        self._fd.close()
        await trio.lowlevel.checkpoint()


class ThreadSendStream(trio.abc.SendStream):
    """Writes a blocking file descriptor, which it owns, in a worker thread. A cancelled write goes on in its thread
    (the caller marks the stream broken); closing waits for no thread."""

    def __init__(self, fd: int) -> None:
        self._fd = _SharedFd(fd)
        self._closed = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self._closed:
            raise trio.ClosedResourceError("the stream is closed")
        chunk = bytes(data)

        def write_all(fd: int) -> None:
            view = memoryview(chunk)
            while view:
                view = view[os.write(fd, view) :]

        try:
            await trio.to_thread.run_sync(self._fd.call, write_all, abandon_on_cancel=True)
        except OSError as exc:
            raise trio.BrokenResourceError(str(exc)) from exc

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.checkpoint()

    async def aclose(self) -> None:
        self._closed = True
        self._fd.close()
        await trio.lowlevel.checkpoint()
