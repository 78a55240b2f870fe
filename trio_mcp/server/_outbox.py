"""The notifications a connection sends outside any request: list changes, resource updates, log messages that
no request carries any more. They are queued, bounded, and delivered in order by one task, started with the
first of them (most connections never send one, and a stateless HTTP request then never pays for the task)."""

from __future__ import annotations

import collections
import logging
from collections.abc import Awaitable
from typing import Any, Final, Protocol

import trio

from .._core.jsonrpc import RequestId
from .._task_set import TaskSet
from ..errors import ConnectionClosed
from ..transports._base import notified_change

__all__ = ["Outbox", "Queued"]

logger = logging.getLogger("trio_mcp.server")

#: Notifications queued for delivery at once, at most: a client that does not read loses the rest (counted).
LIMIT: Final = 1024

Queued = tuple[str, dict[str, Any] | None, RequestId | None, bool, str | None]
"""(method, params, related request, whether it must wait for notifications/initialized, the change it tells
of: ``notified_change`` when it was queued)."""


class Send(Protocol):
    """How a notification goes to the client (``Session.notify``)."""

    def __call__(
        self, method: str, params: dict[str, Any] | None = None, *, related_request_id: RequestId | None = None
    ) -> Awaitable[None]: ...


class Outbox:
    """One connection's queue of notifications outside a request; see the module docstring."""

    __slots__ = ("_send", "_initialized", "_queue", "_ready", "_dropped", "_delivering")

    def __init__(self, send: Send, initialized: trio.Event) -> None:
        """``initialized`` is set once a legacy session's client said it is initialized: what must wait for it
        (``Queued``'s fourth item) waits."""
        self._send = send
        self._initialized = initialized
        self._queue: collections.deque[Queued] = collections.deque()
        self._ready = trio.Event()
        self._dropped = 0
        self._delivering = False

    def holds(self, method: str) -> bool:
        """Whether a notification of ``method`` related to no request is queued already (to coalesce)."""
        return any(queued[0] == method and queued[2] is None for queued in self._queue)

    def put(self, queued: Queued, tasks: trio.Nursery | TaskSet | None) -> None:
        """Queue ``queued``; the delivering task starts in ``tasks`` (None: with a later one, once there are)."""
        if len(self._queue) >= LIMIT:
            self._dropped += 1
            return
        self._queue.append(queued)
        self._ready.set()
        if not self._delivering and tasks is not None:
            self._delivering = True
            tasks.start_soon(self._deliver)

    async def _deliver(self) -> None:
        queue = self._queue
        while True:
            await self._ready.wait()
            self._ready = trio.Event()
            while queue:
                method, params, related, needs_initialized, change = queue.popleft()
                if needs_initialized:
                    # Nothing unsolicited goes to a legacy session before it said it is initialized.
                    await self._initialized.wait()
                told = notified_change.set(change)
                try:
                    await self._send(method, params, related_request_id=related)
                except ConnectionClosed:  # the session is closing; it ends this task too
                    return
                finally:
                    notified_change.reset(told)
            if self._dropped:
                logger.warning("dropped %d queued notifications: the client was not reading", self._dropped)
                self._dropped = 0
