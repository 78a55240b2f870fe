"""A lifeline: how the processes that ``trio-mcp dev`` and ``trio-mcp run --reload`` start end when the command ends,
however it ends: Ctrl-C and SIGTERM end them in order, but SIGKILL or a crash runs no ``finally``.

The command holds the write end of a pipe, never writes to it and lets no other process inherit it, and gives each
child the read end as its stdin. Whatever ends the command, the operating system closes the write end, and the child
reads end-of-file: the same on Linux, macOS and Windows, with no process ids polled and nothing per platform.
A ``trio-mcp run`` child is told with the hidden option ``--lifeline`` and then stops serving, as on Ctrl-C, or exits
at once if that takes over ``GRACE_SECONDS`` (a handler blocking its event loop cannot keep it alive). A child
that cannot be told (the MCP Inspector, a Node program) runs under ``python -m trio_mcp.cli._lifeline COMMAND...``,
a keeper that ends the command, and every process it started, when the lifeline closes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType

import trio

from ..transports._process_tree import end_group
from ._exit import OK

__all__ = ["LIFELINE_OPTION", "Lifeline", "keeper_command", "while_lifeline_holds"]

#: The hidden ``trio-mcp run`` option: stdin is a lifeline; stop serving when it closes.
LIFELINE_OPTION = "--lifeline"
#: How long a child whose lifeline closed has to end in order: then a server exits at once, and a kept command (with
#: what it started) is killed.
GRACE_SECONDS = 5.0
#: The status of a server that had to exit at once (nothing reads it: whoever started the server is gone).
_FORCED = 1


class Lifeline:
    """The command's end of the pipe: ``child_stdin`` is what its children get as stdin; ``close()`` (or the
    command's end, however it comes) tells them; closing twice is closing once."""

    def __init__(self) -> None:
        self.child_stdin, self._held = os.pipe()  # both ends are non-inheritable: a child gets only what it is given
        self._closed = False

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self._held)
            os.close(self.child_stdin)

    def __enter__(self) -> Lifeline:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def _take_stdin() -> int:
    """The lifeline on stdin moved to a descriptor of its own, and stdin made empty, as it is without one: what
    the server's own code reads from stdin is never the lifeline."""
    lifeline = os.dup(0)
    empty = os.open(os.devnull, os.O_RDONLY)
    os.dup2(empty, 0)
    os.close(empty)
    return lifeline


def _read_to_end(lifeline: int) -> None:
    """Return once the lifeline's write end is closed: a blocking read in a thread, on every OS (under Windows trio
    waits only on sockets). The descriptor stays open until the process ends: a read is never interrupted."""
    while os.read(lifeline, 1):
        pass  # nothing is ever written; read on to the end of the pipe


def _watch(lifeline: int, token: trio.lowlevel.TrioToken, stop: Callable[[], None]) -> None:
    """A server's watch, in a thread of its own so that nothing the server does can hold it up: ``stop()`` once the
    lifeline closes, and exit at once if the process is still here ``GRACE_SECONDS`` later (a handler blocking the
    event loop, an import that never returns)."""
    _read_to_end(lifeline)
    try:
        token.run_sync_soon(stop)
    except trio.RunFinishedError:  # the command ended meanwhile
        return
    time.sleep(GRACE_SECONDS)
    os._exit(_FORCED)


async def while_lifeline_holds(command: Callable[[], Awaitable[int]]) -> int:
    """Run ``command`` (a ``trio-mcp run`` started with ``--lifeline``) and return its status; once the lifeline
    on stdin closes, cancel it, which ends the serving as Ctrl-C does, and return 0."""
    lifeline = _take_stdin()
    with trio.CancelScope() as serving:
        watch = (lifeline, trio.lowlevel.current_trio_token(), serving.cancel)
        threading.Thread(target=_watch, args=watch, name="trio-mcp lifeline", daemon=True).start()
        return await command()
    return OK


def keeper_command(command: Sequence[str]) -> list[str]:
    """``command`` run under a keeper: give the result a lifeline as stdin and a process group of its own."""
    return [sys.executable, "-m", __name__, *command]


async def _end_all(process: trio.Process) -> None:
    """End the kept command and what it started: asked, then made after ``GRACE_SECONDS``."""
    if sys.platform == "win32":
        await end_group(process, grace=GRACE_SECONDS)  # the command's process tree, with taskkill
        return
    os.killpg(0, signal.SIGTERM)  # this keeper's group: it holds the command and everything the command started
    with trio.move_on_after(GRACE_SECONDS):
        await process.wait()
    os.killpg(0, signal.SIGKILL)  # whatever is left, this keeper included: nothing waits for it any more


async def _keep(command: Sequence[str]) -> int:
    lifeline = _take_stdin()
    # SIGTERM comes to the whole group when the process that started the keeper ends it in order: the command is
    # told as well, and the keeper waits for it, so that the group is ended (or killed) with the command in it.
    with trio.open_signal_receiver(signal.SIGTERM) as terminations:
        process = await trio.lowlevel.open_process(list(command), stdin=subprocess.DEVNULL)
        async with trio.open_nursery() as nursery:

            async def drain() -> None:
                async for _ in terminations:
                    pass

            async def watch() -> None:
                await trio.to_thread.run_sync(_read_to_end, lifeline, abandon_on_cancel=True)
                with trio.CancelScope(shield=True):  # the command exiting on the way does not stop the ending
                    await _end_all(process)

            nursery.start_soon(drain)
            nursery.start_soon(watch)
            await process.wait()
            nursery.cancel_scope.cancel()
    status = await process.wait()
    return status if status >= 0 else 128 - status  # killed by a signal: 128 + its number, as shells report it


def _main(command: Sequence[str]) -> int:
    if not command:
        print("usage: python -m trio_mcp.cli._lifeline COMMAND [ARGUMENT...] (stdin: the lifeline)", file=sys.stderr)
        return 2
    if sys.platform != "win32" and os.getpgrp() != os.getpid():
        os.setsid()  # a group of its own, which _end_all may signal whole
    return trio.run(_keep, command)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
