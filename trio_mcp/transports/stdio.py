"""The stdio transport: newline-delimited JSON-RPC over a child process's stdin/stdout, both sides.

Server side, ``stdio_server_stream()`` takes over fds 0 and 1 and points fd 1 at stderr while it serves,
so a stray ``print()`` in a handler (or a child process it spawns) can never corrupt the wire; it reads and writes
them through trio's non-blocking pipes, or, portable (Windows, or chosen), in worker threads. Client side,
``StdioProcess`` spawns the server in its own process group, drains its stderr, and shuts it down in the
spec's order: close stdin, wait, SIGTERM, wait, SIGKILL (on Windows: the process tree ended); it keeps reading
the server's stdout until the process has exited, so a server that still writes while it stops never meets a
broken pipe.
"""

from __future__ import annotations

import collections
import logging
import math
import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any, Literal, Union

import trio

from .._core.framing import END_OF_STREAM, NEED_DATA, LineFramer, OversizedLine
from .._core.jsonrpc import InvalidMessage, RequestId, decode, encode
from .._in_task import pass_turn
from ..errors import INVALID_REQUEST, ConnectionClosed
from ._process_tree import end_group, group_spawn_options
from ._thread_io import ThreadReceiveStream, ThreadSendStream
from ._write_at_once import write_at_once

__all__ = [
    "StdioMessageStream",
    "StdioProcess",
    "stdio_server_stream",
    "StderrMode",
    "check_stdio_options",
    "PORTABLE_ENV",
]

logger = logging.getLogger("trio_mcp.stdio")

_READ_CHUNK = 65536
DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
DEFAULT_WRITE_TIMEOUT = 30.0
#: Seconds a server gets to exit after stdin closes, then after SIGTERM, when the client was cancelled.
URGENT_GRACE = 0.1
#: Seconds a server that wrote a line that is not JSON on stdout has to send a JSON-RPC message after all, before
#: the client gives up on it as not an MCP server (a banner line followed by MCP is fine; print() debugging is not).
NOT_MCP_GRACE = 3.0
#: Longest wait for a server that closed its pipes to be reaped, so that its exit status can be reported.
_DESCRIBE_TIMEOUT = 1.5

#: trio's stream over a file descriptor (Unix only).
_FD_STREAM: Any = getattr(trio.lowlevel, "FdStream", None)
#: Set to 1, the stdio server reads and writes stdin/stdout in worker threads on any OS, as it must on Windows.
PORTABLE_ENV = "TRIO_MCP_STDIO_PORTABLE"

StderrMode = Union[Literal["forward", "capture"], Callable[[str], None]]
"""What to do with a server's stderr: copy it to ours, only keep its tail, or hand each line to a callable."""


class _Batch:
    """Lines waiting to be written together, and the event set once they are on the pipe (or failed)."""

    __slots__ = ("lines", "taken", "done", "error")

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.taken = False
        self.done = trio.Event()
        self.error: ConnectionClosed | None = None


