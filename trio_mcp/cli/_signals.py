"""Ctrl-C as a trio user expects it: SIGINT cancels a scope, so everything unwinds through its ``finally``
blocks and the command exits 130 with no traceback.

Which scope matters. A command talking to a server cancels only the work in flight (the call), not the
connection: the connection's own tasks must stay alive to tell the server (``notifications/cancelled``) and to
shut it down in order. A second Ctrl-C then cancels the enclosing scope and stops waiting for that.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager

import trio

from ._exit import INTERRUPTED, OK

__all__ = ["Interrupts", "watch_interrupts", "until_interrupted", "until_stopped"]


class Interrupts:
    """Where SIGINT goes: the innermost scope opened with ``cancellable()``; ``fired`` says whether one came."""

    def __init__(self) -> None:
        self.fired = False
        self._scopes: list[trio.CancelScope] = []

    @contextmanager
    def cancellable(self) -> Iterator[trio.CancelScope]:
        """A scope that the next Ctrl-C cancels (unless a scope opened inside it is active then)."""
        with trio.CancelScope() as scope:
            self._scopes.append(scope)
            try:
                yield scope
            finally:
                self._scopes.remove(scope)

    def interrupt(self) -> None:
        self.fired = True
        for scope in reversed(self._scopes):
            if not scope.cancel_called:
                scope.cancel()
                return


async def _watch(interrupts: Interrupts, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        task_status.started()
        async for _ in signals:
            interrupts.interrupt()


@asynccontextmanager
async def watch_interrupts() -> AsyncIterator[Interrupts]:
    """Turn SIGINT into cancellation for the duration of the block (trio's default raises KeyboardInterrupt)."""
    interrupts = Interrupts()
    async with trio.open_nursery() as nursery:
        await nursery.start(_watch, interrupts)
        try:
            yield interrupts
        finally:
            nursery.cancel_scope.cancel()


async def until_interrupted(command: Callable[[], Awaitable[int]]) -> int:
    """Run ``command``; Ctrl-C cancels all of it and makes the status 130."""
    status = INTERRUPTED
    async with watch_interrupts() as interrupts:
        with interrupts.cancellable():
            status = await command()
    return INTERRUPTED if interrupts.fired else status


async def until_stopped(command: Callable[[], Awaitable[int]]) -> int:
    """``until_interrupted``, and SIGTERM cancels ``command`` too, with status 0: a supervisor of child processes
    stops as asked, ending them first rather than leaving them orphaned."""
    with trio.open_signal_receiver(signal.SIGTERM) as terminations:

        async def run() -> int:
            status = OK
            async with trio.open_nursery() as nursery:

                async def stop() -> None:
                    async for _ in terminations:
                        nursery.cancel_scope.cancel()

                nursery.start_soon(stop)
                status = await command()
                nursery.cancel_scope.cancel()
            return status

        return await until_interrupted(run)
