"""Waiting for something to have happened, instead of sleeping long enough for it: a count of arrivals a test
can wait on, a tool that stays in flight until cancelled, and a bounded poll for what only shows from outside
(another process, a socket)."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import TypeVar, cast

import trio

from trio_mcp import Server

T = TypeVar("T")


class Arrivals:
    """How many times something happened (a handler entered, a request reached its server); a test waits for a
    number of them rather than sleeping until they must have happened."""

    def __init__(self) -> None:
        self.count = 0
        self._changed = trio.Event()

    def arrive(self) -> None:
        self.count += 1
        self._changed.set()
        self._changed = trio.Event()

    async def wait_for(self, count: int = 1) -> None:
        """Return once ``count`` arrivals have happened; the caller bounds the wait (``trio.fail_after``)."""
        while self.count < count:
            await self._changed.wait()


class HeldCalls:
    """A ``wait`` tool on a server that stays in flight until cancelled, for tests of what cancels a call: the calls
    that started, and those that were cancelled."""

    def __init__(self, server: Server) -> None:
        self.started = Arrivals()
        self.cancelled = Arrivals()

        @server.tool()
        async def wait() -> str:
            """Stay in flight until cancelled."""
            self.started.arrive()
            try:
                await trio.sleep_forever()
            finally:
                self.cancelled.arrive()


async def wait_until(condition: Callable[[], T | Awaitable[T]], *, within: float = 10.0, interval: float = 0.01) -> T:
    """Poll ``condition`` (a function, or an async one) until it holds, and return what it returned then (a
    record it fetched, say); ``trio.TooSlowError`` after ``within`` seconds. For what a test can only see from
    outside; anything in this process should arrive as an event."""
    with trio.fail_after(within):
        while True:
            held = condition()
            if inspect.isawaitable(held):
                held = await held
            if held:
                return cast(T, held)
            await trio.sleep(interval)


def task_count() -> int:
    """How many tasks this trio run has: a test compares it before and after to see that nothing was left
    running."""

    def count(task: trio.lowlevel.Task) -> int:
        return 1 + sum(count(child) for nursery in task.child_nurseries for child in nursery.child_tasks)

    return count(trio.lowlevel.current_root_task())
