"""Concurrency limits: at most ``limit`` requests of one key served at once, the next few waiting their turn."""

from __future__ import annotations

import collections
import math
from collections.abc import Collection, Sequence
from typing import Any

import trio

from .._middleware import CallNext, RequestInfo
from ..errors import SERVER_BUSY, McpError
from ._caller import applies, check_per, check_tools, key_of, target

__all__ = ["ConcurrencyLimit"]


class _Slots:
    """One key's requests being served, and those waiting (first come, first served) for a slot."""

    __slots__ = ("active", "waiting")

    def __init__(self) -> None:
        self.active = 0
        self.waiting: collections.deque[trio.Event] = collections.deque()


class ConcurrencyLimit:
    """Middleware serving at most ``limit`` requests per key at once (in this process).

    ``per`` and ``tools`` are those of ``RateLimit``. A request beyond the limit waits, first come first
    served, while fewer than ``queue`` wait already and for at most ``queue_timeout`` seconds; otherwise it is
    refused with ``SERVER_BUSY`` (-32010). ``queue=0`` refuses at once. A waiting request the client cancels
    leaves the queue.
    """

    def __init__(
        self,
        limit: int,
        *,
        per: Sequence[str] = ("principal",),
        tools: Collection[str] | None = None,
        queue: int = 0,
        queue_timeout: float = 30.0,
    ) -> None:
        for name, value in (("limit", limit), ("queue", queue)):
            if isinstance(value, bool) or not isinstance(value, int) or value < (1 if name == "limit" else 0):
                raise ValueError(f"{name} must be a whole number, {1 if name == 'limit' else 0} or more, not {value!r}")
        if isinstance(queue_timeout, bool) or not isinstance(queue_timeout, (int, float)) or not queue_timeout > 0:
            raise ValueError(f"queue_timeout must be a number of seconds above 0, not {queue_timeout!r}")
        self.limit = limit
        self.queue = queue
        self.queue_timeout = float(queue_timeout)
        self.per = check_per(per)
        self.tools = check_tools(tools)
        self._slots: dict[str, _Slots] = {}

    async def __call__(self, call: RequestInfo, call_next: CallNext) -> Any:
        if not applies(call, self.tools):
            return await call_next()
        key = key_of(call, self.per)
        slots = self._slots.get(key)
        if slots is None:
            slots = self._slots[key] = _Slots()
        if slots.active < self.limit:
            slots.active += 1
        else:
            await self._wait_turn(key, slots, call)
        try:
            return await call_next()
        finally:
            self._release(key, slots)

    def _release(self, key: str, slots: _Slots) -> None:
        if slots.waiting:
            slots.waiting.popleft().set()  # the slot passes to the first in line
        else:
            slots.active -= 1
            if not slots.active:
                del self._slots[key]

    async def _wait_turn(self, key: str, slots: _Slots, call: RequestInfo) -> None:
        """Wait in line for a slot (handed over by the request leaving it); refuse when the line is full or
        the wait too long."""
        what = target(call) or call.method
        if len(slots.waiting) >= self.queue:
            raise McpError(SERVER_BUSY, f"Too many concurrent requests for {what}: {self.limit} being served")
        turn = trio.Event()
        slots.waiting.append(turn)
        try:
            with trio.move_on_after(self.queue_timeout):
                await turn.wait()
        except BaseException:
            if turn.is_set():
                self._release(key, slots)  # handed a slot as it was cancelled: on to the next in line
            else:
                slots.waiting.remove(turn)
            raise
        if not turn.is_set():
            slots.waiting.remove(turn)  # timed out: out of the line
            waited = math.ceil(self.queue_timeout * 10) / 10
            raise McpError(
                SERVER_BUSY,
                f"Too many concurrent requests for {what}: still {self.limit} being served after {waited:g} s",
            )