class StdioMessageStream:
    """A ``MessageStream`` over a pair of byte streams, one JSON message per line.

    Writes are group-committed: whoever finds the pipe idle writes every line queued so far in one call, and
    the others wait for the write that carries their line. A line is written whole or not at all: a sender
    cancelled before its line was picked up takes it back; once picked up, the write finishes (shielded,
    bounded by ``write_timeout``) and the send counts as done. A write that times out marks the stream broken.
    Lines queued by ``send_later`` go out with the next write, at the latest before ``receive()`` waits for input
    (or at ``flush()``); ``aclose()`` drops any still queued.
    """

    def __init__(
        self,
        receive_stream: trio.abc.ReceiveStream,
        send_stream: trio.abc.SendStream,
        *,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
        skip_unparseable: bool = False,
        on_eof: Callable[[], Awaitable[ConnectionClosed]] | None = None,
    ) -> None:
        """``on_eof`` builds the error for a peer that went away (end of input, or a write that found the pipe
        broken): a subprocess's exit status and stderr, say."""
        self._receive_stream = receive_stream
        self._send_stream = send_stream
        #: The pipe under ``send_stream`` when it is one (Unix), written directly while it takes a write whole.
        self._fd_stream: Any = send_stream if _FD_STREAM is not None and type(send_stream) is _FD_STREAM else None
        self._framer = LineFramer(max_line_bytes)
        self._max_line_bytes = max_line_bytes
        self._write_timeout = write_timeout
        self._skip_unparseable = skip_unparseable
        self._on_eof = on_eof
        self._broken: ConnectionClosed | None = None
        self._queued = _Batch()
        self._writing = False
        #: With ``skip_unparseable``: messages received, and the first line skipped as not JSON (to say what a
        #: non-MCP peer did).
        self.messages_received = 0
        self.first_skipped_line: bytes | None = None
        self._not_mcp_deadline = math.inf

    async def send(self, message: Any, *, related_request_id: RequestId | None = None, final: bool = False) -> None:
        await trio.lowlevel.checkpoint_if_cancelled()  # a cancelled sender sends nothing
        if self._broken is not None:
            raise ConnectionClosed(self._broken.reason, detail=self._broken.detail)
        line = encode(message) + b"\n"
        batch = self._queued
        batch.lines.append(line)
        if self._writing:
            try:
                await batch.done.wait()
            except trio.Cancelled:
                if not batch.taken:
                    batch.lines.remove(line)  # never written: the caller may act as if it was not sent
                    raise
                with trio.CancelScope(shield=True):
                    await batch.done.wait()  # bounded by the writer's timeout; the send happened
        else:
            await self._write_batches()
            # The checkpoint a write the pipe took at once lacks (the line is sent: not a cancellation point).
            await pass_turn()
        if batch.error is not None:
            raise ConnectionClosed(batch.error.reason, detail=batch.error.detail)

    def send_later(self, message: Any) -> None:
        """Queue ``message`` for the next write without waiting for it: a reader that answers the lines it holds
        writes the answers at once, when ``receive()`` needs more input (a failed write is raised there)."""
        if self._broken is not None:
            raise ConnectionClosed(self._broken.reason, detail=self._broken.detail)
        self._queued.lines.append(encode(message) + b"\n")

    async def flush(self) -> None:
        """Write what ``send_later`` queued unless a write under way takes it; raises ``ConnectionClosed`` if the
        pipe is broken, as the sends would have. A checkpoint, as ``send`` is; a cancelled caller writes nothing."""
        await trio.lowlevel.checkpoint_if_cancelled()
        await self._write_queued()
        await pass_turn()

    async def _write_queued(self) -> None:
        """``flush`` without its checkpoint, for ``receive`` (whose read is one)."""
        if not self._queued.lines or self._writing or self._wrote_queued_at_once():
            return
        if self._broken is None:
            await self._write_batches()
        if self._broken is not None:
            raise ConnectionClosed(self._broken.reason, detail=self._broken.detail)

    def _wrote_queued_at_once(self) -> bool:
        """Write the queued lines if the pipe takes them whole without waiting; whether it did. With no write under
        way, only ``send_later`` queued them: nobody waits for the batch, which therefore stays the queue."""
        lines = self._queued.lines
        data = lines[0] if len(lines) == 1 else b"".join(lines)
        sent = self._write_at_once(data)
        if sent == len(data):
            lines.clear()
            return True
        lines[:] = [data[sent:] if sent else data]  # joined once: the write that waits takes it as it is
        return False

    def _write_at_once(self, data: bytes) -> int:
        """Write what a pipe takes without waiting (most writes, whole: no scope and no scheduler pass for them);
        how much. 0 for a stream that is not a pipe, a full pipe or a broken one: ``send_all`` then waits, or
        says what went wrong."""
        stream = self._fd_stream
        if stream is None or self._broken is not None:
            return 0
        return write_at_once(stream.fileno(), data)

    async def _write_batches(self) -> None:
        """Write queued lines until none are left; runs in the task that found the pipe idle."""
        self._writing = True
        try:
            while self._queued.lines:
                batch, self._queued = self._queued, _Batch()
                batch.taken = True
                data = b"".join(batch.lines)
                sent = self._write_at_once(data)
                timed_out = False
                if sent < len(data):
                    # One scope: shielded from the sender's cancellation, ended by its own deadline.
                    with trio.CancelScope(shield=True, relative_deadline=self._write_timeout) as timer:
                        try:
                            await self._send_stream.send_all(memoryview(data)[sent:] if sent else data)
                        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                            self._broken = ConnectionClosed("stdio pipe closed", detail=str(exc) or None)
                    timed_out = timer.cancelled_caught
                if self._broken is not None and self._on_eof is not None:
                    # The peer is gone; whether the read side or this write notices first, say why.
                    with trio.CancelScope(shield=True, relative_deadline=_DESCRIBE_TIMEOUT):
                        self._broken = await self._on_eof()
                if timed_out:
                    self._broken = ConnectionClosed(f"peer did not read a message within {self._write_timeout:g} s")
                batch.error = self._broken
                batch.done.set()
                if self._broken is not None:
                    self._queued.error = self._broken
                    self._queued.done.set()
                    return
        finally:
            self._writing = False

    async def receive(self) -> Any:
        framer = self._framer
        while True:
            item = framer.next_line()
            if type(item) is bytes:
                message = decode(item)
                if self._skip_unparseable and not self._counts_as_mcp(message, item):
                    continue
                return message
            if item is NEED_DATA or item is END_OF_STREAM:
                await self._write_queued()
            if item is NEED_DATA:
                framer.receive_data(await self._read())
                continue
            if item is END_OF_STREAM:
                if self._on_eof is not None:
                    raise await self._on_eof()
                raise ConnectionClosed("peer closed the stdio stream")
            assert isinstance(item, OversizedLine)
            logger.warning("dropped a %d-byte message (limit %d bytes)", item.size, self._max_line_bytes)
            if not self._skip_unparseable:
                return InvalidMessage(
                    INVALID_REQUEST, f"Invalid Request: message exceeds the {self._max_line_bytes}-byte line limit"
                )

    def _counts_as_mcp(self, message: Any, line: bytes) -> bool:
        """For a reader that skips what is not JSON (a client reading a server's stdout): whether ``message``, read
        from ``line``, is one to return, noting a skipped line and the messages received."""
        if type(message) is InvalidMessage:
            logger.warning("skipping a line that is not JSON: %r", line[:200])
            if self.first_skipped_line is None:
                self.first_skipped_line = bytes(line[:200])
                if self.messages_received == 0:
                    self._not_mcp_deadline = trio.current_time() + NOT_MCP_GRACE
            return False
        self.messages_received += 1
        self._not_mcp_deadline = math.inf
        return True

    async def _read(self) -> bytes | bytearray:
        try:
            if self._not_mcp_deadline == math.inf:
                return await self._receive_stream.receive_some(_READ_CHUNK)
            with trio.move_on_at(self._not_mcp_deadline):
                return await self._receive_stream.receive_some(_READ_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise ConnectionClosed("stdio pipe closed", detail=str(exc) or None) from None
        raise self._not_mcp()

    def _not_mcp(self) -> ConnectionClosed:
        text = (self.first_skipped_line or b"").decode("utf-8", "replace")
        return ConnectionClosed(
            "the server writes what is not MCP to stdout",
            detail=f"a line like {text!r} and no JSON-RPC message within {NOT_MCP_GRACE:g} s: is it an MCP "
            "server? (an MCP server keeps stdout for its messages and logs to stderr)",
        )

    async def aclose(self) -> None:
        # Lines still queued by ``send_later`` are dropped: closing means now, even with a peer not reading.
        if self._broken is None:
            self._broken = ConnectionClosed("stdio stream closed")
        with trio.CancelScope(shield=True):
            await self._send_stream.aclose()
            await self._receive_stream.aclose()


@asynccontextmanager
async def stdio_server_stream(
    *,
    protect_stdout: bool = True,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    portable: bool | None = None,
) -> AsyncIterator[StdioMessageStream]:
    """This process's stdin/stdout as a ``MessageStream``.

    With ``protect_stdout`` (the default), fd 1 points at stderr and fd 0 at the null device while the block
    runs, so only MCP messages reach the real stdout; both are restored afterwards. ``portable`` reads and
    writes in worker threads instead of trio's non-blocking pipes: always on Windows, which has none; elsewhere
    when ``TRIO_MCP_STDIO_PORTABLE=1`` is set, unless given.
    """
    if portable is None:
        portable = sys.platform == "win32" or os.environ.get(PORTABLE_ENV, "0") not in ("", "0")
    elif not portable and sys.platform == "win32":
        raise ValueError("portable=False needs non-blocking pipes, which Windows does not have")
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    in_fd = os.dup(0)
    out_fd = os.dup(1)
    saved: tuple[int, int] | None = None
    if protect_stdout:
        saved = (os.dup(0), os.dup(1))
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
        _point_child_std_handles()
    receive: trio.abc.ReceiveStream
    send: trio.abc.SendStream
    if portable:
        receive, send = ThreadReceiveStream(in_fd), ThreadSendStream(out_fd)
    else:
        receive, send = trio.lowlevel.FdStream(in_fd), trio.lowlevel.FdStream(out_fd)
    stream = StdioMessageStream(
        receive,
        send,
        max_line_bytes=max_line_bytes,
        write_timeout=write_timeout,
    )
    try:
        yield stream
    finally:
        await stream.aclose()
        if saved is not None:
            try:
                sys.stdout.flush()
            except (OSError, ValueError):
                pass
            os.dup2(saved[0], 0)
            os.dup2(saved[1], 1)
            os.close(saved[0])
            os.close(saved[1])
            _point_child_std_handles()


if sys.platform == "win32":

    def _point_child_std_handles() -> None:
        """Windows: a child process started without explicit pipes inherits the Win32 standard handles, not
        the C runtime's fds 0 and 1; point those handles where the fds point now."""
        import ctypes
        import msvcrt

        kernel32 = ctypes.WinDLL("kernel32", use_last_error=True)
        for handle_id, fd in ((-10, 0), (-11, 1)):  # STD_INPUT_HANDLE, STD_OUTPUT_HANDLE
            kernel32.SetStdHandle(handle_id, msvcrt.get_osfhandle(fd))

else:

    def _point_child_std_handles() -> None:
        """POSIX: child processes inherit fds 0 and 1 themselves."""


class StdioProcess:
    """A server subprocess and the ``MessageStream`` over its pipes.

    Use ``await StdioProcess.start(nursery, command)``; the nursery runs the stderr drain. ``aclose()``
    shuts the process down in the spec's order and never leaves it (or its process group) running.
    """

    #: Seconds to wait after closing stdin, and after SIGTERM, before escalating.
    shutdown_grace = 2.0

    def __init__(
        self,
        process: trio.Process,
        *,
        stderr: StderrMode,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    ) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stdout = _ServerStdout(process.stdout)
        self.stream = StdioMessageStream(
            self._stdout,
            process.stdin,
            max_line_bytes=max_line_bytes,
            write_timeout=write_timeout,
            skip_unparseable=True,
            on_eof=self._describe_exit,
        )
        self._stderr_mode = stderr
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._stderr_done = trio.Event()
        self._closed = False

    @classmethod
    async def start(
        cls,
        nursery: trio.Nursery,
        command: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        stderr: StderrMode = "forward",
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        write_timeout: float = DEFAULT_WRITE_TIMEOUT,
    ) -> StdioProcess:
        """Spawn ``command`` and return it running; raises ``ConnectionClosed`` if it cannot be started."""
        check_stdio_options(command, env=env, cwd=cwd, stderr=stderr)
        argv = [os.fspath(part) for part in command]
        try:
            process = await trio.lowlevel.open_process(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                **group_spawn_options(),
            )
        except OSError as exc:
            raise ConnectionClosed(f"could not start server {argv[0]!r}", detail=str(exc)) from None
        assert process.stderr is not None
        self = cls(process, stderr=stderr, max_line_bytes=max_line_bytes, write_timeout=write_timeout)
        nursery.start_soon(self._drain_stderr, process.stderr)
        return self

    async def _drain_stderr(self, pipe: trio.abc.ReceiveStream) -> None:
        framer = LineFramer(64 * 1024)
        try:
            while True:
                item = framer.next_line()
                if item is NEED_DATA:
                    try:
                        framer.receive_data(await pipe.receive_some(_READ_CHUNK))
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        framer.receive_data(b"")
                    continue
                if item is END_OF_STREAM:
                    return
                line = "<overlong line>" if isinstance(item, OversizedLine) else bytes(item).decode("utf-8", "replace")  # type: ignore[arg-type]
                self._stderr_tail.append(line)
                mode = self._stderr_mode
                if mode == "forward":
                    try:
                        sys.stderr.write(line + "\n")
                        sys.stderr.flush()
                    except (OSError, ValueError):
                        pass
                elif mode != "capture":
                    assert callable(mode)
                    try:
                        mode(line)
                    except Exception:
                        logger.exception("stderr callback raised")
        finally:
            self._stderr_done.set()

    @property
    def stderr_tail(self) -> str:
        """The last lines the server wrote to stderr."""
        return "\n".join(self._stderr_tail)

    async def _describe_exit(self) -> ConnectionClosed:
        # A pipe hit EOF or broke: the process is exiting or has exited; give it a moment to be reaped.
        with trio.move_on_after(1.0):
            await self.process.wait()
        with trio.move_on_after(0.2):
            await self._stderr_done.wait()
        code = self.process.returncode
        status = "is still running but closed its pipes" if code is None else _describe_returncode(code)
        detail = f"server {status}"
        skipped = self.stream.first_skipped_line
        if self.stream.messages_received == 0 and skipped is not None:
            text = skipped.decode("utf-8", "replace")
            detail += f" having written no JSON-RPC to stdout, only lines like {text!r}: is it an MCP server?"
        tail = self.stderr_tail
        detail += f"; stderr tail:\n{tail}" if tail else ""
        return ConnectionClosed("server closed the connection", detail=detail)

    async def aclose(self, *, urgent: bool = False) -> None:
        """Close stdin, wait, SIGTERM the process group, wait, SIGKILL it (each wait ``shutdown_grace``; on
        Windows the process tree is ended at the first step that finds the server running).

        ``urgent`` (the caller was cancelled) waits ``URGENT_GRACE`` instead: cancelling means now.
        """
        if self._closed:
            return
        self._closed = True
        process = self.process
        grace = min(self.shutdown_grace, URGENT_GRACE) if urgent else self.shutdown_grace
        with trio.CancelScope(shield=True):
            await self.stream.aclose()  # closes stdin; stdout stays open (see _ServerStdout)
            async with trio.open_nursery() as nursery:
                nursery.start_soon(self._stdout.discard_until_closed)
                with trio.move_on_after(grace):
                    await process.wait()
                await end_group(process, grace=grace)
                nursery.cancel_scope.cancel()
            await self._stdout.pipe.aclose()
            with trio.move_on_after(0.5):
                await self._stderr_done.wait()
            if process.stderr is not None:
                await process.stderr.aclose()


def check_stdio_options(command: object, *, env: object = None, cwd: object = None, stderr: object = "forward") -> None:
    """Raise ``TypeError``/``ValueError`` naming the first invalid option of a stdio client, before spawning."""
    if isinstance(command, (str, bytes)):
        raise TypeError("command must be a sequence of arguments, not a string (no shell is used)")
    if not isinstance(command, Sequence) or not command:
        raise TypeError(f"command must be a non-empty sequence of arguments, not {command!r}")
    for part in command:
        if not isinstance(part, (str, os.PathLike)):
            raise TypeError(f"command arguments must be str or path-like, not {type(part).__name__}: {part!r}")
    if env is not None and (
        not isinstance(env, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
    ):
        raise TypeError("env must be a mapping of str to str, or None")
    if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
        raise TypeError(f"cwd must be a path or None, not {type(cwd).__name__}")
    if stderr not in ("forward", "capture") and not callable(stderr):
        raise ValueError(f"stderr must be 'forward', 'capture' or a function taking each line; got {stderr!r}")


class _ServerStdout(trio.abc.ReceiveStream):
    """A server's stdout as its session reads it.

    Closing it for the session leaves the pipe open: ``StdioProcess.aclose`` reads and discards whatever the
    server still writes until the process has exited (a Node server dies of EPIPE otherwise), then closes it.
    """

    def __init__(self, pipe: trio.abc.ReceiveStream) -> None:
        self.pipe = pipe
        self._reader_gone = trio.Event()
        self._reader_gone.set()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        gone = self._reader_gone = trio.Event()
        try:
            return await self.pipe.receive_some(max_bytes)
        finally:
            gone.set()

    async def aclose(self) -> None:
        await trio.lowlevel.checkpoint()

    async def discard_until_closed(self) -> None:
        """Read and drop output until end of stream (the caller cancels this once the process has exited)."""
        await self._reader_gone.wait()  # the session's reader, cancelled by now, leaves the pipe first
        try:
            while await self.pipe.receive_some(_READ_CHUNK):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.BusyResourceError, OSError):
            pass


def _describe_returncode(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with status {code}"
